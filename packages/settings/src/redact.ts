/**
 * What never reaches a log, for both servers' pino loggers: one list.
 *
 * @module
 */

/**
 * Keys whose values are credentials, wherever they stand (top level or one level down): passwords,
 * tokens, secrets, credentials in headers, and the servers' secret settings by their variable
 * names (for a logged environment).
 */
export const SECRET_KEYS: readonly string[] = Object.freeze([
  'password',
  'new_password',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'provider_token',
  'provider_refresh_token',
  'secret',
  'client_secret',
  'jwtSecret',
  'auth',
  'authorization',
  'cookie',
  'apikey',
  'JWT_SECRET',
  'AUTHSVC_JWT_SECRET',
  'GOTRUE_JWT_SECRET',
  'JWT_KEYS',
  'AUTHSVC_JWT_KEYS',
  'GOTRUE_JWT_KEYS',
  'DATABASE_URL',
  'AUTHSVC_DB_DATABASE_URL',
  'GOTRUE_DB_DATABASE_URL',
  'REDIS_AUTH',
  'KVSTORE_AUTH',
  'REDIS_PERSECOND_AUTH',
  'KVSTORE_PERSECOND_AUTH',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
])

/** HTTP headers that carry credentials, redacted in any `headers` object (`req.headers`, …). */
export const SECRET_HEADERS: readonly string[] = Object.freeze([
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'apikey',
  'x-api-key',
])

const property = (key: string): string =>
  /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`

/**
 * pino `redact` paths for {@link SECRET_KEYS} (`password`, `*.password`, …) and
 * {@link SECRET_HEADERS} (`headers.cookie`, `*.headers.cookie`, `*.headers["set-cookie"]`, …).
 *
 * @example
 *
 * ```ts
 * import { pino } from 'pino'
 * import { REDACT_CENSOR, REDACT_PATHS } from '@gatehouse/settings'
 *
 * const logger = pino({ redact: { paths: [...REDACT_PATHS], censor: REDACT_CENSOR } })
 * ```
 */
export const REDACT_PATHS: readonly string[] = Object.freeze([
  ...SECRET_KEYS.flatMap((key) => [key, `*${property(key)}`]),
  ...SECRET_HEADERS.flatMap((name) => [`headers${property(name)}`, `*.headers${property(name)}`]),
])

/** What a redacted value is replaced with. */
export const REDACT_CENSOR = '[redacted]'
