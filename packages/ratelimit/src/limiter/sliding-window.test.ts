import { FakeClock } from '@gatehouse/testing'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { newRateLimit, type RateLimit } from '../config/config.js'
import { MemoryCounterStore } from '../memory/memory-store.js'
import type { IncrementOp, SlideOp, SlideReply } from './cache.js'
import type { DescriptorStatus, Unit } from '../protocol/types.js'
import { StatsManager } from '../stats/manager.js'
import { StatsStore } from '../stats/store.js'
import { StoreRateLimitCache } from './store-cache.js'
import { memoryLimiter, oneKeyRequest } from '../../test/limiter.js'
import {
  hasHashTag,
  slidingWindowEstimate,
  slidingWindowKeys,
  slidingWindowResetMs,
  type SlidingWindowCounts,
} from './sliding-window.js'

/** 2026-01-01T00:00:00Z, the start of a minute. */
const T0 = Date.UTC(2026, 0, 1)
const T0_S = T0 / 1000

function slidingRule(
  requestsPerUnit: number,
  unit: Unit = 'MINUTE',
  extra: Partial<RateLimit> = {},
) {
  const stats = new StatsManager(new StatsStore()).rateLimitStats('d.k')
  return newRateLimit('d.k', stats, {
    requestsPerUnit,
    unit,
    algorithm: 'sliding_window',
    ...extra,
  })
}

const request = oneKeyRequest
const limiter = (start = T0, localCache = false) => memoryLimiter(start, localCache)

/**
 * A memory store with the sliding step (as the Redis store has it: count the current counter,
 * read the previous one), recording which operation each call used.
 */
class SlidingMemoryStore extends MemoryCounterStore {
  readonly calls: string[] = []
  override increment(ops: readonly IncrementOp[]): Promise<number[]> {
    this.calls.push(`increment ${String(ops.length)}`)
    return super.increment(ops)
  }
  async slide(ops: readonly SlideOp[]): Promise<SlideReply[]> {
    this.calls.push(`slide ${String(ops.length)}`)
    const current = await super.increment(ops)
    const previous = await this.get(ops.map((op) => ({ key: op.previousKey, perSecond: false })))
    return ops.map((_, i) => ({ current: current[i] ?? 0, previous: previous[i] ?? 0 }))
  }
}

const counts = (c: Partial<SlidingWindowCounts>): SlidingWindowCounts => ({
  previous: 0,
  current: 0,
  elapsedMs: 0,
  windowMs: 60_000,
  ...c,
})

