/**
 * The auth server's counters, behind an interface the services are given (`AppContext.metrics`),
 * so that no service imports the OpenTelemetry SDK and a server with `METRICS_ENABLED=false`
 * records nothing ({@link noAuthMetrics}).
 *
 * Instrument names (as the OTLP exporter sends them; Prometheus replaces the dots with
 * underscores and adds `_total` to counters):
 * - `http.server.request.duration` (histogram, seconds; `http.request.method`, `http.route`,
 *   `http.response.status_code`), the OpenTelemetry HTTP server convention;
 * - `auth.signups` (`provider`: email, phone, anonymous), `auth.signins` (`method`: the session's
 *   authentication method, `password`, `otp`, `oauth`, `anonymous`, …), `auth.token_refreshes`,
 *   `auth.refresh_token_reuse_detections`, `auth.mails_sent` (`kind`), `auth.sms_sent`
 *   (`channel`), `auth.rate_limited_requests` (`http.route`, `error_code`);
 * - with `RATE_LIMIT_BACKEND=ratelimit`: `auth.rate_limit_service.decisions` (decisions asked of
 *   the service), `auth.rate_limit_service.failures` (`auth.rate_limit_service.fail_mode`: `open`,
 *   the request allowed, or `closed`, refused with 503) and
 *   `auth.rate_limit_service.config_mismatches` (answers whose limit is not the settings' rule),
 *   read from the limiter's counters at each collection;
 * - `db.client.connection.count` (`db.client.connection.state`: idle, used),
 *   `db.client.connection.max`, `db.client.connection.pending_requests`: the pool gauges of the
 *   OpenTelemetry database client convention.
 *
 * @see https://opentelemetry.io/docs/specs/semconv/http/http-metrics/
 * @see https://opentelemetry.io/docs/specs/semconv/database/database-metrics/
 * @module
 */
import type { Meter } from '@opentelemetry/api'
import type { ServiceLimiterStats } from '../limiter/service-limiter.js'
import type { PoolStats } from '../storage/db.js'

/** A finished HTTP request, as the metrics record it. */
export interface RequestRecord {
  /** `GET`, `POST`, … */
  readonly method: string
  /** The parametrized route (`/admin/users/:user_id`); undefined when no route matched. */
  readonly route: string | undefined
  readonly status: number
  /** GoTrue's `error_code` of an error answer (`x-sb-error-code`), else undefined. */
  readonly errorCode: string | undefined
  /** Time from the request's arrival to the response's end, in seconds. */
  readonly seconds: number
}

/** What the services count. Every method is cheap and never throws. */
export interface AuthMetrics {
  /** A user signed up (`provider`: `email`, `phone` or `anonymous`). */
  signUp(provider: string): void
  /** A session started; `method` is its authentication method (the `amr` entry). */
  signIn(method: string): void
  /** A refresh token was exchanged. */
  tokenRefresh(): void
  /** A revoked refresh token was presented again outside the reuse interval. */
  refreshTokenReuse(): void
  /** A mail was handed to the SMTP server (`kind`: `confirmation`, `recovery`, …). */
  mailSent(kind: string): void
  /** An SMS (or WhatsApp message) was accepted by the provider. */
  smsSent(channel: string): void
  /** An HTTP request finished (answers 429 are also counted as rate-limited requests). */
  request(record: RequestRecord): void
}

const nothing = (): void => undefined

/** The {@link AuthMetrics} of a server without metrics: every call does nothing. */
export const noAuthMetrics: AuthMetrics = {
  signUp: nothing,
  signIn: nothing,
  tokenRefresh: nothing,
  refreshTokenReuse: nothing,
  mailSent: nothing,
  smsSent: nothing,
  request: nothing,
}

/** Bucket boundaries (seconds) the HTTP convention advises for `http.server.request.duration`. */
export const DURATION_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
] as const

/**
 * {@link AuthMetrics} on an OpenTelemetry meter, with the pool gauges read from `pool` at each
 * collection (left out while it returns undefined: before the database is open, or PGlite), and
 * the rate limit service's counters from `rateLimit` (left out while it returns undefined: the
 * memory backend).
 */
