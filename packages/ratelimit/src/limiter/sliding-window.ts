/**
 * The sliding-window counter (a Gatehouse addition, issue 15; the algorithm Cloudflare and
 * Upstash describe): a counter per fixed window, and a decision on the current window's count
 * plus the previous window's count weighted by the part of the previous window still inside the
 * sliding window that ends now. Pure arithmetic on an injected time (milliseconds); the limiter
 * (`fixed-window.ts`) stores the counters with the ordinary `INCRBY` + `EXPIRE` of every backend.
 *
 * Error bound: the estimate assumes the previous window's hits were spread evenly. Over any
 * interval of one unit ending at a point `f` (0 ≤ f < 1) of its window, the hits allowed are at
 * most `limit + ceil(f × limit)` (below twice the limit, reached only when the whole previous
 * window's budget was spent at its very end), and exactly bounded by the limit inside any one
 * window. Only allowed hits count: the limiter counts first (one round trip, as the fixed
 * window) and takes a refused request's hits back (`CounterStore.release`), so concurrent
 * requests may see a refused one's hits for a moment (never allowing more, at worst refusing one
 * that would have fit), and a client sending faster than the limit still gets the limit's worth.
 *
 * @module
 */
import type { RateLimit } from '../config/config.js'
import type { Descriptor } from '../protocol/types.js'
import { cacheKeyBase } from './cache-key.js'
import { unitSeconds } from './units.js'

/**
 * What a sliding-window key puts between upstream's key base and the window start:
 * `<prefix><domain>_<key>_<value>_sw<windowStart>`. A fixed-window key ends with digits after its
 * last `_`, so the two never collide.
 */
export const SLIDING_WINDOW_KEY_MARK = 'sw'

/** The two counters a sliding-window decision reads. */
export interface SlidingWindowKeys {
  /** The counter of the window containing now (incremented). */
  readonly current: string
  /** The counter of the window before (read). */
  readonly previous: string
  /** True for SECOND limits (the per-second store). */
  readonly perSecond: boolean
  /** Milliseconds since the current window started. */
  readonly elapsedMs: number
  /** The window's length, milliseconds. */
  readonly windowMs: number
}

/**
 * The current and previous window's counter keys for `nowMs`. Each counter is its own key, so on
 * a Redis Cluster each lives in its own slot and every call stays single-key.
 *
 * @param prefix `CACHE_KEY_PREFIX`.
 * @param nowMs Current time, epoch milliseconds (the service's injected clock).
 * @throws {RangeError} For a limit of unit `UNKNOWN`.
 */
export function slidingWindowKeys(
  prefix: string,
  domain: string,
  descriptor: Descriptor,
  limit: Pick<RateLimit, 'sharePatterns' | 'unit'>,
  nowMs: number,
): SlidingWindowKeys {
  const divider = unitSeconds(limit.unit)
  const windowMs = divider * 1000
  const start = Math.floor(nowMs / windowMs) * divider
  const base = cacheKeyBase(prefix, domain, descriptor, limit) + SLIDING_WINDOW_KEY_MARK
  return {
    current: base + String(start),
    previous: base + String(start - divider),
    perSecond: limit.unit === 'SECOND',
    elapsedMs: nowMs - start * 1000,
    windowMs,
  }
}

/** The counts and the position in the window that a decision uses. */
export interface SlidingWindowCounts {
  /** Hits counted in the previous window. */
  readonly previous: number
  /** Hits counted in the current window (after this request's). */
  readonly current: number
  /** Milliseconds since the current window started (0 ≤ elapsedMs < windowMs). */
  readonly elapsedMs: number
  readonly windowMs: number
}

/**
 * The sliding-window estimate of the hits in the last unit:
 * `floor(previous × (windowMs − elapsedMs) / windowMs) + current`. The weighted previous count is
 * rounded down (the rounding never refuses a hit the exact estimate allows). Exact while
 * `previous × windowMs` stays below 2^53.
 */
export function slidingWindowEstimate(counts: SlidingWindowCounts): number {
  const { previous, current, elapsedMs, windowMs } = counts
  if (previous === 0) return current
  return Math.floor((previous * (windowMs - elapsedMs)) / windowMs) + current
}

/**
 * Milliseconds until the sliding window's budget is back, assuming no more hits:
 *
 * - `overLimit` false: until the estimate is 0 again (the whole budget is back): the end of the
 *   next window when this window has hits, else the end of this one;
 * - `overLimit` true: until one more hit would be allowed (the previous window's weight fading
 *   within this window, or, when this window alone is at the limit, within the next one); with a
 *   limit of 0 that never happens and the first answer is used.
 *
 * @param limit `requests_per_unit`.
 * @returns At least 1 ms.
 */
export function slidingWindowResetMs(
  counts: SlidingWindowCounts,
  limit: number,
  overLimit: boolean,
): number {
  const { previous, current, elapsedMs, windowMs } = counts
  const left = windowMs - elapsedMs
  const untilEmpty = current > 0 ? left + windowMs : left
  if (!overLimit || limit === 0) return Math.max(1, untilEmpty)
  if (current + 1 <= limit) {
    if (previous === 0) return 1
    // floor(previous × (left − d) / windowMs) ≤ limit − current − 1 =: m
    // ⟺ previous × (left − d) < (m + 1) × windowMs.
    const m = limit - current - 1
    const d = Math.floor(left - ((m + 1) * windowMs) / previous) + 1
    return Math.max(1, Math.min(left, d))
  }
  // Next window, `d` into it: floor(current × (windowMs − d) / windowMs) + 1 ≤ limit
  // ⟺ current × (windowMs − d) < limit × windowMs.
  const d = Math.floor(windowMs - (limit * windowMs) / current) + 1
  return left + Math.max(0, Math.min(windowMs, d))
}
