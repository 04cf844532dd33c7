import type { EmailSendRate, Settings } from '../conf/settings.js'
import type { LimitedOperation } from './limiter.js'
import type { BucketRate } from './token-bucket.js'

/** Requests a client may make at once on each operation, as upstream's `SetBurst(30)`. */
export const REQUEST_BURST = 30

/** Upstream's `RATE_LIMIT_*` request rates are per 5 minutes. */
const FIVE_MINUTES = 300

/**
 * The token bucket of every limited operation, from the settings (upstream `limiterOpts`):
 * `RATE_LIMIT_TOKEN_REFRESH` for every `POST /token` grant but `web3`, `RATE_LIMIT_VERIFY` for
 * `/verify`, `RATE_LIMIT_OTP` for `/otp`, `/recover`, `/resend`, `/signup` and `PUT /user` (a
 * bucket each), `RATE_LIMIT_SSO` for `/sso`, `SAML_RATE_LIMIT_ASSERTION` for `/sso/saml/acs`,
 * `RATE_LIMIT_WEB3` (`POST /token?grant_type=web3`), `RATE_LIMIT_PASSKEY` (passkey sign-in
 * options), `RATE_LIMIT_OAUTH_DYNAMIC_CLIENT_REGISTER`, all per 5 minutes; `MFA_RATE_LIMIT_CHALLENGE_AND_VERIFY` per minute; burst 30 each;
 * and `RATE_LIMIT_ANONYMOUS_USERS` per hour with a burst of as many (upstream's
 * `AnonymousSignIns`). The memory backend counts these buckets; the rate limit service config is
 * derived from them ({@link rateLimitServiceConfig}).
 */
export function requestRates(settings: Settings): Readonly<Record<LimitedOperation, BucketRate>> {
  const per5m = (n: number): BucketRate => ({ perSecond: n / FIVE_MINUTES, burst: REQUEST_BURST })
  const mfa: BucketRate = {
    perSecond: settings.mfa.rateLimitChallengeAndVerify / 60,
    burst: REQUEST_BURST,
  }
  const { rateLimit } = settings
  return {
    token: per5m(rateLimit.tokenRefresh),
    token_refresh: per5m(rateLimit.tokenRefresh),
    verify: per5m(rateLimit.verify),
    otp: per5m(rateLimit.otp),
    signup: per5m(rateLimit.otp),
    anonymous_signin: {
      perSecond: rateLimit.anonymousUsers / 3600,
      burst: Math.floor(rateLimit.anonymousUsers),
    },
    user: per5m(rateLimit.otp),
    sso: per5m(rateLimit.sso),
    passkey: per5m(rateLimit.passkey),
    saml_assertion: per5m(settings.saml.rateLimitAssertion),
    factor_challenge: mfa,
    factor_verify: mfa,
    web3: per5m(rateLimit.web3),
    oauth_client_register: per5m(rateLimit.oauthDynamicClientRegister),
  }
}

/** A fixed window of the rate limit service (envoy `rate_limit`: `unit`, `requests_per_unit`). */
export interface ServiceWindow {
  readonly unit: 'second' | 'minute' | 'hour' | 'day'
  readonly requestsPerUnit: number
}

const UNIT_MS: readonly [ServiceWindow['unit'], number][] = [
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1_000],
]

/**
 * The fixed window of a send cap (`RATE_LIMIT_EMAIL_SENT`, `RATE_LIMIT_SMS_SENT`): the largest
 * unit the period is a whole multiple of, with the count scaled to it and rounded down (`10/5m`
 * is 2 a minute; `30` is 30 an hour).
 */
export function sendWindow(rate: EmailSendRate): ServiceWindow {
  const [unit, ms] = UNIT_MS.find(([, size]) => rate.periodMs % size === 0) ?? ['second', 1_000]
  return { unit, requestsPerUnit: Math.floor((rate.events * ms) / Math.max(rate.periodMs, 1)) }
}

/** A rule of the rate limit service: a fixed window, or a token bucket when `burst` is set. */
export interface ServiceRule extends ServiceWindow {
  /** `algorithm: token_bucket` with this capacity (`burst`); absent: a fixed window. */
  readonly burst?: number
}

/**
 * The rate limit service's token bucket (`algorithm: token_bucket`) that counts as `rate`, i.e.
 * as upstream's `tollbooth` bucket and the memory backend: capacity `burst`, refilled with
 * `requests_per_unit` per `unit` in the smallest unit where that is a whole number (150 per
 * 5 minutes is 30 a minute), else per day rounded down. Two edges differ: a rate below 1 a day
 * refills 1 a day (a service bucket refills at least 1 per unit), and a burst below 1 (no request
 * ever allowed) is a fixed window of 0 a minute, which refuses every request as well.
 */
export function serviceBucket(rate: BucketRate): ServiceRule {
  if (rate.burst < 1) return { unit: 'minute', requestsPerUnit: 0 }
  for (const [unit, ms] of [...UNIT_MS].reverse()) {
    const count = (rate.perSecond * ms) / 1000
    const whole = Math.round(count)
    if (whole >= 1 && Math.abs(count - whole) <= 1e-9 * whole) {
      return { unit, requestsPerUnit: whole, burst: rate.burst }
    }
  }
  const perDay = Math.floor(rate.perSecond * 86_400)
  return { unit: 'day', requestsPerUnit: Math.max(1, perDay), burst: rate.burst }
}

/**
 * The two fixed windows that stand for a token bucket where the service has none
 * (`RATE_LIMIT_SERVICE_ALGORITHM=fixed_window`: a memcache backend, envoyproxy/ratelimit): the
 * burst per minute, and the long-run rate per hour (rounded down). A client gets at most the
 * burst in a minute and the bucket's rate over an hour, as upstream, but a burst can come once a
 * minute rather than once per refill.
 */
export function bucketWindows(rate: BucketRate): { minute: number; hour: number } {
  return { minute: rate.burst, hour: Math.floor(rate.perSecond * 3600) }
}
