import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RecordingMailer, startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'

/**
 * Device sessions (issue 28 item 8, beyond upstream): a user lists their sessions with the device
 * and address each was used from, and ends one; an admin does the same for any user. Two real
 * auth-js clients play two devices.
 */

interface Listed {
  id: string
  user_agent: string | null
  ip: string | null
  aal: string
  refreshed_at: string | null
  current: boolean
}

describe('device sessions', () => {
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer('device_sessions')
    await server.listen()
  })
  afterAll(async () => {
    await server.close()
  })

  /** A client that says which device it is (its `User-Agent`). */
  function device(name: string) {
    return authJsClient(server.url, { headers: { 'user-agent': name } })
  }

  async function listOf(token: string, path = '/user/sessions') {
    const res = await server.request('GET', path, { token })
    expect(res.statusCode).toBe(200)
    return (res.json() as unknown as { sessions: Listed[] }).sessions
  }

  it("lists the sessions of two devices, the caller's marked current, and ends the other", async () => {
    const email = 'two-devices@example.com'
    const phone = device('Phone/1.0')
    expect((await phone.signUp({ email, password: 'password123' })).error).toBeNull()
    const laptop = device('Laptop/2.0')
    const signIn = await laptop.signInWithPassword({ email, password: 'password123' })
    expect(signIn.error).toBeNull()
    const laptopToken = signIn.data.session?.access_token ?? ''
    const sessions = await listOf(laptopToken)
    expect(sessions).toHaveLength(2)
    const mine = sessions.filter((s) => s.current)
    expect(mine.map((s) => s.user_agent)).toEqual(['Laptop/2.0'])
    const other = sessions.find((s) => !s.current)
    expect(other).toMatchObject({ user_agent: 'Phone/1.0', ip: '127.0.0.1', aal: 'aal1' })

    const ended = await server.request('DELETE', `/user/sessions/${other?.id ?? ''}`, {
      token: laptopToken,
    })
    expect(ended.statusCode).toBe(200)
    // The phone's refresh token went with its session.
    const refresh = await phone.refreshSession()
    expect(refresh.error?.code).toBe('refresh_token_not_found')
    expect((await listOf(laptopToken)).map((s) => s.user_agent)).toEqual(['Laptop/2.0'])
    // Ending it again, or a session id that names nothing, is 404.
    const again = await server.request('DELETE', `/user/sessions/${other?.id ?? ''}`, {
      token: laptopToken,
    })
    expect(again.statusCode).toBe(404)
    expect(again.json()).toMatchObject({ error_code: 'session_not_found' })
    const malformed = await server.request('DELETE', '/user/sessions/not-a-uuid', {
      token: laptopToken,
    })
    expect(malformed.statusCode).toBe(404)
  })

  it("never shows or ends another user's sessions", async () => {
    const alice = device('Alice')
    const { data } = await alice.signUp({ email: 'alice-ds@example.com', password: 'password123' })
    const aliceToken = data.session?.access_token ?? ''
    const bob = device('Bob')
    const bobSignUp = await bob.signUp({ email: 'bob-ds@example.com', password: 'password123' })
    const bobToken = bobSignUp.data.session?.access_token ?? ''
    const [bobSession] = await listOf(bobToken)
    expect((await listOf(aliceToken)).map((s) => s.id)).not.toContain(bobSession?.id)
    const res = await server.request('DELETE', `/user/sessions/${bobSession?.id ?? ''}`, {
      token: aliceToken,
    })
    expect(res.statusCode).toBe(404)
    expect((await bob.refreshSession()).error).toBeNull()
    expect((await server.request('GET', '/user/sessions')).statusCode).toBe(401)
  })

  it("lets an admin list and end any user's sessions, and records it", async () => {
    const user = device('Tablet')
    const { data } = await user.signUp({ email: 'admin-ds@example.com', password: 'password123' })
    const userId = data.user?.id ?? ''
    const sessions = await listOf(server.serviceKey, `/admin/users/${userId}/sessions`)
    expect(sessions).toHaveLength(1)
    expect(sessions[0]).toMatchObject({ user_agent: 'Tablet', current: false })
    const ended = await server.request(
      'DELETE',
      `/admin/users/${userId}/sessions/${sessions[0]?.id ?? ''}`,
      { token: server.serviceKey },
    )
    expect(ended.statusCode).toBe(200)
    expect((await user.refreshSession()).error?.code).toBe('refresh_token_not_found')
    const audit = await server.request('GET', '/admin/audit?query=action:logout', {
      token: server.serviceKey,
    })
    const entries = audit.json() as unknown as { payload: { traits?: { session_id?: string } } }[]
    expect(entries.map((e) => e.payload.traits?.session_id)).toContain(sessions[0]?.id)
    const unknownUser = await server.request(
      'GET',
      '/admin/users/6f1c1a56-4a0e-4ad4-9a4b-3a0b0d9b8c01/sessions',
      { token: server.serviceKey },
    )
    expect(unknownUser.statusCode).toBe(404)
    for (const path of [
      `/admin/users/${userId}/sessions/not-a-uuid`,
      `/admin/users/not-a-uuid/sessions/${sessions[0]?.id ?? ''}`,
    ]) {
      const malformed = await server.request('DELETE', path, { token: server.serviceKey })
      expect(malformed.statusCode).toBe(404)
    }
    expect(
      (
        await server.request('GET', `/admin/users/${userId}/sessions`, {
          token: data.session?.access_token ?? '',
        })
      ).statusCode,
    ).toBe(403)
  })
})

describe('the new-device sign-in notification', () => {
  const mailer = new RecordingMailer()
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer(
      'device_sessions_mail',
      { AUTHSVC_MAILER_NOTIFICATIONS_NEW_SIGN_IN_ENABLED: 'true' },
      undefined,
      { deps: { mailer } },
    )
    await server.listen()
  })
  afterAll(async () => {
    await server.close()
  })

  const device = (name: string) => authJsClient(server.url, { headers: { 'user-agent': name } })
  const mailsTo = (email: string) => mailer.to(email, 'new_sign_in_notification')

  it('mails the user when a device none of their sessions came from signs in, and only then', async () => {
    const email = 'new-device@example.com'
    expect((await device('Phone/1.0').signUp({ email, password: 'password123' })).error).toBeNull()
    // The sign-up's own session is no new device, nor is another sign-in from the same one.
    expect(
      (await device('Phone/1.0').signInWithPassword({ email, password: 'password123' })).error,
    ).toBeNull()
    await server.app.flushMail()
    expect(mailsTo(email)).toEqual([])
    expect(
      (await device('Kiosk/9.9').signInWithPassword({ email, password: 'password123' })).error,
    ).toBeNull()
    await server.app.flushMail()
    const [mail, ...more] = mailsTo(email)
    expect(more).toEqual([])
    expect(mail).toMatchObject({ userAgent: 'Kiosk/9.9', ip: '127.0.0.1' })
  })
})
