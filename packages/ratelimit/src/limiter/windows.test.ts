/**
 * Several windows per rule (issue 32) in the limiter: one round trip for every window of a
 * request, the deciding window, `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT` and the local cache per
 * window, and the key of each window.
 */
import { FakeClock } from '@gatehouse/testing'
import { describe, expect, it } from 'vitest'
import { RateLimitConfig, type RateLimit } from '../config/config.js'
import { MemoryCounterStore } from '../memory/memory-store.js'
import type { RateLimitRequest } from '../protocol/types.js'
import { StatsManager } from '../stats/manager.js'
import { StatsStore } from '../stats/store.js'
import type { IncrementOp, ReadOp, TakeOp } from './cache.js'
import { LocalCache } from './local-cache.js'
import { StoreRateLimitCache } from './store-cache.js'

const NOW = Date.UTC(2026, 0, 1, 0, 0, 0)

/** A memory store that records each call and how many were in flight together. */
class RecordingStore extends MemoryCounterStore {
  readonly calls: string[] = []
  inFlight = 0
  maxInFlight = 0
  #track<T>(name: string, run: () => Promise<T>): Promise<T> {
    this.calls.push(name)
    this.inFlight++
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight)
    return run().finally(() => {
      this.inFlight--
    })
  }
  override increment(ops: readonly IncrementOp[]): Promise<number[]> {
    return this.#track(
      `increment ${ops.map((o) => `${o.key}+${String(o.addend)}`).join(' ')}`,
      () => super.increment(ops),
    )
  }
  override take(ops: readonly TakeOp[]) {
    return this.#track(`take ${ops.map((o) => o.key).join(' ')}`, () => super.take(ops))
  }
  override get(ops: readonly ReadOp[]): Promise<number[]> {
    return this.#track(`get ${ops.map((o) => o.key).join(' ')}`, () => super.get(ops))
  }
}

function setup(rateLimit: string, options: { stop?: boolean; localCache?: boolean } = {}) {
  const clock = new FakeClock(NOW)
  const store = new RecordingStore({ clock, sweepIntervalMs: 0 })
  const stats = new StatsStore()
  const config = RateLimitConfig.load(
    [
      {
        name: 'w.yaml',
        content: `domain: d\ndescriptors:\n  - key: k\n    rate_limit: ${rateLimit}\n`,
      },
    ],
    { stats: new StatsManager(stats) },
  )
  const cache = new StoreRateLimitCache({
    store,
    clock,
    expirationJitterMaxSeconds: 0,
    stopCacheKeyIncrementWhenOverlimit: options.stop ?? false,
    localCache: options.localCache === true ? new LocalCache(0, clock, stats) : undefined,
  })
  const request: RateLimitRequest = {
    domain: 'd',
    descriptors: [{ entries: [{ key: 'k', value: 'v' }] }, { entries: [{ key: 'k', value: 'u' }] }],
    hitsAddend: 1,
  }
  const limit = config.getLimit('d', { entries: [{ key: 'k', value: 'v' }] }) as RateLimit
  const decide = () => cache.doLimit(request, [limit, limit])
  const stat = (name: string): number =>
    stats.snapshot().find((s) => s.name === `ratelimit.service.rate_limit.${name}`)?.value ?? 0
  return { clock, store, decide, stat }
}

describe('several windows per rule in the limiter', () => {
  it('counts every window of every descriptor in one round trip, one call per kind of step', async () => {
    const { store, decide } = setup(
      '[{ unit: second, requests_per_unit: 2 }, { unit: day, requests_per_unit: 5, algorithm: sliding_window }, { unit: minute, requests_per_unit: 9, algorithm: token_bucket }, { unit: hour, requests_per_unit: 7 }]',
    )
    await decide()
    const s = String(Math.floor(NOW / 1000))
    const day = String(Math.floor(NOW / 86_400_000) * 86_400)
    const yesterday = String(Number(day) - 86_400)
    const hour = String(Math.floor(NOW / 3_600_000) * 3600)
    const counters = (v: string) =>
      `d_k_${v}_${s}+1 {swd_k_${v}_}${day}_86400s+1 {swd_k_${v}_}${yesterday}_86400s+0 d_k_${v}_${hour}_3600s+1`
    // The memory store has no sliding step: the sliding counters ride in the increments.
    expect(store.calls.sort()).toEqual([
      `increment ${counters('v')} ${counters('u')}`,
      'take d_k_v_tb_60s d_k_u_tb_60s',
    ])
    expect(store.maxInFlight).toBe(2)
  })

  it('reports the first window over the limit, else the one with the least remaining', async () => {
    const { clock, decide, stat } = setup(
      '[{ unit: second, requests_per_unit: 2 }, { unit: minute, requests_per_unit: 3 }]',
    )
    const brief = (s: { code: string; limitRemaining: number; currentLimit?: { unit: string } }) =>
      [s.code, s.limitRemaining, s.currentLimit?.unit] as const
    expect((await decide()).map(brief)).toEqual([
      ['OK', 1, 'SECOND'],
      ['OK', 1, 'SECOND'],
    ])
    clock.advance(1000)
    // 1 left in both: the first of equals.
    expect((await decide()).map(brief)[0]).toEqual(['OK', 1, 'SECOND'])
    expect((await decide()).map(brief)[0]).toEqual(['OK', 0, 'SECOND'])
    expect((await decide()).map(brief)[0]).toEqual(['OVER_LIMIT', 0, 'SECOND'])
    clock.advance(1000)
    // Second window fresh, the minute's spent: the minute decides.
    expect((await decide()).map(brief)[0]).toEqual(['OVER_LIMIT', 0, 'MINUTE'])
    expect(stat('d.k_1s.total_hits')).toBe(10)
    expect(stat('d.k_1m.total_hits')).toBe(10)
    expect(stat('d.k_1s.over_limit')).toBe(2)
    expect(stat('d.k.total_hits')).toBe(0)
  })

  it('with STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT, counts only the windows that would go over', async () => {
    const { decide, store } = setup(
      '[{ unit: second, requests_per_unit: 1 }, { unit: minute, requests_per_unit: 10 }]',
      { stop: true },
    )
    await decide()
    store.calls.length = 0
    const [status] = await decide()
    expect(status?.code).toBe('OVER_LIMIT')
    const start = String(Math.floor(NOW / 1000))
    expect(store.calls).toEqual([
      `get d_k_v_${start} d_k_v_${start}_60s d_k_u_${start} d_k_u_${start}_60s`,
      `increment d_k_v_${start}+1 d_k_v_${start}_60s+0 d_k_u_${start}+1 d_k_u_${start}_60s+0`,
    ])
  })

  it('remembers each window in the local over-limit cache on its own', async () => {
    const { decide, store } = setup(
      '[{ unit: second, requests_per_unit: 1 }, { unit: minute, requests_per_unit: 10 }]',
      { localCache: true },
    )
    await decide()
    await decide()
    store.calls.length = 0
    const [status] = await decide()
    expect(status?.code).toBe('OVER_LIMIT')
    // The second's counters are in the local cache: only the minute's are sent.
    const start = String(Math.floor(NOW / 1000))
    expect(store.calls).toEqual([`increment d_k_v_${start}_60s+1 d_k_u_${start}_60s+1`])
  })
})
