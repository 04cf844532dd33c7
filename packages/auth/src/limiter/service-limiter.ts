import type { RateLimitRequest, RateLimitResponse } from '@gatehouse/ratelimit'
import type { Logger } from 'pino'
import { ServiceUnavailableError } from '../errors.js'
import type { EmailSendLimiter } from './email-send-limiter.js'
import { ALLOWED, type LimitDecision, type LimitedOperation, type Limiter } from './limiter.js'
import type { ServiceWindow } from './rates.js'
import { DESCRIPTOR, type SendOperation, type ServiceRules } from './service-config.js'

/** What the {@link ServiceLimiter} needs of `@gatehouse/ratelimit`'s `RateLimitClient`. */
export interface RateLimitTransport {
  shouldRateLimit(request: RateLimitRequest): Promise<RateLimitResponse>
}

/** Options of {@link ServiceLimiter}. */
export interface ServiceLimiterOptions {
  /** `RATE_LIMIT_DOMAIN`. */
  readonly domain: string
  /**
   * The rules of the deployed config (`serviceRules` of the settings): a request limit sends one
   * descriptor per rule of its operation, and every answer is checked against them.
   */
  readonly rules: ServiceRules
  /** `RATE_LIMIT_FAIL_CLOSED`: refuse (503) rather than allow when the service fails. */
  readonly failClosed: boolean
  /**
   * Where the unreachable service is reported (warn) and its return (info), and a config that
   * does not match `rules` (warn, once per operation).
   */
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
  /**
   * Decisions where the service applied another limit than `rules` says, or none: its config is
   * missing or was generated from other settings.
   */
  configMismatches: number
}

const entry = (key: string, value: string) => ({ key, value })

/** The service's name of each unit (`RateLimitResponse.RateLimit.Unit`). */
const UNIT_NAMES = { second: 'SECOND', minute: 'MINUTE', hour: 'HOUR', day: 'DAY' } as const

/**
 * The `RATE_LIMIT_BACKEND=ratelimit` limiter: every decision is asked of a `gatehouse-ratelimit`
 * service (gRPC `ShouldRateLimit`), so every auth instance counts against one budget. A request
 * limit sends the descriptor `operation/client` (the client's token bucket) and, with the
 * `fixed_window` algorithm, `operation/client/window=hour` beside it (the burst per minute and the
 * rate per hour), as `rateLimitServiceConfig` declares; the send caps send
 * `operation=email_sent` or `sms_sent`. `Retry-After` is the longest `duration_until_reset` of the
 * descriptors over their limit.
 *
 * Each answer's `current_limit` is compared with the rule the settings give: a service without
 * this domain's config allows everything, and one whose config was generated from other settings
 * counts other budgets, both silently. Such an answer still decides the request; it is counted
 * (`configMismatches`) and logged as a warning once per operation, with both limits.
 *
 * When the service fails (unreachable, past `RATE_LIMIT_SERVICE_TIMEOUT`), the request is
 * allowed (fail open) or refused with 503 (`failClosed`); either is counted in {@link stats},
 * and the first failure after a success is logged as a warning, the recovery as info.
 */
export class ServiceLimiter implements Limiter {
  /** The counters (read them for metrics). */
  readonly stats: ServiceLimiterStats = {
    calls: 0,
    failures: 0,
    failedOpen: 0,
    failedClosed: 0,
    configMismatches: 0,
  }
  readonly #transport: RateLimitTransport
  readonly #options: ServiceLimiterOptions
  /** Operations whose config mismatch was logged. */
  readonly #warned = new Set<string>()
  #down = false

  constructor(transport: RateLimitTransport, options: ServiceLimiterOptions) {
    this.#transport = transport
    this.#options = options
  }

  /**
   * Takes one request of `key`'s budget for `operation` (`now` is unused: the service keeps time).
   *
   * @throws {@link ServiceUnavailableError} When the service fails and `failClosed` is set.
   */
  allow(operation: LimitedOperation, key: string): Promise<LimitDecision> {
    const rules = this.#options.rules.requests[operation]
    const base = [entry(DESCRIPTOR.operation, operation), entry(DESCRIPTOR.client, key)]
    const descriptors =
      rules.length === 1
        ? [{ entries: base }]
        : [{ entries: base }, { entries: [...base, entry(DESCRIPTOR.window, 'hour')] }]
    return this.#decide(descriptors, operation, rules)
  }

  /** The server-wide send cap `operation` as an {@link EmailSendLimiter}. */
  sendLimiter(operation: SendOperation): EmailSendLimiter {
    return {
      take: async () =>
        (
          await this.#decide([{ entries: [entry(DESCRIPTOR.operation, operation)] }], operation, [
            this.#options.rules.sends[operation],
          ])
        ).allowed,
    }
  }

  async #decide(
    descriptors: RateLimitRequest['descriptors'],
    operation: string,
    rules: readonly ServiceWindow[],
  ): Promise<LimitDecision> {
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
    this.#check(response, operation, rules)
    if (response.overallCode !== 'OVER_LIMIT') return ALLOWED
    let wait = 1
    for (const status of response.statuses) {
      if (status.code === 'OVER_LIMIT') wait = Math.max(wait, status.durationUntilReset ?? 1)
    }
    return { allowed: false, retryAfterSeconds: Math.ceil(wait) }
  }

  /** Counts, and warns once per operation about, statuses whose limit is not the rule's. */
  #check(response: RateLimitResponse, operation: string, rules: readonly ServiceWindow[]): void {
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i] as ServiceWindow
      const applied = response.statuses[i]?.currentLimit
      if (
        applied !== undefined &&
        applied.requestsPerUnit === rule.requestsPerUnit &&
        applied.unit === UNIT_NAMES[rule.unit]
      ) {
        continue
      }
      this.stats.configMismatches++
      if (this.#warned.has(operation)) return
      this.#warned.add(operation)
      this.#options.logger?.warn(
        {
          component: 'ratelimit',
          domain: this.#options.domain,
          operation,
          descriptor: i,
          expected: `${String(rule.requestsPerUnit)} per ${UNIT_NAMES[rule.unit]}`,
          applied:
            applied === undefined
              ? 'none'
              : `${String(applied.requestsPerUnit)} per ${applied.unit}`,
        },
        'the rate limit service applies another limit than these settings give: deploy the output of `gatehouse-auth ratelimit-config` for these settings in its config directory',
      )
      return
    }
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
