/**
 * Logging with pino, configured from `LOG_LEVEL` and `LOG_FORMAT` (upstream uses logrus):
 * `json` writes objects with `@timestamp`, `@message` and `level`; `text` (the default) writes
 * logrus-style `time="…" level=… msg="…"` lines. Logs go to standard error. Secrets are censored
 * with the redaction list both servers share (`REDACT_PATHS` of `@gatehouse/settings`).
 *
 * @module
 */
import { Writable } from 'node:stream'
import { REDACT_CENSOR, REDACT_PATHS } from '@gatehouse/settings'
import { pino, type Logger } from 'pino'
import { systemClock, type Clock } from './clock.js'
import type { LogLevel } from './settings/settings.js'

/** Logrus level names, as upstream prints them. */
const LOGRUS_LEVELS: Readonly<Record<string, string>> = {
  trace: 'trace',
  debug: 'debug',
  info: 'info',
  warn: 'warning',
  error: 'error',
  fatal: 'fatal',
}

function textLine(line: string): string {
  try {
    const record = JSON.parse(line) as Record<string, unknown>
    const { '@timestamp': time, '@message': msg, level, ...rest } = record
    let out = `time=${JSON.stringify(time)} level=${String(level)} msg=${JSON.stringify(msg ?? '')}`
    for (const [key, value] of Object.entries(rest)) out += ` ${key}=${JSON.stringify(value)}`
    return `${out}\n`
  } catch {
    return line
  }
}

/**
 * Creates the service logger.
 *
 * @param destination Where lines go. @default process.stderr
 * @param clock The time of each line (`@timestamp`). @default {@link systemClock}
 */
export function createLogger(
  options: { level: LogLevel; format: 'text' | 'json' },
  destination: Writable = process.stderr,
  clock: Clock = systemClock,
): Logger {
  const stream =
    options.format === 'json'
      ? destination
      : new Writable({
          write(chunk: Buffer, _encoding, callback) {
            destination.write(
              chunk
                .toString('utf8')
                .split('\n')
                .filter((l) => l !== '')
                .map(textLine)
                .join(''),
            )
            callback()
          },
        })
  return pino(
    {
      level: options.level,
      base: undefined,
      messageKey: '@message',
      timestamp: () => `,"@timestamp":"${new Date(clock.now()).toISOString()}"`,
      formatters: { level: (label) => ({ level: LOGRUS_LEVELS[label] ?? label }) },
      redact: { paths: [...REDACT_PATHS], censor: REDACT_CENSOR },
    },
    stream,
  )
}

/**
 * The logger for the lines every worker of the executable would write alike (configuration loads,
 * the backend's connections, start-up): the worker's own logger in the first worker (or a single
 * process); in the others, one that writes them only at `LOG_LEVEL=debug` or `trace` (then with
 * the worker's number), so that at the usual levels each such line appears once.
 *
 * @param lead Whether this process writes them (the first worker, or the only process).
 * @param worker The worker's number, for the lines the others write at debug level.
 */
export function sharedLinesLogger(logger: Logger, lead: boolean, worker: number): Logger {
  if (lead) return logger
  return logger.child(
    { worker },
    { level: logger.isLevelEnabled('debug') ? logger.level : 'silent' },
  )
}
