/**
 * The sliding-window counter (a Gatehouse addition, issue 15; the algorithm Cloudflare and
 * Upstash describe): a counter per fixed window, and a decision on the current window's count
 * plus the previous window's count weighted by the part of the previous window still inside the
 * sliding window that ends now. Pure arithmetic on an injected time (milliseconds); the limiter
 * (`store-cache.ts`) stores the counters with the store's sliding step (Redis: one script that
 * counts the current counter and reads the previous one), or, on stores without one, with the
 * ordinary `INCRBY` + `EXPIRE` of every backend.
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
import { windowSeconds } from './units.js'

/**
 * What a sliding-window key puts in front of upstream's key base (without the prefix), inside the
 * hash tag: `<prefix>{sw<domain>_<key>_<value>_}<windowStart>`. A fixed-window key ends with
 * digits after its last `_` (here `}` follows it) and a token-bucket key ends in `tb`, so they
 * never collide.
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
  /**
   * Both keys have the same Redis hash tag, so they live in one Cluster slot and one script may
   * use both. False only when `CACHE_KEY_PREFIX` holds an empty tag `{}` at its first `{` (Redis
   * then hashes each whole key): the two counters are then updated by separate calls.
   */
  readonly oneSlot: boolean
}

/**
 * Whether Redis hashes `key` by a hash tag (Redis Cluster specification: the part between the
 * first `{` and the first `}` after it, when not empty) rather than by the whole key.
 */
export function hasHashTag(key: string): boolean {
  const open = key.indexOf('{')
  if (open < 0) return false
  return key.indexOf('}', open + 1) > open + 1
}

/**
 * The current and previous window's counter keys for `nowMs`:
 * `<prefix>{sw<domain>_<key>_<value>_}<windowStart>` (followed by the window's
 * {@link RateLimit.keySuffix} for a window of several units or a rule's later windows). The part in braces (with whatever the
 * prefix has from its first `{`) is common to both keys and is their Redis hash tag, so on a
 * Redis Cluster both live in one slot and one script reads and counts them. The tag is never
 * empty through a descriptor (it starts with `sw`; hostile values containing braces can only end
 * it early, inside the common part); only a prefix with `{}` at its first `{` empties it, which
 * {@link SlidingWindowKeys.oneSlot} reports.
 *
 * @param prefix `CACHE_KEY_PREFIX`.
 * @param nowMs Current time, epoch milliseconds (the service's injected clock).
 * @throws {RangeError} For a limit of unit `UNKNOWN`.
 */
export function slidingWindowKeys(
  prefix: string,
  domain: string,
  descriptor: Descriptor,
  limit: Pick<RateLimit, 'sharePatterns' | 'unit'> &
    Partial<Pick<RateLimit, 'unitMultiplier' | 'keySuffix'>>,
  nowMs: number,
): SlidingWindowKeys {
  const divider = windowSeconds(limit)
  const windowMs = divider * 1000
  const start = Math.floor(nowMs / windowMs) * divider
  const base = `${prefix}{${SLIDING_WINDOW_KEY_MARK}${cacheKeyBase('', domain, descriptor, limit)}}`
  const suffix = limit.keySuffix ?? ''
  const current = base + String(start) + suffix
  return {
    current,
    previous: base + String(start - divider) + suffix,
    perSecond: limit.unit === 'SECOND',
    elapsedMs: nowMs - start * 1000,
    windowMs,
    oneSlot: hasHashTag(current),
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
