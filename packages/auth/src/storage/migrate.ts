import { readdir, readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import type { Db, Queryable } from './db.js'

/** The directory with the `NNNN_name.up.sql` files shipped in this package. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url))

/** One migration file. */
export interface Migration {
  /** The file's numeric prefix, for example `0001`; recorded in `schema_migrations.version`. */
  readonly version: string
  readonly name: string
  /** SQL with `{{ns}}` still in it. */
  readonly sql: string
}

/**
 * Reads the migration files of a directory, ordered by version.
 *
 * @param dir Directory of `NNNN_name.up.sql` files. @default {@link MIGRATIONS_DIR}
 */
export async function readMigrations(dir: string = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d+_[\w-]+\.up\.sql$/.test(f)).sort()
  return Promise.all(
    files.map(async (file) => ({
      version: file.slice(0, file.indexOf('_')),
      name: file.replace(/\.up\.sql$/, ''),
      sql: await readFile(`${dir}/${file}`, 'utf8'),
    })),
  )
}

/**
 * Applies every migration not yet recorded in `schema_migrations`, in one transaction that holds
 * a PostgreSQL advisory lock, so that several instances starting together apply each migration
 * exactly once (the others wait, then find nothing to do).
 *
 * @param db The database; its namespace (`DB_NAMESPACE`) replaces `{{ns}}` in the SQL.
 * @param migrations Migrations to consider. @default the package's own
 * @returns The versions applied by this call (empty when the schema was current).
 */
export async function migrate(db: Db, migrations?: readonly Migration[]): Promise<string[]> {
  const list = migrations ?? (await readMigrations())
  const prefix = db.t.users.slice(0, -'users'.length)
  return db.transaction(async (tx) => {
    // Wait as long as another instance needs to finish migrating.
    await tx.query('SET LOCAL lock_timeout = 0')
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1 || current_schema()))`, [
      `gatehouse-auth:migrate:${prefix}:`,
    ])
    await tx.exec(
      `CREATE TABLE IF NOT EXISTS ${tx.t.schemaMigrations} (version varchar(255) NOT NULL PRIMARY KEY)`,
    )
    const { rows } = await tx.query<{ version: string }>(
      `SELECT version FROM ${tx.t.schemaMigrations}`,
    )
    const done = new Set(rows.map((r) => r.version))
    const applied: string[] = []
    for (const migration of list) {
      if (done.has(migration.version)) continue
      await tx.exec(migration.sql.replaceAll('{{ns}}', prefix))
      await tx.query(`INSERT INTO ${tx.t.schemaMigrations} (version) VALUES ($1)`, [
        migration.version,
      ])
      applied.push(migration.version)
    }
    return applied
  })
}

/**
 * The migrations not yet applied to a database (all of them when it has no `schema_migrations`
 * table), without changing anything: `gatehouse-auth check --connect`.
 *
 * @param migrations Migrations to consider. @default the package's own
 * @returns Their versions, in order.
 */
export async function pendingMigrations(
  db: Queryable,
  migrations?: readonly Migration[],
): Promise<string[]> {
  const list = migrations ?? (await readMigrations())
  const { rows } = await db.query<{ present: boolean }>(
    'SELECT to_regclass($1) IS NOT NULL AS present',
    [db.t.schemaMigrations],
  )
  const done = new Set<string>()
  if (rows[0]?.present === true) {
    const applied = await db.query<{ version: string }>(
      `SELECT version FROM ${db.t.schemaMigrations}`,
    )
    for (const row of applied.rows) done.add(row.version)
  }
  return list.filter((m) => !done.has(m.version)).map((m) => m.version)
}
