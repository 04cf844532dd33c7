import { mkdirSync } from 'node:fs'
import { PGlite, types, type Transaction } from '@electric-sql/pglite'
import {
  tableNames,
  type Db,
  type Queryable,
  type QueryOptions,
  type Tables,
  type TransactionOptions,
  type Tx,
} from './db.js'
import { boundedTimestamp } from './timestamps.js'

function wrap(target: PGlite | Transaction, t: Tables): Queryable {
  return {
    t,
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- see Queryable.query
    query: async <R>(text: string, params: readonly unknown[] = [], options: QueryOptions = {}) => {
      const send = () => target.query<R>(text, params as unknown[])
      const result = await (options.commit ? options.commit(send) : send())
      return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length }
    },
    exec: async (script: string) => {
      await target.exec(script)
    },
  }
}

/**
 * The data directory named by a `pglite://` URL, or `undefined` for `pglite://memory`.
 *
 * @param url `pglite://memory`, `pglite://relative/dir` or `pglite:///absolute/dir`.
 */
export function pgliteDataDir(url: string): string | undefined {
  const rest = url.slice('pglite://'.length)
  return rest === '' || rest === 'memory' ? undefined : decodeURIComponent(rest)
}

/** PGlite's parsers of timestamps, with `±infinity` as `Date` bounds (`timestamps.ts`). */
const PARSERS = Object.fromEntries(
  [types.TIMESTAMP, types.TIMESTAMPTZ].map((oid) => [
    oid,
    boundedTimestamp((text: string): unknown => types.parseType(text, oid)),
  ]),
)

/**
 * Opens an embedded PostgreSQL (PGlite, in this process) for a `pglite://` URL. One connection:
 * statements and transactions are serialised by PGlite.
 *
 * @param url `pglite://<dir>` (created if missing) or `pglite://memory`.
 * @param namespace `DB_NAMESPACE` table prefix.
 */
export async function openPglite(url: string, namespace: string): Promise<Db> {
  const dir = pgliteDataDir(url)
  if (dir !== undefined) mkdirSync(dir, { recursive: true })
  const lite = await PGlite.create({
    ...(dir === undefined ? {} : { dataDir: dir }),
    parsers: PARSERS,
  })
  const t = tableNames(namespace)
  const base = wrap(lite, t)
  return {
    kind: 'pglite',
    maxConnections: 1,
    t,
    query: base.query,
    exec: base.exec,
    async transaction<T>(fn: (tx: Tx) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
      return lite.transaction(async (tx) => {
        const result = await fn(wrap(tx, t))
        // PGlite commits in this process as soon as the callback returns: `commit` only decides
        // whether it may (it throws to roll back), as it does before PostgreSQL's COMMIT.
        if (options.commit) await options.commit(() => Promise.resolve())
        return result
      })
    },
    async close() {
      await lite.close()
    },
  }
}
