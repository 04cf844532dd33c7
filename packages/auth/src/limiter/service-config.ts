import type { Settings } from '../conf/settings.js'
import type { LimitedOperation } from './limiter.js'
import { bucketWindows, requestRates, sendWindow, type ServiceWindow } from './rates.js'

/** Descriptor keys and values the auth server sends to the rate limit service. */
export const DESCRIPTOR = {
  /** First entry of every descriptor: the limited operation, `email_sent` or `sms_sent`. */
  operation: 'operation',
  /** Second entry of a request limit: the client key (each value counted on its own). */
  client: 'client',
  /** Third entry (`window=hour`) of the hourly half of a request limit. */
  window: 'window',
} as const

/** The global send caps counted by the service, beside the {@link LimitedOperation}s. */
export type SendOperation = 'email_sent' | 'sms_sent'

function rateLimit(window: ServiceWindow, indent: string): string {
  return `${indent}rate_limit:\n${indent}  unit: ${window.unit}\n${indent}  requests_per_unit: ${String(window.requestsPerUnit)}\n`
}

/**
 * The rate limit service's YAML domain config (envoyproxy/ratelimit format) matching these
 * settings: for each limited operation, the client's burst per minute and its long-run rate per
 * hour (see `bucketWindows`), and the server-wide email and SMS caps. Deploy it in the service's
 * runtime config directory; `gatehouse-auth ratelimit-config` prints it, and
 * `packages/auth/examples/ratelimit-gatehouse-auth.yaml` is its output for the defaults.
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
    const windows = bucketWindows(rates[operation])
    yaml +=
      `  - key: ${DESCRIPTOR.operation}\n    value: ${operation}\n    descriptors:\n` +
      `      - key: ${DESCRIPTOR.client}\n` +
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
