/**
 * Reaching PostgreSQL at start: waiting, with back-off and for a bounded time, for a database
 * that is briefly down (`DB_START_RETRY_SECONDS`), and saying in one line why it cannot be
 * reached, with the connection string's password masked.
 *
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { DatabaseUnavailableError } from './db.js'

/** First pause between two attempts, in milliseconds; doubled after each. */
export const START_RETRY_FIRST_DELAY_MS = 250

/** Longest pause between two attempts, in milliseconds. */
export const START_RETRY_MAX_DELAY_MS = 5000

/** The driver's error behind a {@link DatabaseUnavailableError}, or the error itself. */
function driverError(error: unknown): unknown {
  return error instanceof DatabaseUnavailableError ? error.cause : error
}

/** `code`, `address` and `port` of a socket or server error, where set. */
function fieldsOf(error: unknown): { code?: unknown; address?: unknown; port?: unknown } {
  return typeof error === 'object' && error !== null ? error : {}
}

/** Socket errors and SQLSTATEs at start that may pass by themselves: retried. */
const TRANSIENT: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'EAI_AGAIN',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up, shutting down, in recovery
  '53300', // too_many_connections
])

/**
 * Whether a failure to reach the database at start may pass by itself (a server not up yet,
 * restarting, full), so that it is retried; an unknown host, database or role, or a refused
 * password, is a wrong setting and is reported at once.
 */
export function isTransientStartError(error: unknown): boolean {
  const cause = driverError(error)
  const { code } = fieldsOf(cause)
  if (typeof code === 'string') return TRANSIENT.has(code)
  if (cause instanceof AggregateError) return cause.errors.some(isTransientStartError)
  return (
    cause instanceof Error &&
    /^(Connection terminated|timeout exceeded when trying to connect)/.test(cause.message)
  )
}

/** Whether an error came from the database or its connection (not from our own code). */
export function isDatabaseError(error: unknown): boolean {
  const cause = driverError(error)
  return (
    error instanceof DatabaseUnavailableError ||
    cause instanceof pg.DatabaseError ||
    isTransientStartError(cause) ||
    fieldsOf(cause).code === 'ENOTFOUND'
  )
}

/** The host and port the URL names (PostgreSQL's defaults where it names none). */
function target(url: string): { host: string; port: string } {
  try {
    const parsed = new URL(url)
    return {
      host: parsed.searchParams.get('host') ?? (parsed.hostname || 'localhost'),
      port: parsed.port || '5432',
    }
  } catch {
    return { host: 'localhost', port: '5432' }
  }
}

/**
 * Why the database of `url` could not be used, in a few words: the socket error in plain words
 * (`connection refused by db:5432 (is PostgreSQL running there?)`, `unknown host "db"`), else
 * the server's own message (`database "auth" does not exist`, `role "ann" does not exist`,
 * `password authentication failed for user "ann"`). Never the password.
 */
export function describeDatabaseError(error: unknown, url: string): string {
  const cause = driverError(error)
  const fields = fieldsOf(cause instanceof AggregateError ? cause.errors[0] : cause)
  const named = target(url)
  const where = `${typeof fields.address === 'string' ? fields.address : named.host}:${
    typeof fields.port === 'number' ? String(fields.port) : named.port
  }`
  switch (fields.code) {
    case 'ECONNREFUSED':
      return `connection refused by ${where} (is PostgreSQL running there?)`
    case 'ENOTFOUND':
      return `unknown host "${named.host}"`
    case 'EAI_AGAIN':
      return `cannot resolve host "${named.host}" (the DNS lookup failed)`
    case 'ETIMEDOUT':
      return `no answer from ${where} (timed out)`
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EHOSTDOWN':
      return `${where} cannot be reached (no route to the host)`
    case 'ECONNRESET':
      return `${where} closed the connection`
    default:
      break
  }
  const message = cause instanceof Error ? cause.message : String(cause)
  if (/^timeout exceeded when trying to connect/.test(message)) {
    return `no answer from ${where} (timed out)`
  }
  return message.replaceAll(/\s+/g, ' ').trim()
}

/** Options of {@link waitForDatabase}. */
export interface WaitForDatabaseOptions {
  /** How long to keep trying, in milliseconds (`DB_START_RETRY_SECONDS`); 0 tries once. */
  readonly retryMs: number
  /** Told of each failed attempt that is retried, before the pause. */
  readonly onRetry?: (error: unknown, delayMs: number, attempt: number) => void
  /** Milliseconds now, for the budget. @default Date.now */
  readonly now?: () => number
  /** Waits `ms` milliseconds. @default node:timers/promises setTimeout */
  readonly sleep?: (ms: number) => Promise<void>
  /** One attempt to reach the database. @default connect and `SELECT 1` with `pg` */
  readonly attempt?: (url: string) => Promise<void>
}

/** Connects to `url`, runs `SELECT 1` and disconnects (one attempt of {@link waitForDatabase}). */
async function connectOnce(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 })
  // A connection lost mid-query rejects the query; the event must not end the process.
  client.on('error', () => undefined)
  try {
    await client.connect()
    await client.query('SELECT 1')
  } finally {
    await client.end().catch(() => undefined)
  }
}

/**
 * Waits until PostgreSQL at `url` accepts a connection and answers: a failure that may pass by
 * itself ({@link isTransientStartError}) is retried after 0.25 s, then twice as long each time
 * (at most 5 s), for `retryMs` in all; any other failure ends the wait at once.
 *
 * @throws The last attempt's error (see {@link describeDatabaseError}).
 */
export async function waitForDatabase(url: string, options: WaitForDatabaseOptions): Promise<void> {
  const { now = Date.now, attempt = connectOnce } = options
  const pause = options.sleep ?? ((ms: number) => sleep(ms))
  const giveUpAt = now() + options.retryMs
  let delay = START_RETRY_FIRST_DELAY_MS
  for (let tries = 1; ; tries++) {
    try {
      await attempt(url)
      return
    } catch (error) {
      if (!isTransientStartError(error) || now() + delay > giveUpAt) throw error
      options.onRetry?.(error, delay, tries)
      await pause(delay)
      delay = Math.min(delay * 2, START_RETRY_MAX_DELAY_MS)
    }
  }
}
