import type { Db } from './db.js'
import { openPglite } from './pglite.js'
import { openPostgres } from './pg.js'

/**
 * Opens the database named by `DATABASE_URL`: `pglite://…` is embedded PGlite, anything else a
 * `pg` pool.
 *
 * @param url `DATABASE_URL`.
 * @param namespace `DB_NAMESPACE`.
 * @param maxPoolSize `DB_MAX_POOL_SIZE` (0 = derived from the server's limits; ignored by PGlite).
 * @throws {Error} When PostgreSQL cannot be reached (its limits are read at once when
 *   `maxPoolSize` is 0).
 */
export async function openDb(url: string, namespace: string, maxPoolSize: number): Promise<Db> {
  if (url.startsWith('pglite://')) return openPglite(url, namespace)
  return openPostgres(url, namespace, maxPoolSize)
}