export function meterAuthMetrics(
  meter: Meter,
  pool: () => PoolStats | undefined,
  rateLimit: () => Readonly<ServiceLimiterStats> | undefined = () => undefined,
): AuthMetrics {
  const duration = meter.createHistogram('http.server.request.duration', {
    description: 'Duration of HTTP server requests.',
    unit: 's',
    advice: { explicitBucketBoundaries: [...DURATION_BUCKETS] },
  })
  const counter = (name: string, description: string) => meter.createCounter(name, { description })
  const signups = counter('auth.signups', 'Users signed up.')
  const signins = counter('auth.signins', 'Sessions started, by authentication method.')
  const refreshes = counter('auth.token_refreshes', 'Refresh tokens exchanged.')
  const reuses = counter(
    'auth.refresh_token_reuse_detections',
    'Revoked refresh tokens presented again (reuse detection).',
  )
  const mails = counter('auth.mails_sent', 'Mails handed to the SMTP server.')
  const sms = counter('auth.sms_sent', 'SMS messages accepted by the provider.')
  const limited = counter('auth.rate_limited_requests', 'Requests answered 429.')

  const connections = meter.createObservableGauge('db.client.connection.count', {
    description: 'Connections of the pool, by state.',
    unit: '{connection}',
  })
  const max = meter.createObservableGauge('db.client.connection.max', {
    description: 'Most connections the pool opens.',
    unit: '{connection}',
  })
  const pending = meter.createObservableGauge('db.client.connection.pending_requests', {
    description: 'Queries waiting for a connection.',
    unit: '{request}',
  })
  meter.addBatchObservableCallback(
    (result) => {
      const stats = pool()
      if (stats === undefined) return
      const base = { 'db.client.connection.pool.name': 'auth' }
      result.observe(connections, stats.idle, { ...base, 'db.client.connection.state': 'idle' })
      result.observe(connections, stats.total - stats.idle, {
        ...base,
        'db.client.connection.state': 'used',
      })
      result.observe(max, stats.max, base)
      result.observe(pending, stats.waiting, base)
    },
    [connections, max, pending],
  )

  const decisions = meter.createObservableCounter('auth.rate_limit_service.decisions', {
    description: 'Rate limit decisions asked of the rate limit service.',
    unit: '{decision}',
  })
  const failures = meter.createObservableCounter('auth.rate_limit_service.failures', {
    description: 'Decisions the rate limit service could not give, by what the request got.',
    unit: '{decision}',
  })
  const mismatches = meter.createObservableCounter('auth.rate_limit_service.config_mismatches', {
    description:
      'Answers whose limit is not the rule these settings give (stale or missing config).',
    unit: '{decision}',
  })
  const degraded = meter.createObservableCounter('auth.rate_limit_service.degraded', {
    description:
      'Decisions the rate limit service made from its local counters while its store failed (its BACKEND_FAILURE_MODE=local).',
    unit: '{decision}',
  })
  meter.addBatchObservableCallback(
    (result) => {
      const stats = rateLimit()
      if (stats === undefined) return
      result.observe(decisions, stats.calls)
      result.observe(failures, stats.failedOpen, { 'auth.rate_limit_service.fail_mode': 'open' })
      result.observe(failures, stats.failedClosed, {
        'auth.rate_limit_service.fail_mode': 'closed',
      })
      // A send cap decided by the in-process cap, and a request the service refused.
      result.observe(failures, stats.sendFallbacks, {
        'auth.rate_limit_service.fail_mode': 'fallback',
      })
      result.observe(failures, stats.refused, {
        'auth.rate_limit_service.fail_mode': 'refused',
      })
      result.observe(mismatches, stats.configMismatches)
      result.observe(degraded, stats.degraded)
    },
    [decisions, failures, mismatches, degraded],
  )

  return {
    signUp: (provider) => {
      signups.add(1, { provider })
    },
    signIn: (method) => {
      signins.add(1, { method })
    },
    tokenRefresh: () => {
      refreshes.add(1)
    },
    refreshTokenReuse: () => {
      reuses.add(1)
    },
    mailSent: (kind) => {
      mails.add(1, { kind })
    },
    smsSent: (channel) => {
      sms.add(1, { channel })
    },
    request: (r) => {
      const attributes: Record<string, string | number> = {
        'http.request.method': r.method,
        'http.response.status_code': r.status,
      }
      if (r.route !== undefined) attributes['http.route'] = r.route
      duration.record(r.seconds, attributes)
      if (r.status === 429) {
        limited.add(1, {
          ...(r.route !== undefined ? { 'http.route': r.route } : {}),
          error_code: r.errorCode ?? '',
        })
      }
    },
  }
}
