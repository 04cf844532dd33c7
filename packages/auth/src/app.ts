import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import type { Clock } from './clock.js'
import type { Settings } from './conf/settings.js'
import { JwtKeys } from './crypto/jwt.js'
import { buildServer, type ServerDeps } from './server.js'
import type { Db } from './storage/db.js'
import { migrate } from './storage/migrate.js'
import { openDb } from './storage/open.js'

/** A ready server with the database it owns. */
export interface AuthApp {
  readonly server: FastifyInstance
  readonly db: Db
  readonly keys: JwtKeys
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
  try {
    await migrate(db)
  } catch (error) {
    await db.close()
    throw error
  }
  const server = buildServer(settings, { ...deps, db, keys })
  return {
    server,
    db,
    keys,
    async close() {
      await server.close()
      await db.close()
    },
  }
}
