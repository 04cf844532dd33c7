import { createHash } from 'node:crypto'
import pg from 'pg'
import {
  DatabaseUnavailableError,
  isDatabaseUnavailable,
  tableNames,
  type CommitHook,
  type Db,
  type QueryOptions,
  type Queryable,
  type Tables,
  type TransactionOptions,
  type Tx,
} from './db.js'
import { boundedTimestamp } from './timestamps.js'

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

/** A type's id as `pg-types` names it (its OID in `pg_type`). */
type TypeId = Parameters<typeof pg.types.getTypeParser>[0]

/** The driver's own parser of a type (`pg-types`). */
function driverParser(id: TypeId, format: 'text' | 'binary' = 'text'): (text: string) => unknown {
  return pg.types.getTypeParser(id, format) as (text: string) => unknown
}

/** The driver's type parsers, with `±infinity` timestamps as `Date` bounds (`timestamps.ts`). */
const TYPES: pg.CustomTypesConfig = (() => {
  const { TIMESTAMP, TIMESTAMPTZ } = pg.types.builtins
  const bounded = new Map(
    [TIMESTAMP, TIMESTAMPTZ].map((id) => [id, boundedTimestamp(driverParser(id))]),
  )
  const getTypeParser = (id: TypeId, format?: 'text' | 'binary'): ((text: string) => unknown) =>
    (format !== 'binary' ? bounded.get(id) : undefined) ?? driverParser(id, format)
  return { getTypeParser: getTypeParser as pg.CustomTypesConfig['getTypeParser'] }
})()

/** A stable prepared-statement name for a SQL text. */
function statementName(text: string): string {
  return `gh_${createHash('sha1').update(text).digest('base64url')}`
}

/** The most statement names a pool remembers (the server's SQL texts are a few hundred). */
const STATEMENT_NAMES_MAX = 4096

/**
 * {@link statementName} remembered per SQL text, so a hot statement is not hashed on every call;
 * texts beyond {@link STATEMENT_NAMES_MAX} are hashed each time.
 */
class StatementNames {
  readonly #names = new Map<string, string>()

  of(text: string): string {
    let name = this.#names.get(text)
    if (name === undefined) {
      name = statementName(text)
      if (this.#names.size < STATEMENT_NAMES_MAX) this.#names.set(text, name)
    }
    return name
  }
}

/** `error` as {@link DatabaseUnavailableError} when it means the database cannot serve now. */
function storageError(error: unknown): unknown {
  return isDatabaseUnavailable(error) && !(error instanceof DatabaseUnavailableError)
    ? new DatabaseUnavailableError(error)
    : error
}

/** Runs `work`, turning a lost or refused connection into {@link DatabaseUnavailableError}. */
async function reporting<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    throw storageError(error)
  }
}

/** One statement on `client`; named statements are parsed and planned once per connection. */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- see Queryable.query
async function run<R>(
  client: pg.Pool | pg.PoolClient,
  names: StatementNames,
  text: string,
  params: readonly unknown[],
): Promise<{ rows: R[]; rowCount: number }> {
  const result = await reporting(() =>
    client.query({ name: names.of(text), text, values: params as unknown[] }),
  )
  return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 }
}

function wrap(client: pg.Pool | pg.PoolClient, t: Tables, names: StatementNames): Queryable {
  return {
    t,
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- see Queryable.query
    query: <R>(text: string, params: readonly unknown[] = []) =>
      run<R>(client, names, text, params),
    exec: async (script: string) => {
      await reporting(() => client.query(script))
    },
  }
}

/**
 * Holds a client of `pool` for `work`: a connection lost meanwhile neither ends the process (a
 * checked-out client has no listener of the pool's, so its 'error' event would be unhandled) nor
 * goes back to the pool (it is destroyed on release).
 *
 * @param work Gets the client and its state: `broken` once its connection is lost (or the work
 *   says so, and the client is not reused).
 */
async function withClient<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient, connection: { broken: boolean }) => Promise<T>,
): Promise<T> {
  const client = await reporting(() => pool.connect())
  const connection = { broken: false }
  const onError = (): void => {
    connection.broken = true
  }
  client.on('error', onError)
  try {
    return await work(client, connection)
  } catch (error) {
    // A statement that failed without an 'error' event may still have lost the connection.
    if (isDatabaseUnavailable(error)) connection.broken = true
    throw error
  } finally {
    client.off('error', onError)
    client.release(connection.broken)
  }
}

/**
 * The statements that open a transaction, sent in one round trip: `BEGIN`, and with a timeout
 * its `statement_timeout` and (when shorter than the connection's) `lock_timeout`.
 */
export function beginStatements(timeoutMs: number | undefined): string {
  if (timeoutMs === undefined) return 'BEGIN'
  const statement = Math.max(1, Math.floor(timeoutMs))
  const lock = Math.min(statement, LOCK_TIMEOUT_MS)
  return `BEGIN; SET LOCAL statement_timeout = ${String(statement)}; SET LOCAL lock_timeout = ${String(lock)}`
}

