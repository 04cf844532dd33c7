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
 * The server's pino logger: JSON lines, `LOG_LEVEL`, to `LOG_FILE` (appended) or standard output,
 * with {@link REDACT_PATHS} censored.
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
      base: { component: 'api' },
    },
    stream,
  )
}
