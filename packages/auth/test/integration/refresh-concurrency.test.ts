import { randomBytes } from 'node:crypto'
import { adminDatabaseUrl, FakeClock, waitFor } from '@gatehouse/testing'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signUp, startTestServer, type TestServer } from '../helpers.js'

/**
 * Refreshes of one session racing each other, a replay or a logout on real PostgreSQL. The
 * interleaving is forced, not left to luck: a transaction of the test holds the session row (as a
 * refresh in progress would), the requests queue up behind it (seen in `pg_stat_activity` through
 * the server's `application_name`), then the test lets go.
 *
 * @see issue 8, item 6 (reuse detection race)
 */
describe('concurrent refreshes of one session', () => {
  const applicationName = `gh_refresh_race_${randomBytes(4).toString('hex')}`
  const clock = new FakeClock(Date.now())
  let server: TestServer
  let observer: pg.Client

  beforeAll(async () => {
    server = await startTestServer('refresh_race', {}, clock, {
      connectionParams: { application_name: applicationName },
    })
    observer = new pg.Client({ connectionString: adminDatabaseUrl() })
    await observer.connect()
  })
  afterAll(async () => {
    await observer.end()
    await server.close()
  })

  async function refresh(token: string) {
    return server.request('POST', '/token?grant_type=refresh_token', {
      body: { refresh_token: token },
    })
  }

  /** Resolves once `count` of the server's connections wait for a lock. */
  async function waitForBlocked(count: number): Promise<void> {
    await waitFor(
      async () => {
        const { rows } = await observer.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE application_name = $1 AND wait_event_type = 'Lock'`,
          [applicationName],
        )
        return rows[0]?.n === count
      },
      { what: `${String(count)} server connection(s) waiting for a lock` },
    )
  }

  /** Holds the session's row in a transaction of its own until `release()`. */
  async function holdSession(sessionId: string) {
    const holder = new pg.Client({ connectionString: server.database.url })
    await holder.connect()
    await holder.query('BEGIN')
    await holder.query(`SELECT 1 FROM ${server.app.db.t.sessions} WHERE id = $1 FOR UPDATE`, [
      sessionId,
    ])
    return {
      async release() {
        await holder.query('ROLLBACK')
        await holder.end()
      },
    }
  }

  async function activeTokens(sessionId: string): Promise<string[]> {
    const { rows } = await server.app.db.query<{ token: string }>(
      `SELECT token FROM ${server.app.db.t.refreshTokens} WHERE session_id = $1 AND revoked = false`,
      [sessionId],
    )
    return rows.map((r) => r.token)
  }

  async function sessionOf(token: string): Promise<string> {
    const { rows } = await server.app.db.query<{ session_id: string }>(
      `SELECT session_id FROM ${server.app.db.t.refreshTokens} WHERE token = $1`,
      [token],
    )
    return rows[0]!.session_id
  }

  it('a replay racing a rotation leaves no token of the revoked family active', async () => {
    const session = await signUp(server, 'race@example.com')
    const a = session.refresh_token
    const b = (await refresh(a)).json().refresh_token
    const c = (await refresh(b)).json().refresh_token
    const sessionId = await sessionOf(c)
    clock.advance(1_000) // past the reuse interval (0 s): presenting `a` again is reuse

    const lock = await holdSession(sessionId)
    // The client rotates its current token while an attacker replays a stolen old one.
    const rotation = refresh(c)
    await waitForBlocked(1)
    const replay = refresh(a)
    await waitForBlocked(2)
    await lock.release()
    const [rotated, replayed] = await Promise.all([rotation, replay])

    expect(replayed.statusCode).toBe(400)
    expect(replayed.json().error_code).toBe('refresh_token_already_used')
    expect(rotated.statusCode).toBe(200)
    expect(await activeTokens(sessionId)).toEqual([])
    const next = await refresh(rotated.json().refresh_token)
    expect(next.json().error_code).toBe('refresh_token_already_used')
  })

  it('a logout racing a refresh of the same session does not deadlock', async () => {
    const session = await signUp(server, 'race-logout@example.com')
    const sessionId = await sessionOf(session.refresh_token)

    const lock = await holdSession(sessionId)
    const logout = server.request('POST', '/logout', { token: session.access_token })
    await waitForBlocked(1)
    const rotation = refresh(session.refresh_token)
    await waitForBlocked(2)
    await lock.release()
    const [loggedOut, rotated] = await Promise.all([logout, rotation])

    expect(loggedOut.statusCode).toBe(204)
    expect(rotated.statusCode).toBe(400)
    expect(rotated.json().error_code).toBe('refresh_token_not_found')
  })
})
