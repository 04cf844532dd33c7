import { randomUUID } from 'node:crypto'
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

/**
 * @see issue 25, item 4: the auth server exited within a second of `pg_ctl stop -m immediate`
 *   (an unhandled 'error' event of a pg client) and did not recover without a restart.
 */
describe('PostgreSQL stopped and started under load', () => {
  let postgres: TestPostgresServer
  let auth: AuthProcess

  beforeAll(async () => {
    postgres = await startPostgresServer()
    auth = await startAuthProcess(postgres.url, UNLIMITED)
  })
  afterAll(async () => {
    await auth.stop()
    await postgres.destroy()
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
