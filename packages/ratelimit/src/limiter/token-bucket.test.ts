import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { newRateLimit, type RateLimit } from '../config/config.js'
import type { Unit } from '../protocol/types.js'
import { StatsManager } from '../stats/manager.js'
import { StatsStore } from '../stats/store.js'
import { memoryLimiter, oneKeyRequest } from '../../test/limiter.js'
import {
  takeTokens,
  tokenBucketKey,
  tokenBucketTtlMs,
  type TokenBucketParams,
} from './token-bucket.js'

const T0 = Date.UTC(2026, 0, 1)
/** 10 tokens per minute (one every 6 s), capacity 4. */
const PARAMS: TokenBucketParams = { requestsPerUnit: 10, unitMs: 60_000, burst: 4 }

function bucketRule(
  requestsPerUnit: number,
  burst: number,
  unit: Unit = 'MINUTE',
  extra: Partial<RateLimit> = {},
) {
  const store = new StatsStore()
  const stats = new StatsManager(store).rateLimitStats('d.k')
  const limit = newRateLimit('d.k', stats, {
    requestsPerUnit,
    unit,
    algorithm: 'token_bucket',
    burst,
    ...extra,
  })
  return { limit, store }
}

const request = oneKeyRequest
const limiter = (start = T0, localCache = false) => memoryLimiter(start, localCache)

describe('token-bucket arithmetic', () => {
  it('keys the bucket after upstream key base with the tb mark (no window)', () => {
    expect(
      tokenBucketKey(
        'p:',
        'd',
        { entries: [{ key: 'k', value: 'v' }] },
        {
          unit: 'SECOND',
          sharePatterns: undefined,
        },
      ),
    ).toEqual({ key: 'p:d_k_v_tb', perSecond: true })
  })

  it('starts full, takes the cost, and tells when it is full again', () => {
    const r = takeTokens(undefined, T0, PARAMS, 3)
    expect(r).toEqual({
      state: { tokens: 1, updatedMs: T0 },
      allowed: true,
      tokens: 1,
      waitMs: 18_000,
    })
  })

  it('refills continuously: a partial refill counts as a fraction, whole tokens are reported', () => {
    const empty = { tokens: 0, updatedMs: T0 }
    const r = takeTokens(empty, T0 + 9_000, PARAMS, 1)
    // 9 s = 1.5 tokens; one taken, 0.5 left: reported as 0, full in 3.5 × 6 s.
    expect(r).toMatchObject({ allowed: true, tokens: 0, waitMs: 21_000 })
    expect(r.state.tokens).toBeCloseTo(0.5, 12)
  })

  it('refuses hits_addend larger than the content, takes nothing, and tells when it fits', () => {
    const r = takeTokens({ tokens: 1.5, updatedMs: T0 }, T0, PARAMS, 3)
    expect(r).toEqual({
      state: { tokens: 1.5, updatedMs: T0 },
      allowed: false,
      tokens: 1,
      waitMs: 9_000,
    })
  })

  it('never holds more than the burst, and reports a cost beyond the burst against a full bucket', () => {
    const r = takeTokens({ tokens: 2, updatedMs: T0 }, T0 + 3_600_000, PARAMS, 5)
    expect(r).toMatchObject({ allowed: false, tokens: 4, waitMs: 0 })
  })

  it('does not refill when the caller clock is behind the last refill (skew)', () => {
    const r = takeTokens({ tokens: 0.25, updatedMs: T0 }, T0 - 60_000, PARAMS, 0)
    expect(r.state).toEqual({ tokens: 0.25, updatedMs: T0 })
    expect(r.allowed).toBe(true)
  })

  it('keeps a bucket as long as an empty one takes to fill, rounded up', () => {
    expect(tokenBucketTtlMs(PARAMS)).toBe(24_000)
    expect(tokenBucketTtlMs({ requestsPerUnit: 3, unitMs: 1000, burst: 1 })).toBe(334)
  })
})

