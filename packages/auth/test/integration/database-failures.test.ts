import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { startPostgresServer, waitFor, type TestPostgresServer } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAuthProcess, type AuthProcess } from '../support/auth-process.js'

/** An answer of the server: status and JSON body (`undefined` when the body is not JSON). */
interface Answer {
  readonly status: number
  readonly body: Record<string, unknown> | undefined
}

async function post(url: string, path: string, body: unknown): Promise<Answer> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const text = await res.text()
  let json: Record<string, unknown> | undefined
  try {
    json = JSON.parse(text) as Record<string, unknown>
  } catch {
    json = undefined
  }
  return { status: res.status, body: json }
}

/** Budgets no test here should meet: the load comes from one address. */
const UNLIMITED = {
  AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: '1000000',
  AUTHSVC_RATE_LIMIT_OTP: '1000000',
}

/**
 * A user of the API who signs up once, then refreshes its session again and again, keeping the
 * refresh token of the last answer it got (as auth-js does).
 */
class SessionClient {
  readonly email = `user-${randomUUID()}@example.com`
  refreshToken = ''
  readonly statuses: number[] = []
  readonly url: string

  constructor(url: string) {
    this.url = url
  }

  async signUp(): Promise<Answer> {
    const answer = await post(this.url, '/signup', { email: this.email, password: 'secret123' })
    this.statuses.push(answer.status)
    if (answer.status === 200) this.refreshToken = String(answer.body?.refresh_token)
    return answer
  }

  async refresh(): Promise<Answer> {
    const answer = await post(this.url, '/token?grant_type=refresh_token', {
      refresh_token: this.refreshToken,
    })
    this.statuses.push(answer.status)
    if (answer.status === 200) this.refreshToken = String(answer.body?.refresh_token)
    return answer
  }
}

// One PostgreSQL of this file's own, stopped, crashed and frozen by the tests (never the shared
// one); each server below has a database of its own on it.
let postgres: TestPostgresServer

beforeAll(async () => {
  postgres = await startPostgresServer()
})
afterAll(async () => {
  await postgres.destroy()
})

/**
 * @see issue 25, item 4: the auth server exited within a second of `pg_ctl stop -m immediate`
 *   (an unhandled 'error' event of a pg client) and did not recover without a restart.
 */
describe('PostgreSQL stopped and started under load', () => {
  let auth: AuthProcess

  beforeAll(async () => {
    auth = await startAuthProcess(postgres.url, UNLIMITED)
  })
  afterAll(async () => {
    await auth.stop()
  })

  it('stays alive, answers 503 database_unavailable during each outage and serves again after', async () => {
    const clients = Array.from({ length: 4 }, () => new SessionClient(auth.url))
    for (const client of clients) expect((await client.signUp()).status).toBe(200)
    const signUps: Answer[] = []
    const load = { running: true }
    let lastAnswer: Answer | undefined
    // Four clients refreshing and one signing new users up, as fast as answers come.
    const workers = [
      ...clients.map(async (client) => {
        while (load.running) lastAnswer = await client.refresh()
      }),
      (async () => {
        while (load.running) {
          const answer = await new SessionClient(auth.url).signUp()
          signUps.push(answer)
          lastAnswer = answer
        }
      })(),
    ]
    try {
      for (let cycle = 1; cycle <= 3; cycle++) {
        await postgres.stop('immediate')
        const outage = await waitFor(() => (lastAnswer?.status === 503 ? lastAnswer : undefined), {
          what: `a 503 in outage ${String(cycle)}`,
        })
        expect(outage.body).toEqual({
          code: 503,
          error_code: 'database_unavailable',
          msg: 'The database is unavailable; retry in a moment.',
          error_id: expect.any(String) as unknown,
        })
        expect(auth.alive()).toBe(true)
        await postgres.start()
        await waitFor(() => lastAnswer?.status === 200, {
          what: `a 200 after outage ${String(cycle)}`,
        })
        expect(auth.alive()).toBe(true)
      }
    } finally {
      load.running = false
      await Promise.all(workers)
    }
    // Every answer was a success or the outage's 503: no crash, no 500, no reuse detection.
    const statuses = new Set([
      ...clients.flatMap((c) => c.statuses),
      ...signUps.map((a) => a.status),
    ])
    expect([...statuses].sort()).toEqual([200, 503])
    // Each client goes on with the last token it received.
    for (const client of clients) expect((await client.refresh()).status).toBe(200)
    expect(auth.process.output()).not.toContain("Unhandled 'error' event")
  }, 60_000)
})

