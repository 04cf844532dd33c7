import type { RateLimit } from '../config/config.js'
import type { Descriptor } from '../protocol/types.js'
import { windowSeconds } from './units.js'

/** The store key of one descriptor's counter in the current window. */
export interface CacheKey {
  /** Empty when the descriptor has no limit (nothing is stored). */
  readonly key: string
  /** True for SECOND limits, which go to the per-second store when one is configured. */
  readonly perSecond: boolean
}

const NO_KEY: CacheKey = { key: '', perSecond: false }

/**
 * Builds the counter key exactly as upstream (`src/limiter/cache_key.go`), so Gatehouse and
 * envoy's ratelimit can share one Redis:
 * `prefix + domain + "_" + Σ(key + "_" + value + "_") + windowStart`, where `windowStart` is
 * `now` (epoch seconds) rounded down to the unit's length, and a `share_threshold` entry uses its
 * pattern instead of the value. Every request entry is used, with its actual value. A window of
 * several units (`unit_multiplier`, issue 32) rounds down to its own length, and every window but
 * a rule's first one-unit window appends its {@link RateLimit.keySuffix} (`_<seconds>s`).
 *
 * @param prefix `CACHE_KEY_PREFIX`.
 * @param nowSeconds Current time, epoch seconds (integer).
 * @returns `{ key: '' }` when `limit` is undefined.
 * @example `domain_key_value_1234`, `prefix:domain_key2_value2_subkey2_subvalue2_1200`
 */
export function generateCacheKey(
  prefix: string,
  domain: string,
  descriptor: Descriptor,
  limit: RateLimit | undefined,
  nowSeconds: number,
): CacheKey {
  if (limit === undefined) return NO_KEY
  const divider = windowSeconds(limit)
  const key =
    cacheKeyBase(prefix, domain, descriptor, limit) +
    String(Math.floor(nowSeconds / divider) * divider) +
    limit.keySuffix
  return { key, perSecond: limit.unit === 'SECOND' }
}

/**
 * The part of upstream's cache key before the window start:
 * `prefix + domain + "_" + Σ(key + "_" + value + "_")` (a `share_threshold` entry with its
 * pattern). The other algorithms' keys append a suffix that is not all digits (`sliding-window.ts`,
 * `token-bucket.ts`), so they never equal a fixed-window key, which ends in digits after the last
 * `_`.
 *
 * @param prefix `CACHE_KEY_PREFIX`.
 */
export function cacheKeyBase(
  prefix: string,
  domain: string,
  descriptor: Descriptor,
  limit: Pick<RateLimit, 'sharePatterns'>,
): string {
  let key = `${prefix}${domain}_`
  const patterns = limit.sharePatterns
  const entries = descriptor.entries
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as (typeof entries)[number]
    key += `${entry.key}_${patterns?.[i] ?? entry.value}_`
  }
  return key
}
