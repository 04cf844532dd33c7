import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import type { Clock } from './clock.js'
import type { Settings } from './conf/settings.js'
import { JwtKeys } from './crypto/jwt.js'
import { buildServer, type ServerDeps } from './server.js'
import type { Db } from './storage/db.js'
import { migrate, readMigrations } from './storage/migrate.js'
import { openDb } from './storage/open.js'

/** A ready server with the database it owns. */
export interface AuthApp {
  readonly server: FastifyInstance
  readonly db: Db
  readonly keys: JwtKeys
  /**
   * Whether this start created the database's schema (it applied the first migration): an
   * in-memory database always, a PGlite directory or a PostgreSQL schema only the first time.
   */
  readonly freshDatabase: boolean
  /** Closes the server (draining requests), then the database. */
  close(): Promise<void>
}

/**
 * Opens the database of `settings`, applies pending migrations, loads the JWT keys and builds the
 * server (not listening).
 *
 * @param deps Optional services (clock, mailer, …) passed on to {@link buildServer}.
 * @throws {Error} When the database cannot be reached or a key cannot be imported.
 */
export async function createAuthApp(
  settings: Settings,
  deps: Partial<Omit<ServerDeps, 'db' | 'keys'>> & { clock?: Clock; logger?: Logger } = {},
): Promise<AuthApp> {
  const keys = await JwtKeys.load(settings.jwt)
  const db = await openDb(settings.db.url, settings.db.namespace, settings.db.maxPoolSize)
  let freshDatabase: boolean
  try {
    const migrations = await readMigrations()
    const applied = await migrate(db, migrations)
    freshDatabase = migrations[0] !== undefined && applied.includes(migrations[0].version)
  } catch (error) {
    await db.close()
    throw error
  }
  const server = buildServer(settings, { ...deps, db, keys })
  return {
    server,
    db,
    keys,
    freshDatabase,
    async close() {
      await server.close()
      await db.close()
    },
  }
}
