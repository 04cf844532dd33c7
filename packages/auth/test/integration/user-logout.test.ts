import { FakeClock } from '@gatehouse/testing'
import { decodeJwt, SignJWT } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signUp, startTestServer, TEST_JWT_SECRET, type TestServer } from '../helpers.js'

const secret = new TextEncoder().encode(TEST_JWT_SECRET)

async function signIn(server: TestServer, email: string, password = 'password123') {
  const res = await server.request('POST', '/token?grant_type=password', {
    body: { email, password },
  })
  expect(res.statusCode).toBe(200)
  return res.json()
}

async function sessionCount(server: TestServer, userId: string): Promise<number> {
  const { rows } = await server.app.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${server.app.db.t.sessions} WHERE user_id = $1`,
    [userId],
  )
  return rows[0]!.n
}

describe('GET/PUT /user and POST /logout', () => {
  const clock = new FakeClock(Date.now())
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer('user', {}, clock)
  })
  afterAll(async () => {
    await server.close()
  })

  it('returns the user of the access token', async () => {
    const session = await signUp(server, 'me@example.com')
    const res = await server.request('GET', '/user', { token: session.access_token })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ id: session.user.id, email: 'me@example.com' })
  })

  it.each([
    [undefined, 401, 'no_authorization', 'This endpoint requires a valid Bearer token'],
    ['Basic abc', 401, 'no_authorization', 'This endpoint requires a valid Bearer token'],
  ])('answers Authorization %s with %i', async (header, status, code, msg) => {
    const res = await server.request('GET', '/user', {
      headers: header === undefined ? {} : { authorization: header },
    })
    expect(res.statusCode).toBe(status)
    expect(res.json()).toEqual({ code: status, error_code: code, msg })
  })

  it('rejects bad signatures, expired tokens, missing users and missing sessions', async () => {
    const forged = await new SignJWT({ sub: crypto.randomUUID() })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode('another-secret-another-secret-another!'))
    const bad = await server.request('GET', '/user', { token: forged })
    expect(bad.statusCode).toBe(403)
    expect(bad.json().error_code).toBe('bad_jwt')
    expect(bad.json().msg).toMatch(/^invalid JWT: unable to parse or verify signature, /)

    const nobody = await new SignJWT({ sub: crypto.randomUUID() })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime(Math.floor(clock.now() / 1000) + 600)
      .sign(secret)
    expect((await server.request('GET', '/user', { token: nobody })).json()).toEqual({
      code: 403,
      error_code: 'user_not_found',
      msg: 'User from sub claim in JWT does not exist',
    })

    const noSub = await new SignJWT({ role: 'authenticated' })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime(Math.floor(clock.now() / 1000) + 600)
      .sign(secret)
    expect((await server.request('GET', '/user', { token: noSub })).json()).toMatchObject({
      code: 403,
      error_code: 'bad_jwt',
      msg: 'invalid claim: missing sub claim',
    })

    const session = await signUp(server, 'expiring@example.com')
    await server.request('POST', '/logout', { token: session.access_token })
    const gone = await server.request('GET', '/user', {
      token: session.access_token,
      headers: { 'x-supabase-api-version': '2024-01-01' },
    })
    expect(gone.statusCode).toBe(403)
    expect(gone.json()).toEqual({
      code: 'session_not_found',
      message: 'Session from session_id claim in JWT does not exist',
    })

    const live = await signIn(server, 'expiring@example.com')
    clock.advance(3_601_000)
    const expired = await server.request('GET', '/user', { token: live.access_token })
    expect(expired.statusCode).toBe(403)
    expect(expired.json().error_code).toBe('bad_jwt')
  })

  /** @see issue 8, item 9: a token without `exp` would be a credential that never expires. */
  it('refuses bearer tokens without exp, user and admin alike', async () => {
    const session = await signUp(server, 'no-exp@example.com')
    const { exp: _exp, ...claims } = decodeJwt(session.access_token)
    const forever = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(secret)
    const expected = {
      code: 403,
      error_code: 'bad_jwt',
      msg: 'invalid JWT: unable to parse or verify signature, missing required "exp" claim',
    }
    expect((await server.request('GET', '/user', { token: forever })).json()).toEqual(expected)
    const admin = await new SignJWT({ role: 'service_role' })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(secret)
    expect((await server.request('GET', '/admin/users', { token: admin })).json()).toEqual(expected)
  })

  it('checks the X-JWT-AUD header against the token audience', async () => {
    const session = await signUp(server, 'aud@example.com')
    const res = await server.request('GET', '/user', {
      token: session.access_token,
      headers: { 'x-jwt-aud': 'other' },
    })
    expect(res.json()).toEqual({
      code: 400,
      error_code: 'validation_failed',
      msg: "Token audience doesn't match request audience",
    })
  })

  it('merges data into user_metadata (null removes a key) and writes an audit entry', async () => {
    const session = await signUp(server, 'meta@example.com')
    await server.request('PUT', '/user', {
      token: session.access_token,
      body: { data: { a: 1, b: 2 } },
    })
    const res = await server.request('PUT', '/user', {
      token: session.access_token,
      body: { data: { b: null, c: 'x' }, code_challenge: null, code_challenge_method: null },
    })
    expect(res.statusCode).toBe(200)
    const metadata = res.json().user_metadata
    expect(metadata).toMatchObject({ a: 1, c: 'x' })
    expect(metadata).not.toHaveProperty('b')
    const { rows } = await server.app.db.query(
      `SELECT 1 FROM ${server.app.db.t.auditLogEntries}
       WHERE payload->>'actor_id' = $1 AND payload->>'action' = 'user_modified'`,
      [session.user.id],
    )
    expect(rows).toHaveLength(2)
  })

  it('refuses app_metadata from users', async () => {
    const session = await signUp(server, 'appmeta@example.com')
    const res = await server.request('PUT', '/user', {
      token: session.access_token,
      body: { app_metadata: { role: 'admin' } },
    })
    expect(res.json()).toEqual({
      code: 403,
      error_code: 'not_admin',
      msg: 'Updating app_metadata requires admin privileges',
    })
  })

  it('an SSO user (one migrated from GoTrue) keeps email, phone and password managed by SSO', async () => {
    const session = await signUp(server, 'sso@example.com')
    await server.app.db.query(
      `UPDATE ${server.app.db.t.users} SET is_sso_user = true WHERE id = $1`,
      [session.user.id],
    )
    const refused = {
      code: 422,
      error_code: 'user_sso_managed',
      msg: 'Updating email, phone, password of a SSO account only possible via SSO',
    }
    for (const body of [
      { email: 'other@example.com' },
      { phone: '+14155550100' },
      { password: 'another-password-1' },
      { nonce: '123456' },
    ]) {
      const res = await server.request('PUT', '/user', { token: session.access_token, body })
      expect({ body, status: res.statusCode, json: res.json() }).toEqual({
        body,
        status: 422,
        json: refused,
      })
    }
    // Its own email again and metadata are no change of what SSO manages.
    const allowed = await server.request('PUT', '/user', {
      token: session.access_token,
      body: { email: 'sso@example.com', data: { theme: 'dark' } },
    })
    expect(allowed.statusCode).toBe(200)
    expect(allowed.json()).toMatchObject({
      email: 'sso@example.com',
      user_metadata: { theme: 'dark' },
    })
  })

  it('changes the password: weak and same passwords are refused, other sessions end', async () => {
    const first = await signUp(server, 'pw@example.com')
    const second = await signIn(server, 'pw@example.com')
    const weak = await server.request('PUT', '/user', {
      token: first.access_token,
      body: { password: 'x' },
    })
    expect(weak.statusCode).toBe(422)
    expect(weak.json().weak_password).toEqual({ reasons: ['length'] })
    const same = await server.request('PUT', '/user', {
      token: first.access_token,
      body: { password: 'password123' },
    })
    expect(same.json()).toEqual({
      code: 422,
      error_code: 'same_password',
      msg: 'New password should be different from the old password.',
    })
    const ok = await server.request('PUT', '/user', {
      token: first.access_token,
      body: { password: 'new-password-1' },
    })
    expect(ok.statusCode).toBe(200)
    expect(await sessionCount(server, first.user.id)).toBe(1)
    const refreshSecond = await server.request('POST', '/token?grant_type=refresh_token', {
      body: { refresh_token: second.refresh_token },
    })
    expect(refreshSecond.json().error_code).toBe('refresh_token_not_found')
    expect((await signIn(server, 'pw@example.com', 'new-password-1')).access_token).toEqual(
      expect.any(String),
    )
  })

  it('logs out with scope local, others and global (default), accepting an empty body', async () => {
    const a = await signUp(server, 'scopes@example.com')
    const b = await signIn(server, 'scopes@example.com')
    const c = await signIn(server, 'scopes@example.com')
    const d = await signIn(server, 'scopes@example.com')
    expect(await sessionCount(server, a.user.id)).toBe(4)

    const local = await server.app.server.inject({
      method: 'POST',
      url: '/logout?scope=local',
      headers: {
        authorization: `Bearer ${a.access_token}`,
        'content-type': 'application/json;charset=UTF-8',
      },
    })
    expect(local.statusCode).toBe(204)
    expect(local.body).toBe('')
    expect(await sessionCount(server, a.user.id)).toBe(3)

    const others = await server.request('POST', '/logout?scope=others', { token: b.access_token })
    expect(others.statusCode).toBe(204)
    expect(await sessionCount(server, a.user.id)).toBe(1)
    expect((await server.request('GET', '/user', { token: c.access_token })).statusCode).toBe(403)

    await signIn(server, 'scopes@example.com')
    const global = await server.request('POST', '/logout', { token: b.access_token })
    expect(global.statusCode).toBe(204)
    expect(await sessionCount(server, a.user.id)).toBe(0)
    expect((await server.request('GET', '/user', { token: d.access_token })).statusCode).toBe(403)

    const { rows } = await server.app.db.query(
      `SELECT 1 FROM ${server.app.db.t.auditLogEntries}
       WHERE payload->>'actor_id' = $1 AND payload->>'action' = 'logout'`,
      [a.user.id],
    )
    expect(rows).toHaveLength(3)
  })

  it('rejects unknown logout scopes', async () => {
    const session = await signUp(server, 'badscope@example.com')
    const res = await server.request('POST', '/logout?scope=everything', {
      token: session.access_token,
    })
    expect(res.json()).toEqual({
      code: 400,
      error_code: 'validation_failed',
      msg: 'Unsupported logout scope "everything"',
    })
  })
})
