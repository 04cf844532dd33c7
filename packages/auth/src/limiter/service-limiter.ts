import { createHash } from 'node:crypto'
import {
  serviceErrorCode,
  type RateLimitRequest,
  type RateLimitResponse,
} from '@gatehouse/ratelimit/client'
import type { Logger } from 'pino'
import { ServiceUnavailableError } from '../errors.js'
import type { EmailSendLimiter } from './email-send-limiter.js'
import { ALLOWED, type LimitDecision, type LimitedOperation, type Limiter } from './limiter.js'
import type { ServiceWindow } from './rates.js'
import { DESCRIPTOR, type SendOperation, type ServiceRules } from './service-config.js'

/** What the {@link ServiceLimiter} needs of `@gatehouse/ratelimit/client`'s `RateLimitClient`. */
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
  /**
   * Decisions the service refused to make (`ERR_BACKEND_KEY`, `ERR_SERVICE`,
   * `ERR_REQUEST_TOO_LARGE`: it counted nothing): each request was refused.
   */
  refused: number
  /** Send-cap decisions the service could not give, made by the in-process cap instead. */
  sendFallbacks: number
  /**
   * Decisions the service made from its local counters while its store failed
   * (`BACKEND_FAILURE_MODE=local`, marked `x-ratelimit-degraded: 1`): it still decides, at its
   * instance's share of each limit.
   */
  degraded: number
}

/** Codes of requests the service refused before counting anything (`serviceErrorCode`). */
const REFUSED_CODES: ReadonlySet<string | undefined> = new Set([
  'ERR_BACKEND_KEY',
  'ERR_SERVICE',
  'ERR_REQUEST_TOO_LARGE',
])

/**
 * The descriptor value of a client key: the first 22 characters (132 bits) of its SHA-256 in
 * base64url. Whatever the key (a header value of up to 256 characters, any bytes), the value is
 * short and made of `[A-Za-z0-9_-]`, which every backend holds (memcache keys have at most 250
 * bytes and no spaces or control characters), and the key itself never reaches the service's
 * logs or Redis.
 */
export function clientDescriptorValue(key: string): string {
  return createHash('sha256').update(key).digest('base64url').slice(0, 22)
}

/** What one question to the service gave. */
type Outcome =
  | { readonly kind: 'decided'; readonly decision: LimitDecision }
  | { readonly kind: 'failed'; readonly error: unknown }
  | { readonly kind: 'refused'; readonly error: unknown; readonly code: string }

const entry = (key: string, value: string) => ({ key, value })

/**
 * The header a rate limit service adds to answers decided from its local counters while its store
 * fails (`BACKEND_FAILURE_MODE=local`); their limits are the instance's share, so they are not
 * compared with the rules.
 */
function isDegradedHeader(header: { readonly key: string; readonly value: string }): boolean {
  return header.key === 'x-ratelimit-degraded' && header.value === '1'
}

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
 * When the service fails (unreachable, past `RATE_LIMIT_SERVICE_TIMEOUT`, its backend down), a
 * request limit allows (fail open) or refuses with 503 (`failClosed`), and a send cap never fails
 * open: its in-process cap (see {@link sendLimiter}) decides. Each is counted in {@link stats},
 * and the first failure after a success is logged as a warning, the recovery as info. A request
 * the service refuses (`ERR_BACKEND_KEY`, `ERR_SERVICE`, `ERR_REQUEST_TOO_LARGE`: it counted
 * nothing and would refuse it again) is refused, whatever `failClosed` says.
 *
 * Client keys are sent hashed ({@link clientDescriptorValue}).
 */
export class ServiceLimiter implements Limiter {
  /** The counters (read them for metrics). */
  readonly stats: ServiceLimiterStats = {
    calls: 0,
    failures: 0,
    failedOpen: 0,
    failedClosed: 0,
    configMismatches: 0,
    refused: 0,
    sendFallbacks: 0,
    degraded: 0,
  }
  readonly #transport: RateLimitTransport
  readonly #options: ServiceLimiterOptions
  /** Operations whose config mismatch was logged. */
  readonly #warned = new Set<string>()
  /** Operations whose refusal by the service was logged. */
  readonly #warnedRefused = new Set<string>()
  #down = false

  constructor(transport: RateLimitTransport, options: ServiceLimiterOptions) {
    this.#transport = transport
    this.#options = options
  }

