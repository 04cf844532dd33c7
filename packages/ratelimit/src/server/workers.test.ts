import { EventEmitter } from 'node:events'
import { describe, expect, it, vi } from 'vitest'
import type { FlushedStat } from '../stats/store.js'
import {
  clusterStatsSource,
  PrimaryForwardingSink,
  printWorkerStats,
  serveClusterStats,
  sumStats,
  workerExitVerdict,
  type PrimaryCluster,
  type StatEntry,
  type WorkerChannel,
  type WorkerExit,
  type WorkerProcess,
} from './workers.js'

const base: WorkerExit = {
  stopping: false,
  stopSignal: undefined,
  serving: true,
  code: 1,
  signal: null,
}

describe('workerExitVerdict', () => {
  it('restarts a worker that died while serving', () => {
    expect(workerExitVerdict(base)).toEqual({ action: 'restart', failed: false })
    expect(workerExitVerdict({ ...base, code: null, signal: 'SIGKILL' })).toEqual({
      action: 'restart',
      failed: false,
    })
  })

  it('stops everything, failed, when a worker dies before serving', () => {
    expect(workerExitVerdict({ ...base, serving: false })).toEqual({ action: 'stop', failed: true })
  })

  it('counts a worker that exits 0 while stopping as clean', () => {
    expect(workerExitVerdict({ ...base, stopping: true, stopSignal: 'SIGTERM', code: 0 })).toEqual({
      action: 'drained',
      failed: false,
    })
  })

  it('counts a worker still starting, ended by the forwarded signal, as clean', () => {
    const exit = {
      ...base,
      stopping: true,
      stopSignal: 'SIGTERM' as const,
      serving: false,
      code: null,
      signal: 'SIGTERM' as const,
    }
    expect(workerExitVerdict(exit)).toEqual({ action: 'drained', failed: false })
  })

  it('counts any other end while stopping as a failure', () => {
    const stopping = { ...base, stopping: true, stopSignal: 'SIGTERM' as const }
    expect(workerExitVerdict({ ...stopping, code: 1 }).failed).toBe(true)
    expect(workerExitVerdict({ ...stopping, code: null, signal: 'SIGSEGV' }).failed).toBe(true)
  })
})