const sendCommit: CommitHook = (send) => send()

/** What PostgreSQL lets one login open; see {@link derivedPoolSize}. */
export interface ConnectionLimits {
  /** `max_connections`. */
  readonly maxConnections: number
  /** `superuser_reserved_connections` plus `reserved_connections` (PostgreSQL 16+). */
  readonly reserved: number
  /** The role's `CONNECTION LIMIT`, or -1 for none. */
  readonly roleLimit: number
  /** The database's `CONNECTION LIMIT`, or -1 for none. */
  readonly databaseLimit: number
}

/**
 * The pool size used when `DB_MAX_POOL_SIZE` is 0: half of what PostgreSQL lets this login open
 * (the least of `max_connections` less the reserved slots, the role's and the database's
 * `CONNECTION LIMIT`), at least 1. The other half is left to other clients (migrations, admin
 * sessions, a second instance); requests beyond the pool wait for a connection instead of
 * failing with "too many connections".
 */
export function derivedPoolSize(limits: ConnectionLimits): number {
  const allowed = [limits.maxConnections - limits.reserved]
  if (limits.roleLimit >= 0) allowed.push(limits.roleLimit)
  if (limits.databaseLimit >= 0) allowed.push(limits.databaseLimit)
  return Math.max(1, Math.floor(Math.min(...allowed) / 2))
}

/** Reads the {@link ConnectionLimits} of a connection string's login (one short connection). */
async function readConnectionLimits(connectionString: string): Promise<ConnectionLimits> {
  const client = new pg.Client({ connectionString })
  // A connection lost mid-query rejects the query; the event must not crash the process.
  client.on('error', () => undefined)
  await client.connect()
  try {
    const { rows } = await client.query<{
      max_connections: number
      reserved: number
      role_limit: number | null
      database_limit: number | null
    }>(
      `SELECT current_setting('max_connections')::int AS max_connections,
         current_setting('superuser_reserved_connections')::int
           + coalesce(current_setting('reserved_connections', true), '0')::int AS reserved,
         (SELECT rolconnlimit FROM pg_roles WHERE rolname = current_user) AS role_limit,
         (SELECT datconnlimit FROM pg_database WHERE datname = current_database()) AS database_limit`,
    )
    const row = rows[0]
    return {
      maxConnections: row?.max_connections ?? 100,
      reserved: row?.reserved ?? 3,
      roleLimit: row?.role_limit ?? -1,
      databaseLimit: row?.database_limit ?? -1,
    }
  } finally {
    await client.end()
  }
}

/**
 * Opens a pooled PostgreSQL connection through `pg`. Connections are made lazily.
 *
 * @param url `postgres://…` connection string (`options=-c search_path=…` selects the schema).
 * @param namespace `DB_NAMESPACE` table prefix.
 * @param maxPoolSize `DB_MAX_POOL_SIZE`; 0 means no limit of ours, so the pool is sized from the
 *   server's limits ({@link derivedPoolSize}, read through one short connection now).
 * @throws {Error} When `maxPoolSize` is 0 and the server cannot be reached.
 */
export async function openPostgres(
  url: string,
  namespace: string,
  maxPoolSize: number,
): Promise<Db> {
  const connectionString = withLockTimeout(url)
  const max =
    maxPoolSize > 0
      ? maxPoolSize
      : derivedPoolSize(await reporting(() => readConnectionLimits(connectionString)))
  const pool = new pg.Pool({ connectionString, max, idleTimeoutMillis: 30_000, types: TYPES })
  // An idle client that loses its connection must not crash the process: the pool drops it, and
  // the next query opens a new one (or reports the database unavailable).
  pool.on('error', () => undefined)

  const t = tableNames(namespace)
  const names = new StatementNames()
  const base = wrap(pool, t, names)
  return {
    kind: 'postgres',
    maxConnections: max,
    t,
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- see Queryable.query
    query: <R>(text: string, params: readonly unknown[] = [], options: QueryOptions = {}) => {
      const { commit } = options
      if (commit === undefined) return run<R>(pool, names, text, params)
      // The hook decides once the connection is held, right before the statement is sent.
      return withClient(pool, (client) => commit(() => run<R>(client, names, text, params)))
    },
    exec: base.exec,
    async transaction<T>(fn: (tx: Tx) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
      return withClient(pool, async (client, connection) => {
        const tx = wrap(client, t, names)
        try {
          await tx.exec(beginStatements(options.timeoutMs))
          const result = await fn(tx)
          await (options.commit ?? sendCommit)(() => tx.exec('COMMIT'))
          return result
        } catch (error) {
          if (!connection.broken) {
            try {
              await client.query('ROLLBACK')
            } catch {
              connection.broken = true
            }
          }
          throw storageError(error)
        }
      })
    },
    async close() {
      await pool.end()
    },
    poolStats: () => ({
      total: pool.totalCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
      max,
    }),
  }
}
