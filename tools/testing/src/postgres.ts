import { randomBytes } from 'node:crypto'
import pg from 'pg'

/**
 * The machine's PostgreSQL server as an admin connection string: `TEST_DATABASE_URL`, default
 * `postgres://postgres@127.0.0.1:5432/postgres` (trust auth on loopback).
 */
export function adminDatabaseUrl(env: NodeJS.ProcessEnv = process.env): string {
  return env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
}

/** A throw-away database or schema for one test file. */
export interface TestDatabase {
  /** The database name, or the schema name for {@link createTestSchema}. */
  readonly name: string
  /** Connection string that reaches it (for a schema: with `search_path` set to it). */
  readonly url: string
  /** Drops it (terminating open connections first). Idempotent. */
  drop(): Promise<void>
}

function uniqueName(label: string): string {
  const safe = label
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 30)
  return `gh_test_${safe}_${randomBytes(6).toString('hex')}`
}

async function withAdmin<T>(adminUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl })
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

/**
 * Runs `create` on the admin connection and returns a {@link TestDatabase} whose `drop()` runs
 * `dropSql` once.
 */
async function createThrowaway(
  adminUrl: string,
  name: string,
  createSql: string,
  dropSql: string,
  url: URL,
): Promise<TestDatabase> {
  await withAdmin(adminUrl, (client) => client.query(createSql))
  let dropped = false
  return {
    name,
    url: url.toString(),
    async drop() {
      if (dropped) return
      dropped = true
      await withAdmin(adminUrl, (client) => client.query(dropSql))
    },
  }
}

/**
 * Creates a fresh, empty database (`gh_test_<label>_<random>`) and returns its URL. Call `drop()`
 * in `afterAll`.
 *
 * @param label Readable part of the name, such as the test file's name.
 * @throws {Error} When PostgreSQL cannot be reached at {@link adminDatabaseUrl}.
 */
export async function createTestDatabase(
  label = 'db',
  adminUrl = adminDatabaseUrl(),
): Promise<TestDatabase> {
  const name = uniqueName(label)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return createThrowaway(
    adminUrl,
    name,
    `CREATE DATABASE "${name}"`,
    `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`,
    url,
  )
}

/**
 * Creates a fresh schema (`gh_test_<label>_<random>`) in the admin database and returns a URL
 * whose connections use it as `search_path` (better-auth's trick). Cheaper than a database.
 *
 * @param label Readable part of the name, such as the test file's name.
 * @throws {Error} When PostgreSQL cannot be reached at {@link adminDatabaseUrl}.
 */
export async function createTestSchema(
  label = 'schema',
  adminUrl = adminDatabaseUrl(),
): Promise<TestDatabase> {
  const name = uniqueName(label)
  const url = new URL(adminUrl)
  url.searchParams.set('options', `-c search_path=${name}`)
  return createThrowaway(
    adminUrl,
    name,
    `CREATE SCHEMA "${name}"`,
    `DROP SCHEMA IF EXISTS "${name}" CASCADE`,
    url,
  )
}