describe('sliding-window arithmetic', () => {
  it('keys the current and previous window after upstream key base, with the sw mark', () => {
    const keys = slidingWindowKeys(
      'p:',
      'd',
      { entries: [{ key: 'k', value: 'v' }] },
      { unit: 'MINUTE', sharePatterns: undefined },
      T0 + 75_500,
    )
    expect(keys).toEqual({
      current: `p:{swd_k_v_}${String(T0_S + 60)}`,
      previous: `p:{swd_k_v_}${String(T0_S)}`,
      perSecond: false,
      elapsedMs: 15_500,
      windowMs: 60_000,
      oneSlot: true,
    })
  })

  it('gives both keys one non-empty Redis hash tag, whatever braces the descriptor holds', () => {
    const tag = (key: string): string => {
      const open = key.indexOf('{')
      const close = key.indexOf('}', open + 1)
      return close > open + 1 ? key.slice(open + 1, close) : key
    }
    for (const [prefix, domain, value] of [
      ['', '}', '}'],
      ['', '{}', 'v'],
      ['p:', 'd', '}{'],
      ['{p}', 'd', 'v'],
      ['p{', 'd', '}'],
    ] as const) {
      const keys = slidingWindowKeys(
        prefix,
        domain,
        { entries: [{ key: 'k', value }] },
        { unit: 'MINUTE', sharePatterns: undefined },
        T0,
      )
      expect(keys.oneSlot).toBe(true)
      expect(hasHashTag(keys.current)).toBe(true)
      expect(tag(keys.current)).toBe(tag(keys.previous))
      expect(tag(keys.current)).not.toBe(keys.current)
    }
    // An empty tag at the prefix's first `{`: Redis hashes each whole key, so not one slot.
    const empty = slidingWindowKeys(
      'p{}',
      'd',
      { entries: [{ key: 'k', value: 'v' }] },
      { unit: 'MINUTE', sharePatterns: undefined },
      T0,
    )
    expect(empty.oneSlot).toBe(false)
    expect(hasHashTag('a{}b{c}')).toBe(false)
    expect(hasHashTag('abc')).toBe(false)
    expect(hasHashTag('a{b')).toBe(false)
  })

  it('weights the previous window by the part of it still inside the sliding window', () => {
    expect(slidingWindowEstimate(counts({ previous: 10, current: 3, elapsedMs: 0 }))).toBe(13)
    expect(slidingWindowEstimate(counts({ previous: 10, current: 3, elapsedMs: 30_000 }))).toBe(8)
    expect(slidingWindowEstimate(counts({ previous: 10, current: 3, elapsedMs: 59_999 }))).toBe(3)
  })

  it('rounds the weighted previous count down', () => {
    // 7 × 45/60 = 5.25 → 5; 3 × 1/60 = 0.05 → 0.
    expect(slidingWindowEstimate(counts({ previous: 7, current: 1, elapsedMs: 15_000 }))).toBe(6)
    expect(slidingWindowEstimate(counts({ previous: 3, current: 0, elapsedMs: 59_000 }))).toBe(0)
  })

  it('tells when the whole budget is back while allowed', () => {
    expect(slidingWindowResetMs(counts({ current: 1, elapsedMs: 10_000 }), 5, false)).toBe(110_000)
    expect(slidingWindowResetMs(counts({ previous: 4, elapsedMs: 10_000 }), 5, false)).toBe(50_000)
  })

  it('tells when one more hit would be allowed while over the limit', () => {
    // previous 10 weighs 10 × (60 − 30 − d)/60; with current 2 and limit 5 one more fits once the
    // weight floors to 2: 10 × (30 − d)/60 < 3 ⟺ d > 12 s.
    const c = counts({ previous: 10, current: 2, elapsedMs: 30_000 })
    expect(slidingWindowResetMs(c, 5, true)).toBe(12_001)
    expect(slidingWindowEstimate({ ...c, elapsedMs: 30_000 + 12_001 }) + 1).toBeLessThanOrEqual(5)
    expect(slidingWindowEstimate({ ...c, elapsedMs: 30_000 + 12_000 }) + 1).toBeGreaterThan(5)
    // The current window alone is full: in the next one, 6 × (60 − d)/60 < 5 ⟺ d > 10 s.
    expect(slidingWindowResetMs(counts({ current: 6, elapsedMs: 20_000 }), 5, true)).toBe(
      40_000 + 10_001,
    )
  })
})

