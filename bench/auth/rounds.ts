/**
 * Alternating rounds of a figure and its baseline, as both auth benchmarks measure them: each
 * round runs one baseline slice and then one figure slice, so that both see the same background
 * load on a shared machine.
 */
import { loadavg } from 'node:os'
import { ratio } from '../lib/report.js'
import type { LoadResult } from './load.js'

/** Totals of one figure or baseline over all rounds. */
export interface Series {
  ok: number
  /** Seconds measured in all (slices × slice length). */
  seconds: number
  /** Requests per second of each round. */
  rounds: number[]
  failed: number
  firstError?: string
  /** Operations counted while CPU was measured, and the CPU milliseconds of each probe. */
  cpu: { ops: number; ms: Record<string, number> }
}

/** Both series of a comparison, and the 1-minute load average at the start of each round. */
export interface Comparison {
  readonly figure: Series
  readonly baseline: Series
  readonly loads: number[]
}

const empty = (): Series => ({ ok: 0, seconds: 0, rounds: [], failed: 0, cpu: { ops: 0, ms: {} } })

function add(series: Series, r: LoadResult, sliceMs: number): void {
  series.ok += r.ok
  series.seconds += sliceMs / 1000
  series.rounds.push(r.rate)
  series.failed += r.failed
  if (r.firstError !== undefined) series.firstError ??= r.firstError
  if (r.cpuMs) {
    series.cpu.ops += r.ok
    for (const [name, ms] of Object.entries(r.cpuMs)) {
      series.cpu.ms[name] = (series.cpu.ms[name] ?? 0) + ms
    }
  }
}

/**
 * Runs `rounds` rounds of `baseline` then `figure`, printing each round's ratio and any failures.
 *
 * @throws {Error} When an operation of either failed (after printing the rounds): such a rate
 *   measures the failures, not the figure.
 *
 * @param sliceMs Length of one slice in milliseconds (for the totals' rates).
 * @param names How the two are called in the printed lines.
 */
export async function compareRounds(
  label: string,
  baseline: () => Promise<LoadResult>,
  figure: () => Promise<LoadResult>,
  options: {
    readonly rounds: number
    readonly sliceMs: number
    readonly names?: { readonly figure: string; readonly baseline: string }
  },
): Promise<Comparison> {
  const names = options.names ?? { figure: 'figure', baseline: 'baseline' }
  const result: Comparison = { figure: empty(), baseline: empty(), loads: [] }
  for (let round = 0; round < options.rounds; round++) {
    result.loads.push(loadavg()[0] ?? 0)
    add(result.baseline, await baseline(), options.sliceMs)
    add(result.figure, await figure(), options.sliceMs)
    const b = result.baseline.rounds[round] ?? 0
    const f = result.figure.rounds[round] ?? 0
    console.log(
      `${label} round ${String(round + 1)}: ${f.toFixed(0)}/s ${names.figure} vs ${b.toFixed(0)}/s ${names.baseline} = ${ratio(f, b)} (load ${(loadavg()[0] ?? 0).toFixed(1)})`,
    )
  }
  for (const [name, s] of [
    [names.figure, result.figure],
    [names.baseline, result.baseline],
  ] as const) {
    if (s.failed > 0)
      console.log(`  ${label} ${name}: ${String(s.failed)} failed (${s.firstError ?? ''})`)
    if (s.cpu.ops > 0) console.log(`  ${label} ${name} CPU per operation: ${cpuPerOp(s)}`)
  }
  for (const s of [result.figure, result.baseline]) {
    if (s.failed > 0) {
      // A rate with failed operations in it is no measurement of the figure.
      throw new Error(
        `${label}: ${String(s.failed)} operations failed (first: ${s.firstError ?? 'unknown'})`,
      )
    }
  }
  return result
}

/**
 * CPU microseconds per operation of each probe and in all, e.g.
 * `server 180 µs + postgres 160 µs = 340 µs`.
 */
export function cpuPerOp(s: Series): string {
  const parts = Object.entries(s.cpu.ms).map(([name, ms]) => ({
    name,
    us: (ms * 1000) / s.cpu.ops,
  }))
  const total = parts.reduce((sum, p) => sum + p.us, 0)
  return `${parts.map((p) => `${p.name} ${p.us.toFixed(0)} µs`).join(' + ')} = ${total.toFixed(0)} µs`
}

/** Requests per second over all rounds of a series. */
export function rate(s: Series): number {
  return s.ok / s.seconds
}

/** The lowest and highest ratio of a single round, e.g. `51%–55%`. */
export function spread(c: Pick<Comparison, 'figure' | 'baseline'>): string {
  const ratios = c.figure.rounds.map((f, i) => f / (c.baseline.rounds[i] ?? Number.NaN))
  const pct = (x: number): string => `${String(Math.round(x * 100))}%`
  return `${pct(Math.min(...ratios))}–${pct(Math.max(...ratios))}`
}
