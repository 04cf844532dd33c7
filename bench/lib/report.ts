/**
 * Shared helpers for the benchmarks under `bench/`: latency percentiles, the machine line and a
 * Markdown row in the format of `bench/RESULTS.md`.
 */
import { cpus, totalmem } from 'node:os'

/**
 * The p-th percentile (nearest-rank) of `samples`.
 *
 * @param samples Values in any order (for example latencies in milliseconds); not modified.
 * @param p Percentile from 0 to 100.
 * @returns The value, or `NaN` for an empty sample.
 */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)))
  return sorted[rank - 1] ?? Number.NaN
}

/** One line that says what the figures were measured on: CPU, cores, memory, Node. */
export function machineInfo(): string {
  const list = cpus()
  const model = list[0]?.model.trim() ?? 'unknown CPU'
  const gib = Math.round(totalmem() / 2 ** 30)
  return `${model}, ${String(list.length)} cores, ${String(gib)} GiB, Node ${process.version}`
}

/** A result row: a figure next to the baseline measured in the same run. */
export interface ResultRow {
  /** What was measured, e.g. `gRPC decisions/s, c=200`. */
  figure: string
  /** The figure's value. */
  value: number
  /** What the baseline is, e.g. `raw ioredis pipeline`. */
  baseline: string
  /** The baseline's value, same unit as `value`. */
  baselineValue: number
  /** Unit, e.g. `req/s` or `ms`. */
  unit: string
}

/** `value / baselineValue` as a percentage with no decimals, e.g. `63%`. */
export function ratio(value: number, baselineValue: number): string {
  return `${String(Math.round((value / baselineValue) * 100))}%`
}

/** Formats rows as the Markdown table used in `bench/RESULTS.md`. */
export function markdownTable(rows: readonly ResultRow[]): string {
  const fmt = (n: number): string =>
    n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toPrecision(3)
  const lines = [
    '| figure | value | baseline | baseline value | ratio |',
    '| --- | ---: | --- | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.figure} | ${fmt(r.value)} ${r.unit} | ${r.baseline} | ${fmt(r.baselineValue)} ${r.unit} | ${ratio(r.value, r.baselineValue)} |`,
    ),
  ]
  return lines.join('\n')
}
