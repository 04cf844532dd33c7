import { FakeClock } from '@gatehouse/testing'
import { describe, expect, it } from 'vitest'
import { newRateLimit, type RateLimit } from '../config/config.js'
import type { Descriptor, RateLimitRequest, Unit } from '../protocol/types.js'
import { StatsManager, type RateLimitStats } from '../stats/manager.js'
import { StatsStore } from '../stats/store.js'
import { BackendError, type CounterStore, type IncrementOp, type ReadOp } from './cache.js'
import {
  StoreRateLimitCache,
  decideStatus,
  hitsAddends,
  nearLimitThreshold,
} from './store-cache.js'
import { LocalCache } from './local-cache.js'

/** A store that records commands and answers INCRBY/GET with scripted values. */
class ScriptedStore implements CounterStore {
  readonly increments: IncrementOp[][] = []
  readonly reads: ReadOp[][] = []
  readonly incrReplies: number[][]
  readonly getReplies: number[][]
  constructor(incrReplies: number[][], getReplies: number[][] = []) {
    this.incrReplies = incrReplies
    this.getReplies = getReplies
  }
  increment(ops: readonly IncrementOp[]): Promise<number[]> {
    this.increments.push([...ops])
    return Promise.resolve(this.incrReplies.shift() ?? [])
  }
  get(ops: readonly ReadOp[]): Promise<number[]> {
    this.reads.push([...ops])
    return Promise.resolve(this.getReplies.shift() ?? [])
  }
  ready(): Promise<void> {
    return Promise.resolve()
  }
  close(): Promise<void> {
    return Promise.resolve()
  }
}

const manager = (): StatsManager => new StatsManager(new StatsStore())

function rule(
  stats: RateLimitStats,
  requestsPerUnit: number,
  unit: Unit = 'SECOND',
  extra: Partial<RateLimit> = {},
): RateLimit {
  return newRateLimit(stats.key, stats, { requestsPerUnit, unit, ...extra })
}

interface Counts {
  total: number
  over: number
  near: number
  within: number
  localCache: number
  shadow: number
}

function counts(stats: RateLimitStats): Counts {
  return {
    total: stats.totalHits.value(),
    over: stats.overLimit.value(),
    near: stats.nearLimit.value(),
    within: stats.withinLimit.value(),
    localCache: stats.overLimitWithLocalCache.value(),
    shadow: stats.shadowMode.value(),
  }
}

function request(descriptors: Descriptor[], hitsAddend = 0): RateLimitRequest {
  return { domain: 'domain', descriptors, hitsAddend }
}

const one = (key: string, value: string, hitsAddend?: number): Descriptor => ({
  entries: [{ key, value }],
  hitsAddend,
})

describe('near-limit threshold', () => {
  it('is floor(float32(limit) * float32(ratio))', () => {
    expect(nearLimitThreshold(20, 0.8)).toBe(16)
    expect(nearLimitThreshold(10, 0.8)).toBe(8)
    expect(nearLimitThreshold(8, 0.8)).toBe(6)
    expect(nearLimitThreshold(15, 0.8)).toBe(12)
    expect(nearLimitThreshold(3, 0.8)).toBe(2)
  })
})

describe('hits addends', () => {
  it('uses the descriptor addend (0 = check only), else the request addend, at least 1', () => {
    expect(hitsAddends(request([one('a', 'b'), one('a', 'b', 0), one('a', 'b', 7)], 0))).toEqual([
      1, 0, 7,
    ])
    expect(hitsAddends(request([one('a', 'b'), one('a', 'b', 2)], 5))).toEqual([5, 2])
  })
})

describe('stat arithmetic (reference §2.2 vectors)', () => {
  const vector = (limit: number, addend: number, after: number) => {
    const stats = manager().rateLimitStats('domain.key_value')
    const decision = decideStatus({
      limit: rule(stats, limit),
      hitsAddend: addend,
      after,
      localCacheHit: false,
      nearLimitRatio: 0.8,
      nowSeconds: 1234,
    })
    return { status: decision.status, ...counts(stats) }
  }

  it.each([
    [20, 3, 5, 'OK', 15, { near: 0, over: 0, within: 3 }],
    [8, 2, 7, 'OK', 1, { near: 1, over: 0, within: 2 }],
    [20, 3, 19, 'OK', 1, { near: 3, over: 0, within: 3 }],
    [20, 3, 22, 'OVER_LIMIT', 0, { near: 1, over: 2, within: 0 }],
    [20, 7, 22, 'OVER_LIMIT', 0, { near: 4, over: 2, within: 0 }],
    [10, 3, 30, 'OVER_LIMIT', 0, { near: 0, over: 3, within: 0 }],
  ])(
    'limit %i, addend %i, INCRBY %i → %s remaining %i',
    (limit, addend, after, code, remaining, stats) => {
      const result = vector(limit, addend, after)
      expect(result.status).toMatchObject({
        code,
        limitRemaining: remaining,
        currentLimit: { requestsPerUnit: limit },
      })
      expect({ near: result.near, over: result.over, within: result.within }).toEqual(stats)
    },
  )
})