describe('token bucket through the limiter (memory store, fake clock)', () => {
  it('allows a burst, then one hit per refill interval, with remaining and reset true to the bucket', async () => {
    const { clock, cache } = limiter()
    const { limit } = bucketRule(10, 4)
    const answers = []
    for (let i = 0; i < 5; i++) answers.push((await cache.doLimit(request(), [limit]))[0])
    expect(answers.map((a) => [a?.code, a?.limitRemaining, a?.durationUntilReset])).toEqual([
      ['OK', 3, 6],
      ['OK', 2, 12],
      ['OK', 1, 18],
      ['OK', 0, 24],
      ['OVER_LIMIT', 0, 6],
    ])
    expect(answers[0]?.currentLimit).toEqual({ requestsPerUnit: 10, unit: 'MINUTE' })
    clock.advance(5_999)
    expect((await cache.doLimit(request(), [limit]))[0]?.code).toBe('OVER_LIMIT')
    clock.advance(1)
    expect((await cache.doLimit(request(), [limit]))[0]).toMatchObject({
      code: 'OK',
      limitRemaining: 0,
    })
  })

  it('counts near-limit and over-limit hits against the burst, as upstream splits them', async () => {
    const { cache } = limiter()
    const { limit, store } = bucketRule(10, 10)
    await cache.doLimit(request(9), [limit])
    await cache.doLimit(request(2), [limit])
    const value = (name: string): number =>
      store.snapshot().find((s) => s.name === `ratelimit.service.rate_limit.d.k.${name}`)?.value ??
      0
    expect([
      value('total_hits'),
      value('within_limit'),
      value('near_limit'),
      value('over_limit'),
    ]).toEqual([
      // 9 within (1 above the near threshold 8); the refused 2 put 1 over the burst, 1 near it.
      11, 9, 2, 1,
    ])
  })

  it('answers OK in shadow mode without taking tokens', async () => {
    const { cache } = limiter()
    const { limit } = bucketRule(1, 1, 'HOUR', { shadowMode: true })
    expect((await cache.doLimit(request(), [limit]))[0]?.code).toBe('OK')
    expect((await cache.doLimit(request(), [limit]))[0]).toMatchObject({
      code: 'OK',
      limitRemaining: 0,
    })
  })

  it('refuses every hit of a bucket that never refills (requests_per_unit 0)', async () => {
    const { cache, store } = limiter()
    const { limit } = bucketRule(0, 0)
    expect((await cache.doLimit(request(), [limit]))[0]).toMatchObject({
      code: 'OVER_LIMIT',
      durationUntilReset: 60,
    })
    expect(store.size).toBe(0)
  })

  it('refuses from the local over-limit cache until the refused hits would fit', async () => {
    const { clock, cache } = limiter(T0, true)
    const { limit } = bucketRule(10, 1)
    await cache.doLimit(request(), [limit])
    expect((await cache.doLimit(request(), [limit]))[0]?.code).toBe('OVER_LIMIT')
    const [cached] = await cache.doLimit(request(), [limit])
    expect(cached).toMatchObject({ code: 'OVER_LIMIT', durationUntilReset: 6 })
    clock.advance(6_000)
    expect((await cache.doLimit(request(), [limit]))[0]?.code).toBe('OK')
  })

  it('never allows more than the burst plus the refill over any interval', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 0, max: 5 })), {
          minLength: 1,
          maxLength: 60,
        }),
        async (rpu, burst, steps) => {
          const { clock, cache } = limiter()
          const { limit } = bucketRule(rpu, burst, 'SECOND')
          const allowed: { at: number; hits: number }[] = []
          for (const [gap, hits] of steps) {
            clock.advance(gap)
            const [status] = await cache.doLimit(request(hits), [limit])
            if (status?.code === 'OK') allowed.push({ at: clock.now(), hits: Math.max(1, hits) })
          }
          for (const a of allowed) {
            for (const b of allowed) {
              if (b.at < a.at) continue
              const sum = allowed
                .filter((x) => x.at >= a.at && x.at <= b.at)
                .reduce((s, x) => s + x.hits, 0)
              expect(sum).toBeLessThanOrEqual(burst + ((b.at - a.at) * rpu) / 1000 + 1e-9)
            }
          }
        },
      ),
      { numRuns: 200 },
    )
  })
})
