/**
 * What the primary process does with its `RATELIMIT_WORKERS` workers, written against small
 * interfaces of node:cluster so that every case is tested without forking: the verdict when one
 * exits, the `/stats` sum over all of them, and the one standard-output stats flush for all of
 * them (each worker would otherwise print its own lines).
 *
 * @module
 */
import type { FlushedStat, StatsSink } from '../stats/store.js'

/** How a worker ended and what the primary knew about it. */
export interface WorkerExit {
  /** The primary is stopping (it forwarded `stopSignal` to every worker). */
  stopping: boolean
  /** The signal the primary forwarded, when stopping. */
  stopSignal: NodeJS.Signals | undefined
  /** The worker had bound all its listeners (it sent "ready"). */
  serving: boolean
  /** Exit code, `null` when a signal ended it. */
  code: number | null
  /** Signal that ended it, `null` when it exited. */
  signal: NodeJS.Signals | null
}

/**
 * The verdict on a worker's exit:
 * - `restart`: it died while serving; start another.
 * - `stop`: it died before serving (it cannot start, restarting would loop); stop them all, failed.
 * - `drained`: the primary is stopping; `failed` unless it exited 0 or was ended by the very signal
 *   the primary forwarded (a worker still starting has no handler yet and dies of that signal,
 *   which is a clean stop, not a failure).
 */
export function workerExitVerdict(exit: WorkerExit): {
  action: 'restart' | 'stop' | 'drained'
  failed: boolean
} {
  if (!exit.stopping) {
    return exit.serving ? { action: 'restart', failed: false } : { action: 'stop', failed: true }
  }
  const clean = exit.code === 0 || (exit.code === null && exit.signal === exit.stopSignal)
  return { action: 'drained', failed: !clean }
}

/** One counter or gauge of a `/stats` listing. */
export interface StatEntry {
  readonly name: string
  readonly type: 'counter' | 'gauge'
  readonly value: number
}

/**
 * Sums the `/stats` listings of several workers, name by name (counters and gauges alike: a
 * gauge such as a cache's entry count is per process too), sorted by name.
 */
