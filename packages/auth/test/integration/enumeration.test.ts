/**
 * `/recover`, `/otp` and `/magiclink` answer every address alike: the same status and body for
 * known and unknown ones, sent to recently or not, and before any mail is sent (the mail queue
 * sends it after the answer); and a mail the SMTP server refuses, or that an instance leaves
 * behind, is sent later.
 *
 * @see issue 24, item 7
 */
import { FakeClock } from '@gatehouse/testing'
import { createAuthApp, type Mailer, type MailMessage } from '@gatehouse/auth'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RecordingMailer, startTestServer, type TestServer } from '../helpers.js'

/** A mailer whose sends wait until the test releases them (an SMTP server that hangs). */
class HeldMailer implements Mailer {
  readonly sent: MailMessage[] = []
  #release: () => void = () => undefined
  #gate = new Promise<void>((resolve) => {
    this.#release = resolve
  })

  async send(message: MailMessage): Promise<void> {
    await this.#gate
    this.sent.push(message)
  }

  release(): void {
    this.#release()
  }
}

/** Status and body of a request, through `inject` alone (not waiting for the mail queue). */
async function answer(server: TestServer, url: string, body: Record<string, unknown>) {
  const res = await server.app.server.inject({ method: 'POST', url, payload: body })
  return { status: res.statusCode, body: res.body }
}

/** Creates a confirmed user through the admin API. */
async function confirmedUser(server: TestServer, email: string): Promise<void> {
  const res = await server.request('POST', '/admin/users', {
    token: server.serviceKey,
    body: { email, password: 'secret123', email_confirm: true },
  })
  expect(res.statusCode).toBe(200)
}

describe('no account enumeration through the mail endpoints', () => {
  const clock = new FakeClock(Date.now())
  const mailer = new HeldMailer()
  let server: TestServer
  let closed: TestServer

  beforeAll(async () => {
    const env = { AUTHSVC_MAILER_AUTOCONFIRM: 'false', AUTHSVC_RATE_LIMIT_EMAIL_SENT: '1000' }
    ;[server, closed] = await Promise.all([
      startTestServer('enum', env, clock, { deps: { mailer } }),
      startTestServer('enum_closed', { ...env, AUTHSVC_DISABLE_SIGNUP: 'true' }, clock, {
        deps: { mailer: new RecordingMailer() },
      }),
    ])
    await confirmedUser(server, 'known@example.com')
    await confirmedUser(closed, 'member@example.com')
  })
  afterAll(async () => {
    mailer.release()
    await Promise.all([server.close(), closed.close()])
  })

  it('answers a known and an unknown address alike, twice in a row, before sending anything', async () => {
    const requests: [string, Record<string, unknown>][] = [
      ['/recover', {}],
      ['/otp', { create_user: false }],
      ['/magiclink', {}],
      ['/otp', {}],
    ]
    const known = []
    const unknown = []
    // Twice: the second request of each address falls within SMTP_MAX_FREQUENCY.
    for (let round = 0; round < 2; round++) {
      for (const [url, body] of requests) {
        known.push(await answer(server, url, { ...body, email: 'known@example.com' }))
        unknown.push(await answer(server, url, { ...body, email: 'ghost@example.com' }))
      }
    }
    expect(known).toEqual(unknown)
    expect(new Set(known.map((a) => JSON.stringify(a)))).toEqual(
      new Set([JSON.stringify({ status: 200, body: '{}' })]),
    )
    // Every answer came while the SMTP server held the first send.
    expect(mailer.sent).toEqual([])
    mailer.release()
    await server.app.flushMail()
    // The known address got one mail (the others fell within SMTP_MAX_FREQUENCY). The unknown
    // one was signed up by /magiclink, as upstream does, and got its confirmation; the second
    // /recover then found that (unconfirmed) user and sent it a recovery mail, as upstream.
    expect(mailer.sent.map((m) => `${m.to} ${m.kind}`).sort()).toEqual([
      'ghost@example.com confirmation',
      'ghost@example.com recovery',
      'known@example.com recovery',
    ])
  })

  it('under DISABLE_SIGNUP, answers an unknown address as a member (upstream: 422 signup_disabled)', async () => {
    for (const url of ['/otp', '/magiclink']) {
      const member = await answer(closed, url, { email: 'member@example.com' })
      const stranger = await answer(closed, url, { email: 'stranger@example.com' })
      expect(stranger).toEqual(member)
      expect(member).toEqual({ status: 200, body: '{}' })
    }
    await closed.app.flushMail()
    const { rows } = await closed.app.db.query(
      `SELECT email FROM ${closed.app.db.t.users} ORDER BY email`,
    )
    expect(rows).toEqual([{ email: 'member@example.com' }])
  })

  it('still refuses malformed requests, alike for every address', async () => {
    expect(await answer(server, '/recover', { email: 'not-an-address' })).toMatchObject({
      status: 400,
    })
    expect(await answer(server, '/otp', { email: 'known@example.com', channel: 'sms' })).toEqual(
      await answer(server, '/otp', { email: 'ghost2@example.com', channel: 'sms' }),
    )
  })
})

describe('the mail queue keeps what it was given', () => {
  const clock = new FakeClock(Date.now())
  const mailer = new RecordingMailer()
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer(
      'enum_queue',
      { AUTHSVC_MAILER_AUTOCONFIRM: 'false', AUTHSVC_RATE_LIMIT_EMAIL_SENT: '1000' },
      clock,
      { deps: { mailer } },
    )
    await confirmedUser(server, 'kept@example.com')
  })
  afterAll(async () => {
    await server.close()
  })

  it('retries a refused send with back-off, and another instance sends what a stopped one left', async () => {
    mailer.failing = true
    expect(
      (await server.request('POST', '/recover', { body: { email: 'kept@example.com' } }))
        .statusCode,
    ).toBe(200)
    // First retry after 5 s, then 10 s.
    clock.advance(5_000)
    await server.app.flushMail()
    expect(mailer.messages).toEqual([])
    const { rows: queued } = await server.app.db.query<{ attempts: number; last_error: string }>(
      `SELECT attempts, last_error FROM ${server.app.db.t.mailQueue}`,
    )
    expect(queued.map((row) => row.attempts)).toEqual([2])
    expect(queued[0]?.last_error).toContain('ECONNREFUSED')
    // This instance stops; another one, on the same database, with a working SMTP server.
    await server.app.close()
    mailer.failing = false
    const other = await createAuthApp(server.settings, { clock, mailer })
    try {
      clock.advance(10_000)
      await other.flushMail()
      const { rows } = await other.db.query<{ recovery_token: string }>(
        `SELECT recovery_token FROM ${other.db.t.users} WHERE email = 'kept@example.com'`,
      )
      expect(mailer.to('kept@example.com', 'recovery').map((m) => m.tokenHash)).toEqual([
        rows[0]?.recovery_token,
      ])
      const { rows: left } = await other.db.query(`SELECT id FROM ${other.db.t.mailQueue}`)
      expect(left).toEqual([])
    } finally {
      await other.close()
    }
  })
})
