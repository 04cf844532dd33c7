import { REDACT_CENSOR, REDACT_PATHS, redactUrl } from '@gatehouse/settings'
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
 * The `level` of each JSON line as a word, logrus's (`"level":"info"`, `"warning"`), as GoTrue
 * writes it, instead of pino's numbers: log pipelines that filter GoTrue's lines keep working.
 */
export const LEVEL_WORDS: Readonly<Record<string, string>> = {
  trace: 'trace',
  debug: 'debug',
  info: 'info',
  warn: 'warning',
  error: 'error',
  fatal: 'fatal',
}

/** The request as Fastify's request log sees it (`FastifyRequest`'s logged fields). */
interface LoggedRequest {
  readonly method: string
  readonly url: string
  readonly host?: string
  readonly ip?: string
  readonly headers?: Readonly<Record<string, string | string[] | undefined>>
  readonly socket?: { readonly remotePort?: number | undefined }
}

/**
 * The `req` of a request log line: Fastify's default fields, with the values of secret query
 * parameters censored (`GET /verify?token=…`, `?code=`, `token_hash`, `nonce`; see `redactUrl`
 * of `@gatehouse/settings`), since a mailed link's token signs its holder in.
 */
export function serializeRequest(request: LoggedRequest): unknown {
  // Anything else logged under `req` is left to the redaction paths.
  if (typeof request !== 'object' || typeof request.url !== 'string') return request
  return {
    method: request.method,
    url: redactUrl(request.url),
    version: request.headers?.['accept-version'],
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  }
}

/**
 * The server's pino logger: JSON lines, `LOG_LEVEL`, to `LOG_FILE` (appended) or standard output,
 * with {@link REDACT_PATHS} censored, request URLs logged through {@link serializeRequest}, and
 * levels as words ({@link LEVEL_WORDS}).
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
      formatters: { level: (label) => ({ level: LEVEL_WORDS[label] ?? label }) },
      serializers: { req: serializeRequest },
      base: { component: 'api' },
    },
    stream,
  )
}
