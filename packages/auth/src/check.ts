/**
 * `gatehouse-auth check`: the settings are valid (`cli.ts` has read them; every problem at once,
 * exit status 2 otherwise), and with `--connect` the database, and the SMTP server when
 * `SMTP_HOST` is set, are reached as the server would reach them: one line each (standard error
 * for one that cannot be reached), exit status 1 when one cannot be reached. No password is printed: URLs are shown without theirs, and one
 * that an error message repeats is censored.
 *
 * @module
 */
import type { CliIo } from './cli.js'
import { systemClock } from './clock.js'
import type { Settings } from './conf/settings.js'
import { SmtpMailer } from './mailer/smtp.js'
import { pendingMigrations } from './storage/migrate.js'
import { openDb } from './storage/open.js'
import { describeDatabaseError } from './storage/reach.js'
import { censor, maskDatabaseUrl, urlPasswords } from './redact.js'

/** The exit status when a service the settings name cannot be reached. */
export const CHECK_UNREACHABLE_EXIT_STATUS = 1

/** How long `--connect` waits for each service, in milliseconds. */
const CONNECT_TIMEOUT_MS = 10_000

/** Options of {@link checkCommand}. */
export interface CheckOptions {
  /** `--connect`: reach the database and the SMTP server. */
  readonly connect: boolean
  /** How long to wait for each service, in milliseconds. @default 10000 */
  readonly timeoutMs?: number
}

/** Resolves with `work`, or rejects when it takes longer than `timeoutMs`. */
async function within<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`no answer from ${what} within ${String(timeoutMs / 1000)}s`))
    }, timeoutMs)
  })
  try {
    return await Promise.race([work, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** One line about the database: reachable and how current its schema is, or why not. */
async function databaseLine(settings: Settings, timeoutMs: number): Promise<[string, boolean]> {
  const { url, namespace } = settings.db
  if (url.startsWith('pglite://')) {
    // Opening it would create it, and two processes must not open one data directory.
    return [`database: embedded PGlite (${url}), nothing to reach`, true]
  }
  const shown = maskDatabaseUrl(url)
  try {
    const pending = await within(
      (async () => {
        const db = await openDb(url, namespace, 1)
        try {
          return await pendingMigrations(db)
        } finally {
          await db.close()
        }
      })(),
      timeoutMs,
      'the database',
    )
    const schema =
      pending.length === 0
        ? 'schema up to date'
        : `${String(pending.length)} migration(s) pending (${pending.join(', ')}; serve and migrate apply them)`
    return [`database: reachable (${shown}), ${schema}`, true]
  } catch (error) {
    const reason = censor(describeDatabaseError(error, url), urlPasswords(url))
    return [`database: unreachable (${shown}): ${reason}`, false]
  }
}

/** One line about the SMTP server (`SMTP_HOST`), if one is set. */
async function smtpLine(settings: Settings, timeoutMs: number): Promise<[string, boolean]> {
  const { host, port, pass } = settings.smtp
  if (host === '') return ['smtp: SMTP_HOST is not set, no mail is sent', true]
  const where = `${host}:${String(port)}`
  try {
    await within(
      new SmtpMailer(settings, { clock: systemClock, timeoutMs }).verify(),
      timeoutMs,
      'the SMTP server',
    )
    return [`smtp: reachable (${where})`, true]
  } catch (error) {
    const reason = censor(error instanceof Error ? error.message : String(error), [pass])
    return [`smtp: unreachable (${where}): ${reason}`, false]
  }
}

/**
 * `gatehouse-auth check [--connect]` once the settings are read.
 *
 * @returns The exit status: 0, or {@link CHECK_UNREACHABLE_EXIT_STATUS}.
 */
export async function checkCommand(
  settings: Settings,
  io: CliIo,
  options: CheckOptions,
): Promise<number> {
  io.out('settings: ok')
  if (!options.connect) return 0
  const timeoutMs = options.timeoutMs ?? CONNECT_TIMEOUT_MS
  const lines = await Promise.all([
    databaseLine(settings, timeoutMs),
    smtpLine(settings, timeoutMs),
  ])
  for (const [line, reachable] of lines) {
    if (reachable) io.out(line)
    else io.err(line)
  }
  return lines.every(([, reachable]) => reachable) ? 0 : CHECK_UNREACHABLE_EXIT_STATUS
}