  /**
   * Takes one request of `key`'s budget for `operation` (`now` is unused: the service keeps time).
   *
   * @throws {@link ServiceUnavailableError} When the service fails and `failClosed` is set, or
   *   when it refuses the request.
   */
  async allow(operation: LimitedOperation, key: string): Promise<LimitDecision> {
    const rules = this.#options.rules.requests[operation]
    const base = [
      entry(DESCRIPTOR.operation, operation),
      entry(DESCRIPTOR.client, clientDescriptorValue(key)),
    ]
    const descriptors =
      rules.length === 1
        ? [{ entries: base }]
        : [{ entries: base }, { entries: [...base, entry(DESCRIPTOR.window, 'hour')] }]
    const outcome = await this.#decide(descriptors, operation, rules)
    switch (outcome.kind) {
      case 'decided':
        return outcome.decision
      case 'refused':
        throw this.#unavailable(outcome.error)
      case 'failed':
        return this.#failOpenOrClosed(outcome.error)
    }
  }

  /**
   * The server-wide send cap `operation` as an {@link EmailSendLimiter}. It never fails open:
   * while the service cannot decide, `fallback` (an in-process cap of the same rate) does, so
   * that an outage lets each instance send at most the cap; `fallback` also counts every send
   * the service allows, so that an outage starts from what this instance already sent. A send
   * the service refuses to decide is refused.
   */
  sendLimiter(operation: SendOperation, fallback: EmailSendLimiter): EmailSendLimiter {
    const descriptors = [{ entries: [entry(DESCRIPTOR.operation, operation)] }]
    const rules = [this.#options.rules.sends[operation]]
    return {
      take: async (now) => {
        const outcome = await this.#decide(descriptors, operation, rules)
        switch (outcome.kind) {
          case 'decided':
            if (outcome.decision.allowed) await fallback.take(now)
            return outcome.decision.allowed
          case 'refused':
            return false
          case 'failed':
            this.stats.sendFallbacks++
            return fallback.take(now)
        }
      },
    }
  }

  async #decide(
    descriptors: RateLimitRequest['descriptors'],
    operation: string,
    rules: readonly ServiceWindow[],
  ): Promise<Outcome> {
    this.stats.calls++
    let response: RateLimitResponse
    try {
      response = await this.#transport.shouldRateLimit({
        domain: this.#options.domain,
        descriptors,
        hitsAddend: 1,
      })
    } catch (error) {
      const code = serviceErrorCode(error)
      if (code !== undefined && REFUSED_CODES.has(code)) {
        this.#refused(error, code, operation)
        return { kind: 'refused', error, code }
      }
      this.#failed(error)
      return { kind: 'failed', error }
    }
    if (this.#down) {
      this.#down = false
      this.#options.logger?.info({ component: 'ratelimit' }, 'rate limit service reachable again')
    }
    if (response.responseHeadersToAdd.some(isDegradedHeader)) this.stats.degraded++
    else this.#check(response, operation, rules)
    if (response.overallCode !== 'OVER_LIMIT') return { kind: 'decided', decision: ALLOWED }
    let wait = 1
    for (const status of response.statuses) {
      if (status.code === 'OVER_LIMIT') wait = Math.max(wait, status.durationUntilReset ?? 1)
    }
    return { kind: 'decided', decision: { allowed: false, retryAfterSeconds: Math.ceil(wait) } }
  }

  /** Counts a refusal, and warns about the first of each operation. */
  #refused(error: unknown, code: string, operation: string): void {
    this.stats.refused++
    if (this.#warnedRefused.has(operation)) return
    this.#warnedRefused.add(operation)
    this.#options.logger?.warn(
      { component: 'ratelimit', err: error, code, operation, domain: this.#options.domain },
      'the rate limit service refused to decide: the request is refused (check the service config and its MAX_DESCRIPTOR_* caps)',
    )
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

  /** Counts a failure, and warns about the first one after a success. */
  #failed(error: unknown): void {
    this.stats.failures++
    if (this.#down) return
    this.#down = true
    this.#options.logger?.warn(
      {
        component: 'ratelimit',
        err: error,
        failClosed: this.#options.failClosed,
        failures: this.stats.failures,
      },
      this.#options.failClosed
        ? 'rate limit service unreachable: requests are refused (RATE_LIMIT_FAIL_CLOSED); send caps are counted in this process'
        : 'rate limit service unreachable: requests are allowed (fail open); send caps are counted in this process',
    )
  }

  #failOpenOrClosed(error: unknown): LimitDecision {
    if (this.#options.failClosed) {
      this.stats.failedClosed++
      throw this.#unavailable(error)
    }
    this.stats.failedOpen++
    return ALLOWED
  }

  #unavailable(error: unknown): ServiceUnavailableError {
    return new ServiceUnavailableError(
      'unexpected_failure',
      'Rate limit service unavailable, please retry after a moment.',
      { cause: error },
    )
  }
}
