/**
 * Resident memory of the benchmarked servers, read from Linux's `/proc/<pid>/status` (`VmRSS`):
 * once while idle and as the peak of readings taken while they are loaded, for the tables of the
 * benchmarks' reports.
 */
import { readFileSync } from 'node:fs'
import { processTree } from './cpu.js'

/**
 * Resident set size of a process, in KiB (`VmRSS` of `/proc/<pid>/status`).
 *
 * @returns 0 when the process does not exist (any more).
 */
export function rssKiB(pid: number | 'self'): number {
  try {
    const status = readFileSync(`/proc/${String(pid)}/status`, 'utf8')
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0)
  } catch {
    return 0
  }
}

/** Resident set size of a process and all its living descendants (such as workers), in KiB. */
export function treeRssKiB(pid: number): number {
  return processTree(pid).reduce((sum, member) => sum + rssKiB(member), 0)
}

/** Named memory readings, each a function returning KiB (such as `() => rssKiB(pid)`). */
export type MemoryProbes = Readonly<Record<string, () => number>>

/** Idle and peak-under-load resident memory of one process (or process tree), in KiB. */
export interface MemoryRow {
  readonly name: string
  readonly idleKiB: number
  readonly loadedKiB: number
}

/**
 * Reads every probe now (idle) and then every `intervalMs` until `stop()`, which returns each
 * probe's idle reading and its highest one since. Start it when the servers are up and before the
 * load; stop it when the measured slices are over. A load generator run synchronously (`wrk`
 * through `execFileSync`) blocks the timer: call `sample()` at the end of each such slice.
 */
export function startMemorySampler(
  probes: MemoryProbes,
  intervalMs = 250,
): { sample(): void; stop(): MemoryRow[] } {
  const idle = Object.fromEntries(Object.entries(probes).map(([name, read]) => [name, read()]))
  const peak = { ...idle }
  const sample = (): void => {
    for (const [name, read] of Object.entries(probes)) {
      peak[name] = Math.max(peak[name] ?? 0, read())
    }
  }
  const timer = setInterval(sample, intervalMs)
  timer.unref()
  return {
    sample,
    stop: () => {
      clearInterval(timer)
      return Object.keys(probes).map((name) => ({
        name,
        idleKiB: idle[name] ?? 0,
        loadedKiB: peak[name] ?? 0,
      }))
    },
  }
}

/** Formats memory rows as a Markdown table: process, RSS idle, RSS under load (peak). */
export function memoryTable(rows: readonly MemoryRow[]): string {
  const mib = (kib: number): string => `${(kib / 1024).toFixed(1)} MiB`
  return [
    '| process | RSS idle | RSS under load (peak) |',
    '| --- | ---: | ---: |',
    ...rows.map((r) => `| ${r.name} | ${mib(r.idleKiB)} | ${mib(r.loadedKiB)} |`),
  ].join('\n')
}
