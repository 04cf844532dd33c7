import type { Settings } from '../conf/settings.js'
import type { LimitedOperation } from './limiter.js'
import {
  bucketWindows,
  requestRates,
  sendWindow,
  serviceBucket,
  type ServiceRule,
  type ServiceWindow,
} from './rates.js'

/** Descriptor keys and values the auth server sends to the rate limit service. */
export const DESCRIPTOR = {
  /** First entry of every descriptor: the limited operation, `email_sent` or `sms_sent`. */
  operation: 'operation',
  /** Second entry of a request limit: the client key (each value counted on its own). */
  client: 'client',
  /**
   * Third entry (`window=hour`) of the hourly half of a request limit, with
   * `RATE_LIMIT_SERVICE_ALGORITHM=fixed_window`.
   */
  window: 'window',
} as const

/** The global send caps counted by the service, beside the {@link LimitedOperation}s. */
export type SendOperation = 'email_sent' | 'sms_sent'

function rateLimit(rule: ServiceRule, indent: string): string {
  const bucket =
    rule.burst === undefined
      ? ''
      : `${indent}  algorithm: token_bucket\n${indent}  burst: ${String(rule.burst)}\n`
  return `${indent}rate_limit:\n${indent}  unit: ${rule.unit}\n${indent}  requests_per_unit: ${String(rule.requestsPerUnit)}\n${bucket}`
}

/**
 * The rate limit service's YAML domain config (envoyproxy/ratelimit format) matching these
 * settings: for each limited operation, the client's bucket on the `operation/client`
 * descriptor, as a `token_bucket` rule (see `serviceBucket`) or, with
 * `RATE_LIMIT_SERVICE_ALGORITHM=fixed_window`, as the burst per minute there and the long-run
 * rate per hour on `operation/client/window=hour` (see `bucketWindows`); and the server-wide email
 * and SMS caps. Deploy it in the service's runtime config directory; `gatehouse-auth
 * ratelimit-config` prints it, and `packages/auth/examples/ratelimit-gatehouse-auth.yaml` (and
 * `ratelimit-gatehouse-auth-fixed-window.yaml`) is its output for the defaults.
 *
 * @returns YAML text with domain `RATE_LIMIT_DOMAIN`.
 */
export function rateLimitServiceConfig(settings: Settings): string {
  const rates = requestRates(settings)
  let yaml =
    '# The rate limit service config of @gatehouse/auth, generated from its settings by\n' +
    '# `gatehouse-auth ratelimit-config` (RATE_LIMIT_* and MFA_RATE_LIMIT_CHALLENGE_AND_VERIFY).\n' +
    `domain: '${settings.rateLimit.domain.replaceAll("'", "''")}'\ndescriptors:\n`
  for (const operation of Object.keys(rates) as LimitedOperation[]) {
    yaml +=
      `  - key: ${DESCRIPTOR.operation}\n    value: ${operation}\n    descriptors:\n` +
      `      - key: ${DESCRIPTOR.client}\n`
    if (settings.rateLimit.serviceAlgorithm === 'token_bucket') {
      yaml += rateLimit(serviceBucket(rates[operation]), '        ')
      continue
    }
    const windows = bucketWindows(rates[operation])
    yaml +=
      rateLimit({ unit: 'minute', requestsPerUnit: windows.minute }, '        ') +
      `        descriptors:\n          - key: ${DESCRIPTOR.window}\n            value: hour\n` +
      rateLimit({ unit: 'hour', requestsPerUnit: windows.hour }, '            ')
  }
  const sends: [SendOperation, ServiceWindow][] = [
    ['email_sent', sendWindow(settings.rateLimit.emailSent)],
    ['sms_sent', sendWindow(settings.rateLimit.smsSent)],
  ]
  for (const [operation, window] of sends) {
    yaml +=
      `  - key: ${DESCRIPTOR.operation}\n    value: ${operation}\n` + rateLimit(window, '    ')
  }
  return yaml
}