/**
 * @see issue 25, item 5: with PostgreSQL frozen past the request timeout, refreshes answered 504
 *   committed when it resumed, so each client's retry with its old token was taken for reuse and
 *   its session revoked; sign-ups answered 504 were committed too.
 */
describe('PostgreSQL frozen past the request timeout under load', () => {
  let auth: AuthProcess
  let db: pg.Client

  beforeAll(async () => {
    const admin = new pg.Client({ connectionString: postgres.url })
    await admin.connect()
    await admin.query('CREATE DATABASE frozen')
    await admin.end()
    const url = new URL(postgres.url)
    url.pathname = '/frozen'
    // A small pool: during the freeze most requests wait for a connection, then get one after
    // they were answered 504.
    auth = await startAuthProcess(url.toString(), {
      ...UNLIMITED,
      AUTHSVC_API_MAX_REQUEST_DURATION: '400ms',
      AUTHSVC_DB_MAX_POOL_SIZE: '3',
    })
    db = new pg.Client({ connectionString: url.toString() })
    await db.connect()
  })
  afterAll(async () => {
    await db.end()
    await auth.stop()
  })

  it('commits nothing it answered 504, and no client loses its session', async () => {
    const clients = Array.from({ length: 6 }, () => new SessionClient(auth.url))
    for (const client of clients) expect((await client.signUp()).status).toBe(200)
    const signUps: { email: string; status: number }[] = []
    const load = { running: true }
    let timeouts = 0
    let lastAnswer: Answer | undefined
    const record = (answer: Answer): void => {
      lastAnswer = answer
      if (answer.status === 504) timeouts++
    }
    const workers = [
      ...clients.map(async (client) => {
        while (load.running) record(await client.refresh())
      }),
      ...[1, 2].map(async () => {
        while (load.running) {
          const client = new SessionClient(auth.url)
          const answer = await client.signUp()
          signUps.push({ email: client.email, status: answer.status })
          record(answer)
        }
      }),
    ]
    try {
      for (let cycle = 1; cycle <= 2; cycle++) {
        await postgres.freeze()
        const before = timeouts
        await waitFor(() => timeouts >= before + 4, { what: `504s in freeze ${String(cycle)}` })
        await postgres.thaw()
        await waitFor(() => lastAnswer?.status === 200, {
          what: `a 200 after freeze ${String(cycle)}`,
        })
      }
    } finally {
      load.running = false
      await postgres.thaw()
      await Promise.all(workers)
    }
    expect(auth.alive()).toBe(true)
    const refreshes = clients.flatMap((c) => c.statuses.slice(1))
    expect(new Set([...refreshes, ...signUps.map((s) => s.status)])).toEqual(new Set([200, 504]))
    expect(signUps.some((s) => s.status === 504)).toBe(true)
    expect(refreshes).toContain(504)

    // No sign-up answered 504 exists; every one answered 200 does.
    const { rows: users } = await db.query<{ email: string }>('SELECT email FROM users')
    const stored = new Set(users.map((u) => u.email))
    for (const { email, status } of signUps)
      expect([email, stored.has(email)]).toEqual([email, status === 200])

    // Each session's only active token is the one its client last received: no rotation the
    // client did not see, no session revoked; the client goes on with it.
    for (const client of clients) {
      const { rows } = await db.query<{ token: string }>(
        `SELECT token FROM refresh_tokens WHERE revoked = false AND session_id =
           (SELECT session_id FROM refresh_tokens WHERE token = $1)`,
        [client.refreshToken],
      )
      expect(rows.map((r) => r.token)).toEqual([client.refreshToken])
      expect((await client.refresh()).status).toBe(200)
    }
    const { rows: reuse } = await db.query(
      `SELECT 1 FROM audit_log_entries WHERE payload->'traits'->>'reason' = 'reuse'`,
    )
    expect(reuse).toEqual([])
  }, 60_000)
})