describe('the /stats sum over workers', () => {
  /** A fake cluster: workers that answer the primary's requests through `reply`. */
  function fakeCluster(reply: Record<number, StatEntry[] | 'silent'>) {
    const primary = new EventEmitter()
    const sent: { to: number; message: unknown }[] = []
    const workers: Record<number, WorkerChannel> = {}
    for (const id of Object.keys(reply).map(Number)) {
      workers[id] = {
        id,
        isConnected: () => true,
        send: (message) => {
          sent.push({ to: id, message })
          const listing = reply[id]
          if ('round' in message && listing !== 'silent' && listing !== undefined) {
            queueMicrotask(() =>
              primary.emit('message', workers[id], {
                gatehouseStats: 'listing',
                round: message.round,
                stats: listing,
              }),
            )
          }
          return true
        },
      }
    }
    const cluster = Object.assign(primary, { workers }) as unknown as PrimaryCluster
    return { primary, workers, sent, cluster }
  }
  const result = (sent: { to: number; message: unknown }[]) =>
    sent.find((s) => (s.message as { gatehouseStats: string }).gatehouseStats === 'result')

  it('sums counters and gauges by name, sorted', () => {
    expect(
      sumStats([
        [
          { name: 'b', type: 'counter', value: 1 },
          { name: 'a', type: 'gauge', value: 2 },
        ],
        [{ name: 'b', type: 'counter', value: 3 }],
      ]),
    ).toEqual([
      { name: 'a', type: 'gauge', value: 2 },
      { name: 'b', type: 'counter', value: 4 },
    ])
  })

  it('answers the asking worker with the sum of every worker', async () => {
    const { primary, workers, sent, cluster } = fakeCluster({
      1: [{ name: 'x', type: 'counter', value: 1 }],
      2: [{ name: 'x', type: 'counter', value: 2 }],
    })
    serveClusterStats(cluster, 1000)
    primary.emit('message', workers[1], { gatehouseStats: 'collect', id: 7 })
    await vi.waitFor(() => {
      expect(result(sent)).toEqual({
        to: 1,
        message: {
          gatehouseStats: 'result',
          id: 7,
          stats: [{ name: 'x', type: 'counter', value: 3 }],
        },
      })
    })
  })

  it('does not wait for a worker that exits, nor past the timeout for a silent one', async () => {
    vi.useFakeTimers()
    try {
      const { primary, workers, sent, cluster } = fakeCluster({
        1: [{ name: 'x', type: 'counter', value: 1 }],
        2: 'silent',
        3: 'silent',
      })
      serveClusterStats(cluster, 1000)
      primary.emit('message', workers[1], { gatehouseStats: 'collect', id: 1 })
      await vi.advanceTimersByTimeAsync(0)
      primary.emit('exit', workers[2])
      expect(result(sent)).toBeUndefined() // worker 3 may still answer
      await vi.advanceTimersByTimeAsync(1000)
      expect(result(sent)?.message).toMatchObject({ stats: [{ name: 'x', value: 1 }] })
    } finally {
      vi.useRealTimers()
    }
  })

  it('worker side: answers the primary with its listing and asks for the sum', async () => {
    const proc = new EventEmitter() as EventEmitter & WorkerProcess
    const sent: unknown[] = []
    proc.send = (message) => {
      sent.push(message)
      if (message.gatehouseStats === 'collect') {
        queueMicrotask(() =>
          proc.emit('message', { gatehouseStats: 'result', id: message.id, stats: [] }),
        )
      }
      return true
    }
    const listing = [{ name: 'x', type: 'counter' as const, value: 5 }]
    const source = clusterStatsSource(proc, () => listing, 1000)
    proc.emit('message', { gatehouseStats: 'ask', round: 4 })
    expect(sent).toContainEqual({ gatehouseStats: 'listing', round: 4, stats: listing })
    await expect(source()).resolves.toEqual([])
    proc.send = () => true // a primary that never answers
    vi.useFakeTimers()
    try {
      const pending = source()
      const check = expect(pending).rejects.toThrow(/did not answer/)
      await vi.advanceTimersByTimeAsync(1000)
      await check
    } finally {
      vi.useRealTimers()
    }
  })
})

describe('the standard-output stats of several workers', () => {
  it('prints one flush per interval: counters summed, gauges summed over live workers, every timer sample', () => {
    vi.useFakeTimers()
    try {
      const primary = new EventEmitter()
      const cluster = primary as unknown as PrimaryCluster
      const flushes: (readonly FlushedStat[])[] = []
      printWorkerStats(
        cluster,
        { flush: (stats) => flushes.push(stats), close: async () => {} },
        1000,
      )
      const forward = (id: number) =>
        new PrimaryForwardingSink({
          send: (message) => primary.emit('message', { id }, message),
        })
      forward(1).flush([
        { name: 'hits', type: 'counter', value: 2 },
        { name: 'keys', type: 'gauge', value: 10 },
        { name: 'ms', type: 'timer', value: 3, sampleRate: 1 },
      ])
      forward(2).flush([
        { name: 'hits', type: 'counter', value: 5 },
        { name: 'keys', type: 'gauge', value: 7 },
      ])
      vi.advanceTimersByTime(1000)
      expect(flushes).toEqual([
        [
          { name: 'hits', type: 'counter', value: 7 },
          { name: 'keys', type: 'gauge', value: 17 },
          { name: 'ms', type: 'timer', value: 3, sampleRate: 1 },
        ],
      ])
      // Counters are deltas: nothing new, nothing printed; a worker gone no longer counts in gauges.
      primary.emit('exit', { id: 2 })
      vi.advanceTimersByTime(1000)
      expect(flushes[1]).toEqual([{ name: 'keys', type: 'gauge', value: 10 }])
    } finally {
      vi.useRealTimers()
    }
  })
})
