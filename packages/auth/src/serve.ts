/**
 * The commands that run the server: `serve` (start, listen, and stop gracefully on a signal) and
 * `migrate`. `cli.ts` chooses the command and reads the settings; `main.ts` wires them to the
 * process.
 *
 * @module
 */
import { buildAuthApp, type AuthDeps } from './app.js'
import type { CliIo } from './cli.js'
import { systemClock } from './clock.js'
import type { Settings } from './conf/settings.js'
import type { JwtKeys } from './crypto/jwt.js'
import { createLogger } from './logger.js'
import type { Logger } from 'pino'
import { migrate } from './storage/migrate.js'
import { openDb } from './storage/open.js'
import { apiKey } from './crypto/api-keys.js'
import { maskDatabaseUrl } from './redact.js'
import {
  describeDatabaseError,
  isDatabaseError,
  isTransientStartError,
  waitForDatabase,
} from './storage/reach.js'

/** Exit status of a start that failed: the database cannot be used, the port is taken, … */
export const START_FAILURE_EXIT_STATUS = 1

/**
 * The one line that says why the database of `DATABASE_URL` could not be used (its password
 * masked), and for how long it was tried.
 */
export function databaseFailureLine(settings: Settings, error: unknown): string {
  const { url, startRetryMs } = settings.db
  const retried =
    isTransientStartError(error) && startRetryMs > 0
      ? `; gave up after ${String(startRetryMs / 1000)} s (DB_START_RETRY_SECONDS)`
      : ''
  return `gatehouse-auth: DATABASE_URL (${maskDatabaseUrl(url)}): ${describeDatabaseError(error, url)}${retried}`
}

/**
 * The one line that says why the server could not listen on `API_HOST`:`PORT`, naming the
 * setting to change.
 */
export function listenFailureLine(settings: Settings, error: unknown): string {
  const address = `${settings.apiHost}:${String(settings.port)}`
  const { code, message } = error as { code?: unknown; message?: unknown }
  switch (code) {
    case 'EADDRINUSE':
      return `gatehouse-auth: PORT: ${address} is already in use by another program; set PORT to a free port`
    case 'EACCES':
      return `gatehouse-auth: PORT: not allowed to listen on ${address} (ports below 1024 need privileges); set PORT to 1024 or above`
    case 'EADDRNOTAVAIL':
      return `gatehouse-auth: API_HOST: ${settings.apiHost} is not an address of this machine`
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `gatehouse-auth: API_HOST: unknown host "${settings.apiHost}"`
    default:
      return `gatehouse-auth: cannot listen on ${address} (API_HOST, PORT): ${String(message)}`
  }
}

/** The line for any other failure of a start (a key that cannot be loaded, …). */
function startFailureLine(settings: Settings, error: unknown): string {
  return isDatabaseError(error)
    ? databaseFailureLine(settings, error)
    : `gatehouse-auth: cannot start: ${error instanceof Error ? error.message : String(error)}`
}

/**
 * Waits for a PostgreSQL that is briefly down (`DB_START_RETRY_SECONDS`), logging each retry at
 * `warn`; nothing to wait for with PGlite or a database given by the caller.
 *
 * @returns The failure line, or `undefined` once the database answers.
 */
async function reachDatabase(
  settings: Settings,
  logger: Logger | undefined,
  given: boolean,
): Promise<string | undefined> {
  const { url, startRetryMs } = settings.db
  if (given || url.startsWith('pglite://')) return undefined
  try {
    await waitForDatabase(url, {
      retryMs: startRetryMs,
      onRetry: (error, delayMs, attempt) => {
        logger?.warn(
          {
            component: 'db',
            database: maskDatabaseUrl(url),
            attempt,
            retry_in_ms: delayMs,
            reason: describeDatabaseError(error, url),
          },
          'database not reachable at start; retrying (DB_START_RETRY_SECONDS)',
        )
      },
    })
    return undefined
  } catch (error) {
    return databaseFailureLine(settings, error)
  }
}

/**
 * A `service_role` JWT for development: what the Supabase CLI prints as the service key
 * ({@link apiKey}).
 *
 * @param nowSeconds Unix time of `iat`; the key is valid for ten years.
 */
