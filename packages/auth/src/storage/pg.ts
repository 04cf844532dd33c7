import pg from 'pg'
import { tableNames, type Db, type Queryable, type Tables, type Tx } from './db.js'

/** `lock_timeout` of every pooled connection, in milliseconds (upstream retries for 5 s). */
export const LOCK_TIMEOUT_MS = 5000

function wrap(client: pg.Pool | pg.PoolClient, t: Tables): Queryable {
  return {
    t,
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- see Queryable.query
    query: async <R>(text: string, params: readonly unknown[] = []) => {
      const result = await client.query(text, params as unknown[])
      return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 }
    },
    exec: async (script: string) => {
      await client.query(script)
    },
  }
}

/**
 * Opens a pooled PostgreSQL connection through `pg`. Connections are made lazily.
 *
 * @param url `postgres://…` connection string (`options=-c search_path=…` selects the schema).
 * @param namespace `DB_NAMESPACE` table prefix.
 * @param maxPoolSize `DB_MAX_POOL_SIZE`; 0 means no limit of ours (pg's pool needs a number, so
 *   a large one is used).
 */
export function openPostgres(url: string, namespace: string, maxPoolSize: number): Db {
  const pool = new pg.Pool({
    connectionString: url,
    max: maxPoolSize > 0 ? maxPoolSize : 10_000,
    idleTimeoutMillis: 30_000,
  })
  // An idle client that loses its connection must not crash the process; the next query reports.
  pool.on('error', () => undefined)
  // A refresh that waits more than 5 s for a token's row lock fails (409) instead of piling up.
  pool.on('connect', (client) => {
    client.query(`SET lock_timeout = '${String(LOCK_TIMEOUT_MS)}ms'`).catch(() => undefined)
  })
  const t = tableNames(namespace)
  const base = wrap(pool, t)
  return {
    kind: 'postgres',
    t,
    query: base.query,
    exec: base.exec,
    async transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
      const client = await pool.connect()
      let broken = false
      try {
        await client.query('BEGIN')
        const result = await fn(wrap(client, t))
        await client.query('COMMIT')
        return result
      } catch (error) {
        try {
          await client.query('ROLLBACK')
        } catch {
          broken = true
        }
        throw error
      } finally {
        client.release(broken)
      }
    },
    async close() {
      await pool.end()
    },
  }
}
