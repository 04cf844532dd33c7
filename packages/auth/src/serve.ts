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
import { migrate } from './storage/migrate.js'
import { openDb } from './storage/open.js'
import { apiKey } from './tokens/api-keys.js'

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
 * `gatehouse-auth migrate`: applies pending migrations and says which.
 *
 * @returns The exit code.
 */
export async function migrateCommand(settings: Settings, io: CliIo): Promise<number> {
  const db = await openDb(settings.db.url, settings.db.namespace, settings.db.maxPoolSize)
  try {
    const applied = await migrate(db)
    io.out(
      applied.length === 0 ? 'migrations: up to date' : `migrations applied: ${applied.join(', ')}`,
    )
    return 0
  } finally {
    await db.close()
  }
}

/**
 * `gatehouse-auth serve`: builds the server, starts it (migrations included), listens on
 * `API_HOST`:`PORT`, and on the first signal closes it gracefully (in-flight requests finish,
 * then the database closes). On an embedded database this start created, it prints a development
 * `service_role` key.
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
  const app = buildAuthApp(settings, { ...deps, logger })
  await app.start()
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
  await app.server.listen({ host: settings.apiHost, port: settings.port })
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
