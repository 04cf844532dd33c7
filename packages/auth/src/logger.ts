import { REDACT_CENSOR, REDACT_PATHS } from '@gatehouse/settings'
import pino, { type Logger } from 'pino'
import type { LogLevel } from './conf/settings.js'

/**
 * Paths removed from every log line: the redaction list both servers share (passwords, tokens,
 * secrets, credentials in headers and cookies, secret settings such as `JWT_SECRET`).
 */
export { REDACT_PATHS }

const LEVELS: Readonly<Record<LogLevel, pino.LevelWithSilent>> = {
  panic: 'fatal',
  fatal: 'fatal',
  error: 'error',
  warn: 'warn',
  info: 'info',
  debug: 'debug',
  trace: 'trace',
}

/**
 * Query parameters whose values never reach logs: one-time codes, OAuth states and verifiers,
 * tokens (`/callback?code=…&state=…`, `/verify?token=…`).
 */
const SECRET_QUERY_PARAMETERS: ReadonlySet<string> = new Set([
  'code',
  'state',
  'oauth_token',
  'oauth_verifier',
  'token',
  'token_hash',
  'access_token',
  'refresh_token',
  'code_verifier',
])

/** `url` with the values of {@link SECRET_QUERY_PARAMETERS} censored. */
export function censorUrl(url: string): string {
  const mark = url.indexOf('?')
  if (mark === -1) return url
  const params = new URLSearchParams(url.slice(mark + 1))
  let censored = false
  for (const key of new Set(params.keys())) {
    if (SECRET_QUERY_PARAMETERS.has(key)) {
      params.set(key, REDACT_CENSOR)
      censored = true
    }
  }
  return censored ? `${url.slice(0, mark)}?${params.toString()}` : url
}

/**
 * The `req` of a log line: for a Fastify request, Fastify's fields (method, URL, version, host,
 * remote address and port); any other object as given. The URL goes through {@link censorUrl}.
 */
function requestSerializer(req: unknown): unknown {
  if (typeof req !== 'object' || req === null) return req
  const r = req as {
    raw?: unknown
    method?: string
    url?: unknown
    headers?: Record<string, unknown>
    host?: string
    ip?: string
    socket?: { remotePort?: number }
  }
  const url = typeof r.url === 'string' ? censorUrl(r.url) : r.url
  if (r.raw === undefined) return { ...r, url }
  return {
    method: r.method,
    url,
    version: r.headers?.['accept-version'],
    host: r.host,
    remoteAddress: r.ip,
    remotePort: r.socket?.remotePort,
  }
}

/**
 * The server's pino logger: JSON lines, `LOG_LEVEL`, to `LOG_FILE` (appended) or standard output,
 * with {@link REDACT_PATHS} censored, and request URLs through {@link censorUrl}.
 *
 * @param destination A stream for tests. @default LOG_FILE or stdout
 */
export function createLogger(
  options: { level: LogLevel; file: string },
  destination?: pino.DestinationStream,
): Logger {
  const stream =
    destination ??
    (options.file !== ''
      ? pino.destination({ dest: options.file, append: true, mkdir: true, sync: false })
      : pino.destination({ dest: 1, sync: false }))
  return pino(
    {
      level: LEVELS[options.level],
      redact: { paths: [...REDACT_PATHS], censor: REDACT_CENSOR },
      serializers: { req: requestSerializer },
      base: { component: 'api' },
    },
    stream,
  )
}