describe('sliding window through the limiter (memory store, fake clock)', () => {
  it("uses the store's one sliding step per decision, deciding as the two increments do", async () => {
    const decide = async (store: MemoryCounterStore, prefix: string, clock: FakeClock) => {
      const cache = new StoreRateLimitCache({
        store,
        clock,
        cacheKeyPrefix: prefix,
        expirationJitterMaxSeconds: 0,
      })
      const limit = slidingRule(5)
      const out: unknown[] = []
      for (const [advance, hits] of [
        [0, 2],
        [1_000, 3],
        [1_000, 1],
        [50_000, 1],
        [20_000, 2],
        [30_000, 4],
        [45_000, 1],
      ] as const) {
        clock.advance(advance)
        out.push(await cache.doLimit(request(hits), [limit]))
      }
      return out
    }
    const plainClock = new FakeClock(T0 + 40_000)
    const plain = await decide(
      new MemoryCounterStore({ clock: plainClock, sweepIntervalMs: 0 }),
      'p:',
      plainClock,
    )
    const slidingClock = new FakeClock(T0 + 40_000)
    const store = new SlidingMemoryStore({ clock: slidingClock, sweepIntervalMs: 0 })
    expect(await decide(store, 'p:', slidingClock)).toEqual(plain)
    expect(new Set(store.calls)).toEqual(new Set(['slide 1']))

    // A prefix with an empty hash tag: the two counters could be in two Cluster slots.
    const emptyTagClock = new FakeClock(T0 + 40_000)
    const emptyTag = new SlidingMemoryStore({ clock: emptyTagClock, sweepIntervalMs: 0 })
    expect(await decide(emptyTag, 'p{}', emptyTagClock)).toEqual(plain)
    expect(new Set(emptyTag.calls)).toEqual(new Set(['increment 2']))
  })

  it('allows the limit in a window, counts into a distinct key, and remembers the previous window', async () => {
    const { clock, store, cache } = limiter(T0 + 50_000)
    const limit = slidingRule(4)
    const codes: string[] = []
    for (let i = 0; i < 5; i++) {
      const [status] = await cache.doLimit(request(), [limit])
      codes.push((status as DescriptorStatus).code)
    }
    expect(codes).toEqual(['OK', 'OK', 'OK', 'OK', 'OVER_LIMIT'])
    // The refused hit was taken back: only allowed hits count.
    expect(await store.get([{ key: `{swd_k_v_}${String(T0_S)}`, perSecond: false }])).toEqual([4])
    // 15 s into the next window the 4 allowed hits still weigh floor(4 × 45/60) = 3.
    clock.set(T0 + 75_000)
    const [next] = await cache.doLimit(request(), [limit])
    expect(next).toMatchObject({ code: 'OK', limitRemaining: 0 })
    const [refused] = await cache.doLimit(request(), [limit])
    expect(refused?.code).toBe('OVER_LIMIT')
  })

  it('refuses hits_addend larger than the remaining estimate, reporting when one hit fits again', async () => {
    const { clock, cache } = limiter(T0 + 10_000)
    const limit = slidingRule(10)
    const [first] = await cache.doLimit(request(6), [limit])
    expect(first).toMatchObject({ code: 'OK', limitRemaining: 4, durationUntilReset: 110 })
    const [second] = await cache.doLimit(request(5), [limit])
    // Refused and taken back: a single hit fits right away.
    expect(second).toMatchObject({ code: 'OVER_LIMIT', limitRemaining: 0, durationUntilReset: 1 })
    expect((await cache.doLimit(request(4), [limit]))[0]).toMatchObject({
      code: 'OK',
      limitRemaining: 0,
    })
    // 10 counted: one more fits in the next window once 10 × (60 − d)/60 < 10, d ≥ 1 ms.
    const [full] = await cache.doLimit(request(), [limit])
    expect(full).toMatchObject({ code: 'OVER_LIMIT', durationUntilReset: 51 })
    clock.set(T0 + 60_000)
    expect((await cache.doLimit(request(), [limit]))[0]?.code).toBe('OVER_LIMIT')
    clock.set(T0 + 60_001)
    expect((await cache.doLimit(request(), [limit]))[0]?.code).toBe('OK')
  })

  it('keeps current_limit as configured and reports the estimate as remaining', async () => {
    const { cache } = limiter(T0)
    const [status] = await cache.doLimit(request(3), [slidingRule(5, 'MINUTE', { name: 'n' })])
    expect(status).toEqual({
      code: 'OK',
      currentLimit: { name: 'n', requestsPerUnit: 5, unit: 'MINUTE' },
      limitRemaining: 2,
      durationUntilReset: 120,
    })
  })

  it('refuses from the local over-limit cache until one hit would be allowed', async () => {
    const { clock, store, cache } = limiter(T0 + 30_000, true)
    const limit = slidingRule(2)
    const key = { key: `{swd_k_v_}${String(T0_S)}`, perSecond: false }
    for (let i = 0; i < 3; i++) await cache.doLimit(request(), [limit])
    expect(await store.get([key])).toEqual([2])
    // Remembered for 30.001 s (when one more fits): refused without counting.
    const [cached] = await cache.doLimit(request(), [limit])
    expect(cached).toMatchObject({ code: 'OVER_LIMIT', durationUntilReset: 31 })
    clock.set(T0 + 60_000)
    expect((await cache.doLimit(request(), [limit]))[0]?.code).toBe('OVER_LIMIT')
    expect(await store.get([key])).toEqual([2])
    clock.set(T0 + 60_001)
    const [after] = await cache.doLimit(request(), [limit])
    expect(after?.code).toBe('OK')
  })

  it('never allows more than the limit plus the documented bound over any interval of one unit', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 30_000 }), fc.integer({ min: 0, max: 3 })), {
          minLength: 1,
          maxLength: 60,
        }),
        async (limitPerUnit, steps) => {
          const { clock, cache } = limiter(T0 + 1)
          const limit = slidingRule(limitPerUnit, 'SECOND')
          const allowed: { at: number; hits: number }[] = []
          for (const [gap, hits] of steps) {
            clock.advance(gap % 1500)
            const [status] = await cache.doLimit(request(hits), [limit])
            if (status?.code === 'OK') allowed.push({ at: clock.now(), hits })
          }
          const windowMs = 1000
          for (const end of allowed) {
            const t = end.at
            const f = (t % windowMs) / windowMs
            const inInterval = allowed
              .filter((a) => a.at > t - windowMs && a.at <= t)
              .reduce((sum, a) => sum + a.hits, 0)
            expect(inInterval).toBeLessThanOrEqual(limitPerUnit + Math.ceil(f * limitPerUnit))
            const inWindow = allowed
              .filter((a) => Math.floor(a.at / windowMs) === Math.floor(t / windowMs))
              .reduce((sum, a) => sum + a.hits, 0)
            expect(inWindow).toBeLessThanOrEqual(limitPerUnit)
          }
        },
      ),
      { numRuns: 200 },
    )
  })
})
