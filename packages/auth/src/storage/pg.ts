import { createHash } from 'node:crypto'
import pg from 'pg'
import { tableNames, type Db, type Queryable, type Tables, type Tx } from './db.js'

/** `lock_timeout` of every pooled connection, in milliseconds (upstream retries for 5 s). */
export const LOCK_TIMEOUT_MS = 5000

/**
 * Adds `-c lock_timeout=…` to the connection's startup `options`, keeping any given ones (such as
 * a `search_path`): a refresh that waits more than 5 s for a token's row lock fails with 409
 * instead of piling up.
 */
function withLockTimeout(url: string): string {
  try {
    const parsed = new URL(url)
    const options = parsed.searchParams.get('options')
    const timeout = `-c lock_timeout=${String(LOCK_TIMEOUT_MS)}`
    parsed.searchParams.set('options', options ? `${options} ${timeout}` : timeout)
    return parsed.toString()
  } catch {
    return url
  }
}

/** A stable prepared-statement name for a SQL text. */
function statementName(text: string): string {
  return `gh_${createHash('sha1').update(text).digest('base64url')}`
}

function wrap(client: pg.Pool | pg.PoolClient, t: Tables): Queryable {
  return {
    t,
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- see Queryable.query
    query: async <R>(text: string, params: readonly unknown[] = []) => {
      // Named statements are parsed and planned once per connection (our SQL texts are fixed).
      const result = await client.query({
        name: statementName(text),
        text,
        values: params as unknown[],
      })
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
    connectionString: withLockTimeout(url),
    max: maxPoolSize > 0 ? maxPoolSize : 10_000,
    idleTimeoutMillis: 30_000,
  })
  // An idle client that loses its connection must not crash the process; the next query reports.
  pool.on('error', () => undefined)

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