export function sumStats(listings: readonly (readonly StatEntry[])[]): StatEntry[] {
  const sums = new Map<string, StatEntry>()
  for (const listing of listings) {
    for (const s of listing) {
      const seen = sums.get(s.name)
      sums.set(s.name, seen === undefined ? s : { ...seen, value: seen.value + s.value })
    }
  }
  return [...sums.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

/** Messages of the `/stats` exchange between workers and the primary (cluster IPC). */
type StatsMessage =
  | { readonly gatehouseStats: 'flush'; readonly stats: readonly FlushedStat[] }
  | { readonly gatehouseStats: 'collect'; readonly id: number }
  | { readonly gatehouseStats: 'ask'; readonly round: number }
  | { readonly gatehouseStats: 'listing'; readonly round: number; readonly stats: StatEntry[] }
  | { readonly gatehouseStats: 'result'; readonly id: number; readonly stats: StatEntry[] }

function isStatsMessage(message: unknown): message is StatsMessage {
  return typeof message === 'object' && message !== null && 'gatehouseStats' in message
}

/** The part of a cluster worker the primary talks to (node:cluster's `Worker`). */
export interface WorkerChannel {
  readonly id: number
  send(message: StatsMessage): boolean
  isConnected(): boolean
}

/** The part of node:cluster the primary uses. */
export interface PrimaryCluster {
  readonly workers?: NodeJS.Dict<WorkerChannel>
  on(event: 'message', listener: (worker: WorkerChannel, message: unknown) => void): unknown
  on(event: 'exit', listener: (worker: WorkerChannel) => void): unknown
}

/** Most `/stats` collections the primary runs at once; more are answered with its partial sum. */
const MAX_ROUNDS = 16

/**
 * Primary side of the `/stats` sum: when a worker asks (`collect`), asks every live worker for
 * its listing and answers the asking worker with the sum of those that arrive within
 * `timeoutMs`; a worker that exits meanwhile is not waited for.
 */
export function serveClusterStats(cluster: PrimaryCluster, timeoutMs = 1000): void {
  let next = 0
  const rounds = new Map<
    number,
    { waiting: Set<number>; listings: StatEntry[][]; finish: () => void }
  >()
  cluster.on('message', (worker, message) => {
    if (!isStatsMessage(message)) return
    if (message.gatehouseStats === 'listing') {
      const round = rounds.get(message.round)
      if (round === undefined || !round.waiting.delete(worker.id)) return
      round.listings.push(message.stats)
      if (round.waiting.size === 0) round.finish()
      return
    }
    if (message.gatehouseStats !== 'collect') return
    const id = message.id
    const live = Object.values(cluster.workers ?? {}).filter(
      (w): w is WorkerChannel => w !== undefined && w.isConnected(),
    )
    const roundId = next++
    const round = {
      waiting: new Set(live.map((w) => w.id)),
      listings: [] as StatEntry[][],
      finish: () => {
        clearTimeout(timer)
        rounds.delete(roundId)
        if (worker.isConnected()) {
          worker.send({ gatehouseStats: 'result', id, stats: sumStats(round.listings) })
        }
      },
    }
    const timer = setTimeout(round.finish, timeoutMs)
    if (rounds.size >= MAX_ROUNDS) {
      round.finish()
      return
    }
    rounds.set(roundId, round)
    if (live.length === 0) round.finish()
    for (const w of live) w.send({ gatehouseStats: 'ask', round: roundId })
  })
  cluster.on('exit', (worker) => {
    for (const round of rounds.values()) {
      if (round.waiting.delete(worker.id) && round.waiting.size === 0) round.finish()
    }
  })
}

/** The part of `process` a worker uses for IPC. */
export interface WorkerProcess {
  send?: (message: StatsMessage) => boolean
  on(event: 'message', listener: (message: unknown) => void): unknown
  off(event: 'message', listener: (message: unknown) => void): unknown
}

/**
 * Worker side of the `/stats` sum: answers the primary's requests with `listing()`, and returns
 * the function `/stats` calls, which asks the primary for the sum over all workers.
 *
 * @param timeoutMs How long to wait for the primary before failing. @default 3000
 * @returns Resolves with the summed listing; rejects when the primary does not answer in time.
 */
export function clusterStatsSource(
  proc: WorkerProcess,
  listing: () => StatEntry[],
  timeoutMs = 3000,
): () => Promise<StatEntry[]> {
  proc.on('message', (message) => {
    if (isStatsMessage(message) && message.gatehouseStats === 'ask') {
      proc.send?.({ gatehouseStats: 'listing', round: message.round, stats: listing() })
    }
  })
  let next = 0
  return () =>
    new Promise((resolve, reject) => {
      const id = next++
      const onMessage = (message: unknown): void => {
        if (isStatsMessage(message) && message.gatehouseStats === 'result' && message.id === id) {
          done()
          resolve(message.stats)
        }
      }
      const done = (): void => {
        clearTimeout(timer)
        proc.off('message', onMessage)
      }
      const timer = setTimeout(() => {
        done()
        reject(new Error('the primary process did not answer with the workers’ stats'))
      }, timeoutMs)
      proc.on('message', onMessage)
      if (proc.send?.({ gatehouseStats: 'collect', id }) !== true) {
        done()
        reject(new Error('no channel to the primary process'))
      }
    })
}

/**
 * Worker side of the one standard-output stats flush: a sink that hands each flush to the
 * primary ({@link printWorkerStats}) instead of printing it.
 */
export class PrimaryForwardingSink implements StatsSink {
  readonly #proc: Pick<WorkerProcess, 'send'>

  constructor(proc: Pick<WorkerProcess, 'send'>) {
    this.#proc = proc
  }

  /** {@inheritDoc StatsSink.flush} */
  flush(stats: readonly FlushedStat[]): void {
    this.#proc.send?.({ gatehouseStats: 'flush', stats })
  }

  /** {@inheritDoc StatsSink.close} */
  close(): Promise<void> {
    return Promise.resolve()
  }
}

/**
 * Primary side of the one standard-output stats flush: gathers the workers' flushes
 * ({@link PrimaryForwardingSink}) and every `intervalMs` hands `sink` one flush for all of them,
 * as a single process would: counter deltas summed by name, each gauge summed over the live
 * workers' latest values, every timer sample.
 *
 * @returns `flush()`, to send what is pending now (before the primary exits).
 */
export function printWorkerStats(
  cluster: PrimaryCluster,
  sink: StatsSink,
  intervalMs: number,
): { flush(): void } {
  const counters = new Map<string, number>()
  const gauges = new Map<number, Map<string, number>>()
  let timers: FlushedStat[] = []
  cluster.on('message', (worker, message) => {
    if (!isStatsMessage(message) || message.gatehouseStats !== 'flush') return
    const latest = new Map<string, number>()
    for (const stat of message.stats) {
      if (stat.type === 'counter')
        counters.set(stat.name, (counters.get(stat.name) ?? 0) + stat.value)
      else if (stat.type === 'gauge') latest.set(stat.name, stat.value)
      else timers.push(stat)
    }
    gauges.set(worker.id, latest)
  })
  cluster.on('exit', (worker) => {
    gauges.delete(worker.id)
  })
  const flush = (): void => {
    const summed = new Map<string, number>()
    for (const latest of gauges.values()) {
      for (const [name, value] of latest) summed.set(name, (summed.get(name) ?? 0) + value)
    }
    const stats: FlushedStat[] = [
      ...[...counters].map(([name, value]) => ({ name, type: 'counter' as const, value })),
      ...[...summed].map(([name, value]) => ({ name, type: 'gauge' as const, value })),
      ...timers,
    ]
    counters.clear()
    timers = []
    sink.flush(stats)
  }
  setInterval(flush, intervalMs).unref()
  return { flush }
}