describe('StoreRateLimitCache', () => {
  const clock = new FakeClock(1_000_000_000)

  it('sends INCRBY+EXPIRE with upstream keys and jitter, and reports duration until reset', async () => {
    const stats = manager().rateLimitStats('domain.key_value')
    const store = new ScriptedStore([[5]])
    const cache = new StoreRateLimitCache({
      store,
      clock,
      random: () => 0.5,
      cacheKeyPrefix: 'prefix:',
    })
    const statuses = await cache.doLimit(request([one('key', 'value', 3)]), [
      rule(stats, 20, 'MINUTE'),
    ])
    expect(store.increments).toEqual([
      [
        {
          key: 'prefix:domain_key_value_999960',
          addend: 3,
          expireSeconds: 60 + 150,
          perSecond: false,
        },
      ],
    ])
    expect(statuses).toEqual([
      {
        code: 'OK',
        currentLimit: { requestsPerUnit: 20, unit: 'MINUTE' },
        limitRemaining: 15,
        durationUntilReset: 20,
      },
    ])
    expect(counts(stats)).toMatchObject({ total: 3, within: 3, near: 0 })
  })

  it('skips descriptors without a limit and keeps request order', async () => {
    const stats = manager().rateLimitStats('domain.key_value')
    const store = new ScriptedStore([[1]])
    const cache = new StoreRateLimitCache({ store, clock, expirationJitterMaxSeconds: 0 })
    const statuses = await cache.doLimit(request([one('none', 'x'), one('key', 'value')]), [
      undefined,
      rule(stats, 2),
    ])
    expect(store.increments[0]).toEqual([
      { key: 'domain_key_value_1000000', addend: 1, expireSeconds: 1, perSecond: true },
    ])
    expect(statuses[0]).toEqual({ code: 'OK', limitRemaining: 0 })
    expect(statuses[1]).toMatchObject({ code: 'OK', limitRemaining: 1, durationUntilReset: 1 })
  })

  it('refuses from the local cache without store access once a key is over (HOUR vector)', async () => {
    const stats = manager().rateLimitStats('domain.key4_value4')
    const store = new ScriptedStore([[11], [13], [16]])
    const localCache = new LocalCache(0, clock, new StatsStore())
    const cache = new StoreRateLimitCache({ store, clock, localCache })
    const limit = [rule(stats, 15, 'HOUR')]
    const req = request([one('key4', 'value4')])
    expect(await cache.doLimit(req, limit)).toMatchObject([{ code: 'OK', limitRemaining: 4 }])
    expect(counts(stats)).toMatchObject({ near: 0, over: 0 })
    expect(await cache.doLimit(req, limit)).toMatchObject([{ code: 'OK', limitRemaining: 2 }])
    expect(counts(stats)).toMatchObject({ near: 1, over: 0 })
    expect(await cache.doLimit(req, limit)).toMatchObject([
      { code: 'OVER_LIMIT', limitRemaining: 0 },
    ])
    expect(counts(stats)).toMatchObject({ near: 1, over: 1, localCache: 0 })
    expect(await cache.doLimit(req, limit)).toMatchObject([
      { code: 'OVER_LIMIT', limitRemaining: 0 },
    ])
    expect(store.increments).toHaveLength(3)
    expect(counts(stats)).toMatchObject({ total: 4, near: 1, over: 2, localCache: 1 })
  })

  it('reports shadow-mode rules as OK with the same counts', async () => {
    const stats = manager().rateLimitStats('domain.key4_value4')
    const store = new ScriptedStore([[11], [13], [16]])
    const localCache = new LocalCache(0, clock, new StatsStore())
    const cache = new StoreRateLimitCache({ store, clock, localCache })
    const limit = [rule(stats, 15, 'HOUR', { shadowMode: true })]
    const req = request([one('key4', 'value4')])
    const codes: string[] = []
    for (let i = 0; i < 4; i++) codes.push((await cache.doLimit(req, limit))[0]!.code)
    expect(codes).toEqual(['OK', 'OK', 'OK', 'OK'])
    expect(counts(stats)).toMatchObject({ total: 4, near: 1, over: 2, localCache: 1, shadow: 2 })
  })

  it('forgets local-cache entries at the next window', async () => {
    const c = new FakeClock(3_600_000 * 1000)
    const stats = manager().rateLimitStats('domain.k_v')
    const store = new ScriptedStore([[2], [1]])
    const cache = new StoreRateLimitCache({
      store,
      clock: c,
      localCache: new LocalCache(0, c, new StatsStore()),
    })
    const limit = [rule(stats, 1, 'MINUTE')]
    expect((await cache.doLimit(request([one('k', 'v')]), limit))[0]!.code).toBe('OVER_LIMIT')
    c.advance(60_000)
    expect((await cache.doLimit(request([one('k', 'v')]), limit))[0]!.code).toBe('OK')
    expect(store.increments[1]![0]!.key).toBe(`domain_k_v_${String(3_600_000 + 60)}`)
  })

  it('with STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT only increments keys that would exceed (vector)', async () => {
    const m = manager()
    const s4 = m.rateLimitStats('domain.key4_value4')
    const s5 = m.rateLimitStats('domain.key5_value5')
    const store = new ScriptedStore(
      [
        [11, 11],
        [13, 13],
        [13, 15],
      ],
      [
        [10, 10],
        [11, 11],
        [13, 13],
      ],
    )
    const cache = new StoreRateLimitCache({
      store,
      clock,
      stopCacheKeyIncrementWhenOverlimit: true,
    })
    const limits = [rule(s4, 15, 'HOUR'), rule(s5, 14, 'HOUR')]
    const req = (addend: number) =>
      request([one('key4', 'value4', addend), one('key5', 'value5', addend)])
    expect((await cache.doLimit(req(1), limits)).map((s) => s.limitRemaining)).toEqual([4, 3])
    expect((await cache.doLimit(req(2), limits)).map((s) => s.limitRemaining)).toEqual([2, 1])
    const third = await cache.doLimit(req(2), limits)
    expect(store.increments[2]!.map((op) => op.addend)).toEqual([0, 2])
    expect(third.map((s) => [s.code, s.limitRemaining])).toEqual([
      ['OK', 2],
      ['OVER_LIMIT', 0],
    ])
  })

  it('increments nothing with STOP when the local cache already refused a key', async () => {
    const m = manager()
    const localCache = new LocalCache(0, clock, new StatsStore())
    const store = new ScriptedStore([[3, 1], [2]], [[1, 0]])
    const cache = new StoreRateLimitCache({
      store,
      clock,
      localCache,
      stopCacheKeyIncrementWhenOverlimit: true,
    })
    const limits = [
      rule(m.rateLimitStats('d.a'), 2, 'HOUR'),
      rule(m.rateLimitStats('d.b'), 5, 'HOUR'),
    ]
    const req = request([one('a', '1', 2), one('b', '1')])
    expect((await cache.doLimit(req, limits)).map((s) => s.code)).toEqual(['OVER_LIMIT', 'OK'])
    expect(store.increments[0]!.map((op) => op.addend)).toEqual([2, 0])
    const second = await cache.doLimit(req, limits)
    expect(second.map((s) => s.code)).toEqual(['OVER_LIMIT', 'OK'])
    expect(store.increments[1]!.map((op) => [op.key.slice(0, 11), op.addend])).toEqual([
      ['domain_b_1_', 0],
    ])
    expect(store.reads).toHaveLength(1)
  })

  it("throws the store's key problem for the descriptor, counting nothing", () => {
    const stats = manager().rateLimitStats('domain.key')
    const store = new ScriptedStore([[1]])
    const picky: CounterStore = {
      increment: (ops) => store.increment(ops),
      get: (ops) => store.get(ops),
      ready: () => store.ready(),
      close: () => store.close(),
      keyProblem: (key) => (key.includes(' ') ? 'no spaces, please' : undefined),
    }
    const cache = new StoreRateLimitCache({ store: picky, clock })
    const limits = [rule(stats, 5), rule(stats, 5)]
    expect(() => cache.doLimit(request([one('key', 'fine'), one('key', 'a b')]), limits)).toThrow(
      new BackendError('descriptor 1: no spaces, please', { code: 'ERR_BACKEND_KEY' }),
    )
    expect(store.increments).toEqual([])
    expect(stats.totalHits.value()).toBe(0)
  })
})
