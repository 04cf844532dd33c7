/**
 * Rows the auth benchmarks write straight into the server's tables with SQL (the schema of
 * `packages/auth/migrations`): refresh-token chains to rotate, and a population of users with
 * their identities, sessions and refresh tokens, to measure what the tables' size costs.
 */
import { randomUUID } from 'node:crypto'
import type pg from 'pg'

/**
 * Inserts two fresh sessions per user of `userIds` (with their `password` AMR claim and one live
 * refresh token each) and returns the tokens, one chain each.
 */
export async function seedRefreshChains(
  pool: pg.Pool,
  userIds: readonly string[],
): Promise<string[]> {
  const owners = [...userIds, ...userIds]
  const tokens = owners.map(() => randomUUID().replaceAll('-', '').slice(0, 12))
  await pool.query(
    `WITH s AS (
       INSERT INTO sessions (id, user_id, created_at, updated_at, aal)
       SELECT gen_random_uuid(), u, now(), now(), 'aal1' FROM unnest($1::uuid[]) AS u
       RETURNING id, user_id
     ), n AS (SELECT id, user_id, row_number() OVER () AS i FROM s),
     a AS (
       INSERT INTO mfa_amr_claims (id, session_id, created_at, updated_at, authentication_method)
       SELECT gen_random_uuid(), id, now(), now(), 'password' FROM n
     )
     INSERT INTO refresh_tokens (instance_id, token, user_id, revoked, created_at, updated_at, session_id)
     SELECT '00000000-0000-0000-0000-000000000000', ($2::text[])[i], user_id::text, false, now(), now(), id FROM n`,
    [owners, tokens],
  )
  return tokens
}

/** The email of seeded user `i` (1-based). */
export function seededEmail(i: number): string {
  return `growth${String(i)}@example.com`
}

/**
 * Inserts `users` confirmed email users (`seededEmail(1…users)`, all with the bcrypt `hash`, as
 * a sign-up with autoconfirm leaves them), an `email` identity each, and `sessionsPerUser`
 * sessions per user with one live refresh token each, with `INSERT … SELECT generate_series`.
 * Ids are derived from the row number (`md5('u' || i)::uuid`), so no insert needs a join. For
 * speed it drops the tables' plain indexes first and builds them again after (a sorted build is
 * far cheaper than a million index inserts), skips the foreign-key triggers
 * (`session_replication_role = replica`: the rows are consistent by construction; needs a
 * superuser, as the bench's `postgres` is), fills the four tables in parallel on connections of
 * their own (`pool` should allow four), and ends with `ANALYZE`.
 *
 * @returns Milliseconds it took.
 */
export async function seedPopulation(
  pool: pg.Pool,
  users: number,
  sessionsPerUser: number,
  hash: string,
): Promise<number> {
  const started = performance.now()
  const tables = ['users', 'identities', 'sessions', 'refresh_tokens']
  /** Runs `sql` on a connection of its own, set for bulk writes. */
  const bulk = async (sql: string, values: unknown[] = []): Promise<void> => {
    const client = await pool.connect()
    try {
      await client.query(`SET synchronous_commit = off`)
      await client.query(`SET maintenance_work_mem = '256MB'`)
      await client.query(`SET session_replication_role = replica`)
      await client.query(sql, values)
    } finally {
      await client.query('RESET ALL')
      client.release()
    }
  }
  // Plain indexes only: those of a constraint (primary keys, UNIQUE) stay.
  const { rows: indexes } = await pool.query<{ name: string; def: string }>(
    `SELECT i.indexname AS name, i.indexdef AS def FROM pg_indexes i
     WHERE i.schemaname = current_schema() AND i.tablename = ANY($1)
       AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`,
    [tables],
  )
  for (const index of indexes) await pool.query(`DROP INDEX "${index.name}"`)
  const zero = `'00000000-0000-0000-0000-000000000000'::uuid`
  // The tables in parallel, one connection each: the foreign keys are not checked.
  await Promise.all([
    bulk(
      `INSERT INTO users (instance_id, id, aud, role, email, encrypted_password, email_confirmed_at,
         confirmation_token, recovery_token, email_change_token_new, email_change,
         last_sign_in_at, raw_app_meta_data, raw_user_meta_data, created_at, updated_at,
         email_change_token_current, reauthentication_token)
       SELECT ${zero}, md5('u' || i)::uuid, 'authenticated', 'authenticated',
         'growth' || i || '@example.com', $2, now(), '', '', '', '', now(),
         '{"provider": "email", "providers": ["email"]}', '{}', now(), now(), '', ''
       FROM generate_series(1, $1::int) AS i`,
      [users, hash],
    ),
    bulk(
      `INSERT INTO identities (provider_id, user_id, identity_data, provider, last_sign_in_at,
         created_at, updated_at, id)
       SELECT md5('u' || i)::uuid::text, md5('u' || i)::uuid,
         jsonb_build_object('sub', md5('u' || i)::uuid::text, 'email', 'growth' || i || '@example.com',
           'email_verified', true, 'phone_verified', false),
         'email', now(), now(), now(), md5('i' || i)::uuid
       FROM generate_series(1, $1::int) AS i`,
      [users],
    ),
    bulk(
      `INSERT INTO sessions (id, user_id, created_at, updated_at, aal)
       SELECT md5('s' || j)::uuid, md5('u' || ((j - 1) / $2 + 1))::uuid, now(), now(), 'aal1'
       FROM generate_series(1, $1::int * $2::int) AS j`,
      [users, sessionsPerUser],
    ),
    bulk(
      `INSERT INTO refresh_tokens (instance_id, token, user_id, revoked, created_at, updated_at,
         session_id)
       SELECT ${zero}, 'g' || lpad(to_hex(j), 11, '0'), md5('u' || ((j - 1) / $2 + 1))::uuid::text,
         false, now(), now(), md5('s' || j)::uuid
       FROM generate_series(1, $1::int * $2::int) AS j`,
      [users, sessionsPerUser],
    ),
  ])
  await Promise.all(indexes.map((index) => bulk(index.def)))
  await pool.query(`ANALYZE ${tables.join(', ')}`)
  return performance.now() - started
}
