/**
 * Limited operations (upstream `limiterOpts`): `token` is every `POST /token` grant but the
 * refresh and the Web3 sign-in (`web3`, upstream `Web3`), `otp` is `/otp` (and `/magiclink`),
 * `/recover` and `/resend`, `signup` a sign-up with email or phone and `anonymous_signin` one
 * without (upstream `AnonymousSignIns`), `oauth_client_register` a dynamic client registration
 * (upstream `OAuthClientRegister`); `email_sent` and `sms_sent` are the server-wide send caps.
 */
export type LimitedOperation =
  | 'signup'
  | 'anonymous_signin'
  | 'token'
  | 'token_refresh'
  | 'verify'
  | 'otp'
  | 'user'
  | 'sso'
  | 'passkey'
  | 'saml_assertion'
  | 'factor_challenge'
  | 'factor_verify'
  | 'web3'
  | 'oauth_client_register'

/** The answer of a {@link Limiter}. */
export interface LimitDecision {
  /** `false`: answer 429 `over_request_rate_limit`. */
  readonly allowed: boolean
  /** When refused: whole seconds until a request may succeed (`Retry-After`); else 0. */
  readonly retryAfterSeconds: number
}

/** The decision that allows. */
export const ALLOWED: LimitDecision = Object.freeze({ allowed: true, retryAfterSeconds: 0 })

/**
 * Request rate limiting per operation and client key (upstream `limitHandler`): the in-memory
 * `TokenBucketLimiter` of each instance, or the shared `ServiceLimiter`. {@link NoLimiter}
 * allows everything.
 */
export interface Limiter {
  /**
   * Takes one request from the key's budget for `operation`.
   *
   * @param key Client key (the first value of `RATE_LIMIT_HEADER`, or of `Svc-Forwarded-For`);
   *   never empty: requests without a key are not limited.
   * @param now Epoch milliseconds.
   * @throws {Error} Only when the backend fails and is configured to fail closed (the route
   *   answers that error).
   */
  allow(operation: LimitedOperation, key: string, now: number): Promise<LimitDecision>
}

/** A {@link Limiter} that allows every request. */
export class NoLimiter implements Limiter {
  allow(): Promise<LimitDecision> {
    return Promise.resolve(ALLOWED)
  }
}