export function serviceRoleKey(keys: JwtKeys, nowSeconds: number): Promise<string> {
  return apiKey(keys, 'service_role', nowSeconds)
}

function displayUrl(settings: Settings, port: number): string {
  const host = ['0.0.0.0', '::', ''].includes(settings.apiHost) ? '127.0.0.1' : settings.apiHost
  return `http://${host.includes(':') ? `[${host}]` : host}:${String(port)}`
}

/**
 * `gatehouse-auth migrate`: applies pending migrations and says which; a database that cannot be
 * used is one line, as for `serve`.
 *
 * @returns The exit code.
 */
export async function migrateCommand(settings: Settings, io: CliIo): Promise<number> {
  const unreachable = await reachDatabase(settings, undefined, false)
  if (unreachable !== undefined) {
    io.err(unreachable)
    return START_FAILURE_EXIT_STATUS
  }
  let db: Awaited<ReturnType<typeof openDb>> | undefined
  try {
    db = await openDb(settings.db.url, settings.db.namespace, settings.db.maxPoolSize)
    const applied = await migrate(db)
    io.out(
      applied.length === 0 ? 'migrations: up to date' : `migrations applied: ${applied.join(', ')}`,
    )
    return 0
  } catch (error) {
    io.err(startFailureLine(settings, error))
    return START_FAILURE_EXIT_STATUS
  } finally {
    await db?.close()
  }
}

/**
 * `gatehouse-auth serve`: waits for PostgreSQL if it is briefly down (`DB_START_RETRY_SECONDS`),
 * builds the server, starts it (migrations included), listens on `API_HOST`:`PORT`, and on the
 * first signal closes it gracefully (in-flight requests finish, then the database closes). On an
 * embedded database this start created, it prints a development `service_role` key. A start that
 * fails (the database cannot be used, the port is taken) prints one line naming the setting and
 * the cause, and returns {@link START_FAILURE_EXIT_STATUS}.
 *
 * @param deps Replacements for the real dependencies; the logger defaults to `LOG_LEVEL` and
 *   `LOG_FILE`.
 * @returns The exit code, once the server has stopped after a signal.
 */
export async function serveCommand(
  settings: Settings,
  io: CliIo,
  deps: AuthDeps = {},
): Promise<number> {
  const logger = deps.logger ?? createLogger(settings.log)
  const clock = deps.clock ?? systemClock
  const unreachable = await reachDatabase(settings, logger, deps.db !== undefined)
  if (unreachable !== undefined) {
    io.err(unreachable)
    return START_FAILURE_EXIT_STATUS
  }
  const app = buildAuthApp(settings, { ...deps, logger })
  try {
    await app.start()
  } catch (error) {
    io.err(startFailureLine(settings, error))
    await app.close()
    return START_FAILURE_EXIT_STATUS
  }
  const stopped = new Promise<number>((resolve) => {
    let stopping = false
    io.onSignal((signal) => {
      if (stopping) return
      stopping = true
      logger.info({ signal }, 'shutting down')
      app.close().then(
        () => {
          logger.flush()
          resolve(0)
        },
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed')
          resolve(1)
        },
      )
    })
  })
  try {
    await app.server.listen({ host: settings.apiHost, port: settings.port })
  } catch (error) {
    io.err(listenFailureLine(settings, error))
    await app.close()
    return START_FAILURE_EXIT_STATUS
  }
  const address = app.server.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : settings.port
  io.out(`gatehouse-auth: listening on ${displayUrl(settings, port)} (database: ${app.db.kind})`)
  if (app.metricsUrl !== undefined) {
    io.out(`gatehouse-auth: Prometheus metrics on ${app.metricsUrl}`)
  }
  // A lasting admin credential on standard output: only for an embedded database this start
  // created (in memory, or a new data directory), never again for one that may hold real users.
  if (app.db.kind === 'pglite' && app.freshDatabase) {
    const key = await serviceRoleKey(app.keys, Math.floor(clock.now() / 1000))
    io.out(`gatehouse-auth: development service_role key (admin API): ${key}`)
  } else if (app.db.kind === 'pglite') {
    io.out(
      'gatehouse-auth: the development service_role key is printed only when the embedded database is created',
    )
  }
  return stopped
}
