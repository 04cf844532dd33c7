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
  'SMTP_PASS',
  'AUTHSVC_SMTP_PASS',
  'GOTRUE_SMTP_PASS',
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

/**
 * Query-string parameters whose values are credentials: {@link SECRET_KEYS} and the one-time
 * values of mailed links and redirects (`token_hash`, the PKCE `code`, `auth_code` and
 * `code_verifier`, the reauthentication `nonce`, OAuth `state`, the auth server's identity
 * `link_ticket`, and OAuth 1.0a `oauth_token` and `oauth_verifier`). `code` is a secret only in a
 * URL: as a log key it is an error code, so it is not in {@link SECRET_KEYS}.
 */
export const SECRET_QUERY_PARAMS: readonly string[] = Object.freeze([
  ...SECRET_KEYS,
  'token_hash',
  'code',
  'auth_code',
  'code_verifier',
  'nonce',
  'state',
  'link_ticket',
  'oauth_token',
  'oauth_verifier',
])

const secretParams = new Set(SECRET_QUERY_PARAMS.map((name) => name.toLowerCase()))

/** A query-string name decoded (`+` as space), or as written when its escapes are malformed. */
function paramName(raw: string): string {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' ')).toLowerCase()
  } catch {
    return raw.toLowerCase()
  }
}

/**
 * A request target (`/verify?token=…&type=signup`) with the value of every
 * {@link SECRET_QUERY_PARAMS} parameter (names compared case-insensitively, percent-escapes
 * decoded) replaced by {@link REDACT_CENSOR}; everything else is kept as written, so that a log
 * still shows what was asked for. For logging request URLs.
 *
 * @example `redactUrl('/verify?token=abc&type=signup')` is
 *   `'/verify?token=[redacted]&type=signup'`.
 */
export function redactUrl(url: string): string {
  const query = url.indexOf('?')
  if (query === -1) return url
  const fragment = url.indexOf('#', query)
  const end = fragment === -1 ? url.length : fragment
  const params = url
    .slice(query + 1, end)
    .split('&')
    .map((part) => {
      const equals = part.indexOf('=')
      const name = equals === -1 ? part : part.slice(0, equals)
      return equals !== -1 && secretParams.has(paramName(name)) ? `${name}=${REDACT_CENSOR}` : part
    })
  return `${url.slice(0, query + 1)}${params.join('&')}${url.slice(end)}`
}
