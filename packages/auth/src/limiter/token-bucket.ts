import { ALLOWED, type LimitDecision, type LimitedOperation, type Limiter } from './limiter.js'

/** The budget of one operation: a bucket of `burst` requests refilled at `perSecond`. */
export interface BucketRate {
  /** Requests regained per second (fractions allowed: 15 a minute is 0.25). */
  readonly perSecond: number
  /** Requests a client may make at once, and the bucket's size. */
  readonly burst: number
}

interface Bucket {
  tokens: number
  /** Epoch milliseconds of the last refill. */
  at: number
}

/** `Retry-After` of a bucket that never refills (a rate of 0), in seconds: one day. */
const MAX_RETRY_AFTER = 86_400

/** Buckets kept at most; past that the least recently created is dropped (a fresh client). */
const DEFAULT_MAX_BUCKETS = 10_000

/**
 * An in-memory token-bucket {@link Limiter} per operation and client key, as upstream's
 * `tollbooth` limiters: each key starts with `burst` requests and regains `perSecond`. Operations
 * without a rate are not limited. Memory is bounded: at most `maxBuckets` keys are tracked.
 *
 * @example 15 MFA challenges a minute with a burst of 30 (`MFA_RATE_LIMIT_CHALLENGE_AND_VERIFY`)
 * ```ts
 * const limiter = new TokenBucketLimiter({ factor_challenge: { perSecond: 15 / 60, burst: 30 } })
 * ```
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/apilimiter/apilimiter.go
 */
export class TokenBucketLimiter implements Limiter {
  readonly #rates: Partial<Readonly<Record<LimitedOperation, BucketRate>>>
  readonly #buckets = new Map<string, Bucket>()
  readonly #maxBuckets: number

  /**
   * @param rates The limited operations and their rates.
   * @param maxBuckets Keys tracked at most. @default 10000
   */
  constructor(
    rates: Partial<Readonly<Record<LimitedOperation, BucketRate>>>,
    maxBuckets = DEFAULT_MAX_BUCKETS,
  ) {
    this.#rates = rates
    this.#maxBuckets = maxBuckets
  }

  /**
   * Takes one request from the key's bucket for `operation`; `now` in epoch milliseconds. A
   * refusal says when the next token arrives (whole seconds, at least 1).
   */
  allow(operation: LimitedOperation, key: string, now: number): Promise<LimitDecision> {
    const rate = this.#rates[operation]
    if (!rate) return Promise.resolve(ALLOWED)
    const id = `${operation}\u0000${key}`
    let bucket = this.#buckets.get(id)
    if (!bucket) {
      if (this.#buckets.size >= this.#maxBuckets) {
        const oldest = this.#buckets.keys().next()
        if (oldest.done !== true) this.#buckets.delete(oldest.value)
      }
      bucket = { tokens: rate.burst, at: now }
      this.#buckets.set(id, bucket)
    }
    const elapsed = Math.max(0, now - bucket.at) / 1000
    bucket.tokens = Math.min(rate.burst, bucket.tokens + elapsed * rate.perSecond)
    bucket.at = Math.max(bucket.at, now)
    if (bucket.tokens < 1) {
      const wait = rate.perSecond > 0 ? (1 - bucket.tokens) / rate.perSecond : MAX_RETRY_AFTER
      return Promise.resolve({
        allowed: false,
        retryAfterSeconds: Math.min(MAX_RETRY_AFTER, Math.max(1, Math.ceil(wait))),
      })
    }
    bucket.tokens -= 1
    return Promise.resolve(ALLOWED)
  }
}
