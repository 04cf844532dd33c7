/**
 * How `npm start` shows its servers' log lines: one format for every server. `pretty` (the
 * default, for people) turns each JSON line (the auth server's pino lines, numeric or word levels;
 * the rate limit service's `LOG_FORMAT=json` lines, `@timestamp`/`@message`) into
 * `HH:MM:SS.mmm LEVEL message key=value…`, and a plain line into the same shape. `json` (for
 * machines) gives every line as one JSON object with the server's name in `service`.
 *
 * @module
 */

/** `npm start --log-format`. */
export type LogFormat = 'pretty' | 'json'

/** One line a server wrote. */
export interface ServerLine {
  /** The server's name (`auth`). */
  readonly service: string
  readonly stream: 'stdout' | 'stderr'
  readonly text: string
  /** When `npm start` read it (for lines that carry no time). */
  readonly at: Date
}

const PINO_LEVELS: Readonly<Record<number, string>> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
}

const WORD_LEVELS: Readonly<Record<string, string>> = {
  trace: 'TRACE',
  debug: 'DEBUG',
  info: 'INFO',
  warn: 'WARN',
  warning: 'WARN',
  error: 'ERROR',
  fatal: 'FATAL',
  panic: 'FATAL',
}

const LEVEL_COLORS: Readonly<Record<string, number>> = {
  TRACE: 90,
  DEBUG: 34,
  INFO: 32,
  WARN: 33,
  ERROR: 31,
  FATAL: 35,
}

/** Keys shown in the line's head, not as `key=value`. */
const HEAD_KEYS = new Set([
  'level',
  'time',
  '@timestamp',
  'msg',
  '@message',
  'message',
  'pid',
  'hostname',
  'v',
])

type Record_ = Readonly<Record<string, unknown>>

/** The line as a JSON object, or `undefined` when it is not one. */
function parseRecord(text: string): Record_ | undefined {
  if (!text.startsWith('{')) return undefined
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record_)
      : undefined
  } catch {
    return undefined
  }
}

function levelOf(record: Record_, fallback: string): string {
  const level = record.level
  if (typeof level === 'number') return PINO_LEVELS[level] ?? String(level)
  if (typeof level === 'string') return WORD_LEVELS[level.toLowerCase()] ?? level.toUpperCase()
  return fallback
}

function timeOf(record: Record_, fallback: Date): Date {
  const time = record.time ?? record['@timestamp']
  const date = typeof time === 'number' || typeof time === 'string' ? new Date(time) : fallback
  return Number.isNaN(date.getTime()) ? fallback : date
}

function messageOf(record: Record_): string {
  const message = record.msg ?? record['@message'] ?? record.message
  return typeof message === 'string'
    ? message
    : message === undefined
      ? ''
      : JSON.stringify(message)
}

/** A value as `key=value` shows it: bare when it needs no quotes, else JSON. */
function show(value: unknown): string {
  if (typeof value === 'string') return /^[^\s="]+$/.test(value) ? value : JSON.stringify(value)
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) {
    return String(value)
  }
  return JSON.stringify(value)
}

/** `HH:MM:SS.mmm` in local time. */
export function clockTime(date: Date): string {
  const pad = (n: number, width = 2): string => String(n).padStart(width, '0')
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`
}

/**
 * A line in the `pretty` format: `HH:MM:SS.mmm LEVEL message key=value…`. Fastify's request
 * fields read as `GET /path` and `200 in 1.2 ms`; an error's stack follows on indented lines. A
 * plain line is `INFO` (standard output) or `WARN` (standard error); a plain line that starts with
 * a blank (a stack frame) is kept as it is, under the line before.
 *
 * @param color Whether to color the level (ANSI).
 */
export function prettyLine(line: ServerLine, color: boolean): string {
  const paint = (level: string): string =>
    color
      ? `\u001b[${String(LEVEL_COLORS[level] ?? 0)}m${level.padEnd(5)}\u001b[0m`
      : level.padEnd(5)
  const record = parseRecord(line.text)
  if (record === undefined) {
    if (/^\s/.test(line.text)) return `${' '.repeat(19)}${line.text}`
    const level = line.stream === 'stderr' ? 'WARN' : 'INFO'
    return `${clockTime(line.at)} ${paint(level)} ${line.text}`
  }
  const parts = [messageOf(record)]
  const req = record.req as { method?: unknown; url?: unknown } | undefined
  if (typeof req?.method === 'string' && typeof req.url === 'string') {
    parts.push(`${req.method} ${req.url}`)
  }
  const res = record.res as { statusCode?: unknown } | undefined
  if (typeof res?.statusCode === 'number') {
    const ms =
      typeof record.responseTime === 'number' ? ` in ${record.responseTime.toFixed(1)} ms` : ''
    parts.push(`${String(res.statusCode)}${ms}`)
  }
  let stack = ''
  for (const [key, value] of Object.entries(record)) {
    if (HEAD_KEYS.has(key) || key === 'req' || key === 'res' || key === 'responseTime') continue
    const error = value as { message?: unknown; stack?: unknown } | undefined
    if ((key === 'err' || key === 'error') && typeof error?.message === 'string') {
      parts.push(`${key}=${show(error.message)}`)
      if (typeof error.stack === 'string') {
        stack = error.stack
          .split('\n')
          .slice(1)
          .map((frame) => `\n${' '.repeat(19)}${frame}`)
          .join('')
      }
      continue
    }
    parts.push(`${key}=${show(value)}`)
  }
  const level = levelOf(record, line.stream === 'stderr' ? 'WARN' : 'INFO')
  return `${clockTime(timeOf(record, line.at))} ${paint(level)} ${parts.filter((p) => p !== '').join(' ')}${stack}`
}

/**
 * A line in the `json` format: the server's own JSON object with `service` first, or a plain
 * line as `{ service, time, level, msg }` (`info` from standard output, `warn` from standard
 * error).
 */
export function jsonLine(line: ServerLine): string {
  const record = parseRecord(line.text)
  if (record !== undefined) return JSON.stringify({ service: line.service, ...record })
  return JSON.stringify({
    service: line.service,
    time: line.at.toISOString(),
    level: line.stream === 'stderr' ? 'warn' : 'info',
    msg: line.text,
  })
}
