/** Limited operations (upstream `limiterOpts`). */
export type LimitedOperation =
  | 'signup'
  | 'token'
  | 'token_refresh'
  | 'verify'
  | 'otp'
  | 'user'
  | 'factor_challenge'
  | 'factor_verify'

/**
 * Request rate limiting per client key (the rate-limit issue adds token buckets keyed by
 * `RATE_LIMIT_HEADER`). {@link NoLimiter} allows everything.
 */
export interface Limiter {
  /**
   * Takes one request from the key's budget.
   *
   * @param key Client key (the first value of `RATE_LIMIT_HEADER`), `''` when unknown.
   * @param now Epoch milliseconds.
   * @returns `true` to allow, `false` to reject with 429 `over_request_rate_limit`.
   */
  allow(operation: LimitedOperation, key: string, now: number): Promise<boolean>
}

/** A {@link Limiter} that allows every request. */
export class NoLimiter implements Limiter {
  allow(): Promise<boolean> {
    return Promise.resolve(true)
  }
}
