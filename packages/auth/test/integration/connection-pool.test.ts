import { randomBytes } from 'node:crypto'
import {
  adminDatabaseUrl,
  createTestSchema,
  FakeClock,
  waitFor,
  type TestDatabase,
} from '@gatehouse/testing'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAuthApp, loadSettings, type AuthApp } from '@gatehouse/auth'
import { testEnv, type TokenJson } from '../helpers.js'

/**
 * With `DB_MAX_POOL_SIZE=0` a burst must queue for connections rather than open more than
 * PostgreSQL allows (each refused connection would be a 500). The shared server's own limit is
 * not exhausted here (other test files use it): the server logs in as a role of its own with
 * `CONNECTION LIMIT 4`, and the burst's requests are held on row locks taken by the test, so they
 * all need a connection at once.
 *
 * @see issue 8, item 9 (DB_MAX_POOL_SIZE=0)
 */
describe('PostgreSQL connections with DB_MAX_POOL_SIZE=0', () => {
  const role = `gh_test_pool_${randomBytes(4).toString('hex')}`
  let admin: pg.Client
  let schema: TestDatabase
  let app: AuthApp

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: adminDatabaseUrl() })
    await admin.connect()
    await admin.query(`CREATE ROLE "${role}" LOGIN CONNECTION LIMIT 4`)
    schema = await createTestSchema('auth_pool')
    await admin.query(`ALTER SCHEMA "${schema.name}" OWNER TO "${role}"`)
    const url = new URL(schema.url)
    url.username = role
    app = await createAuthApp(loadSettings(testEnv(url.toString())), {
      clock: new FakeClock(Date.now()),
    })
  })
  afterAll(async () => {
    try {
      await app.close()
      await schema.drop()
    } finally {
      await admin.query(`DROP ROLE IF EXISTS "${role}"`)
      await admin.end()
    }
  })

  async function post(url: string, body: unknown) {
    return app.server.inject({ method: 'POST', url, payload: body as Record<string, unknown> })
  }

  it('derives the pool size from what PostgreSQL allows the login (half of it)', () => {
    expect(app.db.maxConnections).toBe(2)
  })

  it('a burst beyond what PostgreSQL allows this login queues instead of failing with 500', async () => {
    const sessions: TokenJson[] = []
    for (let i = 0; i < 12; i++) {
      const res = await post('/signup', {
        email: `pool-${String(i)}@example.com`,
        password: 'x1y2z3w4',
      })
      expect(res.statusCode).toBe(200)
      sessions.push(res.json<TokenJson>())
    }
    // Hold every session row, as refreshes in progress would, so that each request of the burst
    // keeps its connection until the test lets go. (Watched from another connection: inside a
    // transaction, pg_stat_activity is a snapshot.)
    const holder = new pg.Client({ connectionString: adminDatabaseUrl() })
    await holder.connect()
    try {
      await holder.query('BEGIN')
      await holder.query(`SELECT 1 FROM "${schema.name}".sessions FOR UPDATE`)
      const burst = sessions.map((s) =>
        post('/token?grant_type=refresh_token', { refresh_token: s.refresh_token }),
      )
      await waitFor(
        async () => {
          const { rows } = await admin.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE usename = $1 AND wait_event_type = 'Lock'`,
            [role],
          )
          return (rows[0]?.n ?? 0) >= 2
        },
        { what: 'the burst to hold connections' },
      )
      await holder.query('ROLLBACK')
      const results = await Promise.all(burst)
      expect(results.map((r) => r.statusCode)).toEqual(Array<number>(12).fill(200))
    } finally {
      await holder.end()
    }
  })
})
