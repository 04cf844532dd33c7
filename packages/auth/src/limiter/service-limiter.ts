import type { RateLimitRequest, RateLimitResponse } from '@gatehouse/ratelimit'
import type { Logger } from 'pino'
import type { ServiceAlgorithm } from '../conf/settings.js'
import { ServiceUnavailableError } from '../errors.js'
import type { EmailSendLimiter } from './email-send-limiter.js'
import { ALLOWED, type LimitDecision, type LimitedOperation, type Limiter } from './limiter.js'
import { DESCRIPTOR, type SendOperation } from './service-config.js'

/** What the {@link ServiceLimiter} needs of `@gatehouse/ratelimit`'s `RateLimitClient`. */
export interface RateLimitTransport {
  shouldRateLimit(request: RateLimitRequest): Promise<RateLimitResponse>
}

/** Options of {@link ServiceLimiter}. */
export interface ServiceLimiterOptions {
  /** `RATE_LIMIT_DOMAIN`. */
  readonly domain: string
  /**
   * `RATE_LIMIT_SERVICE_ALGORITHM`: `token_bucket` sends one descriptor per request limit,
   * `fixed_window` two (the minute and the hour window). @default 'token_bucket'
   */
  readonly algorithm?: ServiceAlgorithm | undefined
  /** `RATE_LIMIT_FAIL_CLOSED`: refuse (503) rather than allow when the service fails. */
  readonly failClosed: boolean
  /** Where the unreachable service is reported (warn) and its return (info). */
  readonly logger?: Logger | undefined
}

/** Counters of a {@link ServiceLimiter}, since it was made. */
export interface ServiceLimiterStats {
  /** Decisions asked of the service. */
  calls: number
  /** Decisions the service could not give (unreachable, past the deadline, failing). */
  failures: number
  /** Of those, requests allowed anyway (fail open). */
  failedOpen: number
  /** Of those, requests refused with 503 (`RATE_LIMIT_FAIL_CLOSED`). */
  failedClosed: number
}

const entry = (key: string, value: string) => ({ key, value })

/**
 * The `RATE_LIMIT_BACKEND=ratelimit` limiter: every decision is asked of a `gatehouse-ratelimit`
 * service (gRPC `ShouldRateLimit`), so every auth instance counts against one budget. A request
 * limit sends the descriptor `operation/client` (the client's token bucket) and, with the
 * `fixed_window` algorithm, `operation/client/window=hour` beside it (the burst per minute and the
 * rate per hour), as `rateLimitServiceConfig` declares; the send caps send
 * `operation=email_sent` or `sms_sent`. `Retry-After` is the longest `duration_until_reset` of the
 * descriptors over their limit.
 *
 * When the service fails (unreachable, past `RATE_LIMIT_SERVICE_TIMEOUT`), the request is
 * allowed (fail open) or refused with 503 (`failClosed`); either is counted in {@link stats},
 * and the first failure after a success is logged as a warning, the recovery as info.
 */
export class ServiceLimiter implements Limiter {
  /** The counters (read them for metrics). */
  readonly stats: ServiceLimiterStats = { calls: 0, failures: 0, failedOpen: 0, failedClosed: 0 }
  readonly #transport: RateLimitTransport
  readonly #options: ServiceLimiterOptions
  readonly #windows: boolean
  #down = false

  constructor(transport: RateLimitTransport, options: ServiceLimiterOptions) {
    this.#transport = transport
    this.#options = options
    this.#windows = options.algorithm === 'fixed_window'
  }

  /**
   * Takes one request of `key`'s budget for `operation` (`now` is unused: the service keeps time).
   *
   * @throws {@link ServiceUnavailableError} When the service fails and `failClosed` is set.
   */
  allow(operation: LimitedOperation, key: string): Promise<LimitDecision> {
    const base = [entry(DESCRIPTOR.operation, operation), entry(DESCRIPTOR.client, key)]
    if (!this.#windows) return this.#decide([{ entries: base }])
    return this.#decide([
      { entries: base },
      { entries: [...base, entry(DESCRIPTOR.window, 'hour')] },
    ])
  }

  /** The server-wide send cap `operation` as an {@link EmailSendLimiter}. */
  sendLimiter(operation: SendOperation): EmailSendLimiter {
    return {
      take: async () =>
        (await this.#decide([{ entries: [entry(DESCRIPTOR.operation, operation)] }])).allowed,
    }
  }

  async #decide(descriptors: RateLimitRequest['descriptors']): Promise<LimitDecision> {
    this.stats.calls++
    let response: RateLimitResponse
    try {
      response = await this.#transport.shouldRateLimit({
        domain: this.#options.domain,
        descriptors,
        hitsAddend: 1,
      })
    } catch (error) {
      return this.#failed(error)
    }
    if (this.#down) {
      this.#down = false
      this.#options.logger?.info({ component: 'ratelimit' }, 'rate limit service reachable again')
    }
    if (response.overallCode !== 'OVER_LIMIT') return ALLOWED
    let wait = 1
    for (const status of response.statuses) {
      if (status.code === 'OVER_LIMIT') wait = Math.max(wait, status.durationUntilReset ?? 1)
    }
    return { allowed: false, retryAfterSeconds: Math.ceil(wait) }
  }

  #failed(error: unknown): LimitDecision {
    this.stats.failures++
    if (!this.#down) {
      this.#down = true
      this.#options.logger?.warn(
        {
          component: 'ratelimit',
          err: error,
          failClosed: this.#options.failClosed,
          failures: this.stats.failures,
        },
        this.#options.failClosed
          ? 'rate limit service unreachable: requests are refused (RATE_LIMIT_FAIL_CLOSED)'
          : 'rate limit service unreachable: requests are allowed (fail open)',
      )
    }
    if (this.#options.failClosed) {
      this.stats.failedClosed++
      throw new ServiceUnavailableError(
        'unexpected_failure',
        'Rate limit service unavailable, please retry after a moment.',
        { cause: error },
      )
    }
    this.stats.failedOpen++
    return ALLOWED
  }
}
