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
 * The rules of a limited operation, one per descriptor the limiter sends, in order: the client's
 * (`operation/client`) and, with `RATE_LIMIT_SERVICE_ALGORITHM=fixed_window`, the hourly one
 * (`operation/client/window=hour`).
 */
export type OperationRules = readonly [ServiceRule] | readonly [ServiceRule, ServiceRule]

/** Every rule of the auth server's domain config: the single source of the YAML and the limiter. */
export interface ServiceRules {
  readonly requests: Readonly<Record<LimitedOperation, OperationRules>>
  readonly sends: Readonly<Record<SendOperation, ServiceWindow>>
}

/**
 * The rules matching these settings: for each limited operation the client's token bucket, as a
 * `token_bucket` rule (see `serviceBucket`) or, with `RATE_LIMIT_SERVICE_ALGORITHM=fixed_window`,
 * as the burst per minute and the long-run rate per hour (see `bucketWindows`); and the
 * server-wide email and SMS caps (see `sendWindow`).
 */
export function serviceRules(settings: Settings): ServiceRules {
  const rates = requestRates(settings)
  const requests = {} as Record<LimitedOperation, OperationRules>
  for (const operation of Object.keys(rates) as LimitedOperation[]) {
    if (settings.rateLimit.serviceAlgorithm === 'token_bucket') {
      requests[operation] = [serviceBucket(rates[operation])]
      continue
    }
    const windows = bucketWindows(rates[operation])
    requests[operation] = [
      { unit: 'minute', requestsPerUnit: windows.minute },
      { unit: 'hour', requestsPerUnit: windows.hour },
    ]
  }
  return {
    requests,
    sends: {
      email_sent: sendWindow(settings.rateLimit.emailSent),
      sms_sent: sendWindow(settings.rateLimit.smsSent),
    },
  }
}

/**
 * The rate limit service's YAML domain config (envoyproxy/ratelimit format) of
 * {@link serviceRules}: each operation's first rule on `operation/client`, a second one on
 * `operation/client/window=hour`, and the send caps on `operation=email_sent` and `sms_sent`.
 * Deploy it in the service's runtime config directory; `gatehouse-auth ratelimit-config` prints
 * it, and `packages/auth/examples/ratelimit-gatehouse-auth.yaml` (and
 * `ratelimit-gatehouse-auth-fixed-window.yaml`) is its output for the defaults.
 *
 * @returns YAML text with domain `RATE_LIMIT_DOMAIN`.
 */
export function rateLimitServiceConfig(settings: Settings): string {
  const rules = serviceRules(settings)
  let yaml =
    '# The rate limit service config of @gatehouse/auth, generated from its settings by\n' +
    '# `gatehouse-auth ratelimit-config` (RATE_LIMIT_* and MFA_RATE_LIMIT_CHALLENGE_AND_VERIFY).\n' +
    `domain: '${settings.rateLimit.domain.replaceAll("'", "''")}'\ndescriptors:\n`
  for (const [operation, [client, hourly]] of Object.entries(rules.requests)) {
    yaml +=
      `  - key: ${DESCRIPTOR.operation}\n    value: ${operation}\n    descriptors:\n` +
      `      - key: ${DESCRIPTOR.client}\n` +
      rateLimit(client, '        ')
    if (hourly !== undefined) {
      yaml +=
        `        descriptors:\n          - key: ${DESCRIPTOR.window}\n            value: hour\n` +
        rateLimit(hourly, '            ')
    }
  }
  for (const [operation, window] of Object.entries(rules.sends)) {
    yaml +=
      `  - key: ${DESCRIPTOR.operation}\n    value: ${operation}\n` + rateLimit(window, '    ')
  }
  return yaml
}
