/**
 * The token bucket (a Gatehouse addition, issue 15): a bucket of `burst` tokens, refilled
 * continuously at `requests_per_unit` per unit; a request takes `hits_addend` tokens when the
 * bucket holds that many, and takes none when it is refused. Pure arithmetic on an injected time
 * (milliseconds), shared by the memory backend and mirrored step for step (same IEEE double
 * operations, same order) by the Redis script (`redis/script.ts`), so both decide alike.
 *
 * Bound: over any interval of `t` milliseconds, the hits allowed are at most
 * `burst + t × requests_per_unit / unit_ms` (the bucket's content at the start plus the refill).
 *
 * Time: the bucket keeps the time of its last refill and only refills forward (a caller whose
 * clock is behind the last refill gets no refill, never a negative one); so clock skew between
 * instances can add at most `skew × requests_per_unit / unit_ms` tokens once, and never removes
 * any.
 *
 * @module
 */
import type { RateLimit } from '../config/config.js'
import type { Descriptor } from '../protocol/types.js'
import type { CacheKey } from './cache-key.js'
import { cacheKeyBase } from './cache-key.js'

/**
 * What a token-bucket key appends to upstream's key base: `<prefix><domain>_<key>_<value>_tb`. No
 * window start: the bucket lives on. A fixed-window key ends with digits, a sliding-window key with
 * `}<digits>`, so the three never collide.
 */
export const TOKEN_BUCKET_KEY_MARK = 'tb'

/** The longest wait reported, milliseconds (2^52: exact, and an integer in Lua and Redis). */
export const MAX_WAIT_MS = 2 ** 52

/**
 * The bucket's key: `<prefix><domain>_<key>_<value>_tb`, followed by the rule's
 * {@link RateLimit.keySuffix} for a bucket refilled per several units or a rule's later windows.
 *
 * @param prefix `CACHE_KEY_PREFIX`.
 */
export function tokenBucketKey(
  prefix: string,
  domain: string,
  descriptor: Descriptor,
  limit: Pick<RateLimit, 'sharePatterns' | 'unit'> & Partial<Pick<RateLimit, 'keySuffix'>>,
): CacheKey {
  return {
    key:
      cacheKeyBase(prefix, domain, descriptor, limit) +
      TOKEN_BUCKET_KEY_MARK +
      (limit.keySuffix ?? ''),
    perSecond: limit.unit === 'SECOND',
  }
}

/** A stored bucket. */
export interface TokenBucketState {
  /** Tokens in the bucket (fractional: the refill is continuous). */
  readonly tokens: number
  /** Time of the last refill, epoch milliseconds. */
  readonly updatedMs: number
}

/** A bucket's shape. */
export interface TokenBucketParams {
  /** Tokens added per unit (`requests_per_unit`), at least 1. */
  readonly requestsPerUnit: number
  /** The unit's length, milliseconds. */
  readonly unitMs: number
  /** Capacity (`burst`). */
  readonly burst: number
}

/** Result of {@link takeTokens}. */
export interface TakeResult {
  /** The bucket to store. */
  readonly state: TokenBucketState
  /** The bucket held `cost` tokens, which were taken. */
  readonly allowed: boolean
  /** Whole tokens left after the request. */
  readonly tokens: number
  /**
   * Milliseconds until the bucket is full again (allowed), or until it would hold `cost` tokens
   * (refused; until full when `cost` exceeds `burst`, which is never allowed); rounded up, at
   * most {@link MAX_WAIT_MS}.
   */
  readonly waitMs: number
}

/**
 * Refills the bucket up to `nowMs` and takes `cost` tokens when it holds that many. A missing
 * bucket is full.
 *
 * @param state The stored bucket, or undefined.
 * @param nowMs Current time, epoch milliseconds (the service's injected clock).
 * @param cost Tokens wanted (`hits_addend`; 0 only checks).
 */
export function takeTokens(
  state: TokenBucketState | undefined,
  nowMs: number,
  params: TokenBucketParams,
  cost: number,
): TakeResult {
  const { requestsPerUnit: rpu, unitMs, burst } = params
  let tokens = state === undefined ? burst : state.tokens
  let updatedMs = state === undefined ? nowMs : state.updatedMs
  if (nowMs > updatedMs) {
    tokens = Math.min(burst, tokens + ((nowMs - updatedMs) * rpu) / unitMs)
    updatedMs = nowMs
  }
  // A reload may have lowered the burst.
  if (tokens > burst) tokens = burst
  let allowed = false
  let missing: number
  if (tokens >= cost) {
    tokens = tokens - cost
    allowed = true
    missing = burst - tokens
  } else {
    missing = cost > burst ? burst - tokens : cost - tokens
  }
  const waitMs = Math.min(MAX_WAIT_MS, Math.ceil((missing * unitMs) / rpu))
  return { state: { tokens, updatedMs }, allowed, tokens: Math.floor(tokens), waitMs }
}

/**
 * How long a bucket is kept, milliseconds: the time an empty bucket takes to fill up (a bucket
 * left alone that long is full, which is what a missing bucket means).
 */
export function tokenBucketTtlMs(params: TokenBucketParams): number {
  return Math.min(
    MAX_WAIT_MS,
    Math.max(1, Math.ceil((params.burst * params.unitMs) / params.requestsPerUnit)),
  )
}
