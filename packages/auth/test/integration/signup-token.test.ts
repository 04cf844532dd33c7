import { randomBytes } from 'node:crypto'
import { adminDatabaseUrl, FakeClock, waitFor } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decodeJwt } from 'jose'
import pg from 'pg'
import { signUp, startTestServer, type Reply, type TestServer } from '../helpers.js'

const V2024 = { 'x-supabase-api-version': '2024-01-01' }

describe('POST /signup and POST /token (password grant)', () => {
  let server: TestServer
  let confirmOff: TestServer

  beforeAll(async () => {
    server = await startTestServer('signup', {
      AUTHSVC_PASSWORD_REQUIRED_CHARACTERS: 'abcdefghijklmnopqrstuvwxyz:0123456789',
      AUTHSVC_EXTERNAL_PHONE_ENABLED: 'true',
      AUTHSVC_SMS_AUTOCONFIRM: 'true',
    })
    confirmOff = await startTestServer('signup_confirm', { AUTHSVC_MAILER_AUTOCONFIRM: 'false' })
  })
  afterAll(async () => {
    await server.close()
    await confirmOff.close()
  })

  it('signs up with auto-confirm and returns a session with upstream claims', async () => {
    const res = await server.request('POST', '/signup', {
      body: { email: 'Alice@Example.com', password: 'secret123', data: { full_name: 'Alice' } },
    })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body).toMatchObject({ token_type: 'bearer', expires_in: 3600 })
    expect(body.refresh_token).toMatch(/^[a-z2-7]{12}$/)
    expect(body.user).toMatchObject({
      email: 'alice@example.com',
      aud: 'authenticated',
      role: 'authenticated',
      app_metadata: { provider: 'email', providers: ['email'] },
      user_metadata: { full_name: 'Alice', email_verified: true },
      is_anonymous: false,
    })
    expect(body.user.identities).toHaveLength(1)
    const claims = decodeJwt(body.access_token)
    expect(Object.keys(claims)).toEqual([
      'aud',
      'exp',
      'iat',
      'sub',
      'email',
      'phone',
      'app_metadata',
      'user_metadata',
      'role',
      'aal',
      'amr',
      'session_id',
      'is_anonymous',
    ])
    expect(claims).toMatchObject({
      sub: body.user.id,
      role: 'authenticated',
      aal: 'aal1',
      phone: '',
    })
    expect(claims.exp! - claims.iat!).toBe(3600)
  })

  it('returns a faux user for a duplicate email so that existence is not revealed', async () => {
    const first = await signUp(server, 'dup@example.com', 'secret123')
    const res = await server.request('POST', '/signup', {
      body: { email: 'dup@example.com', password: 'other1234' },
    })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body.access_token).toBeUndefined()
    expect(body.id).not.toBe(first.user.id)
    expect(body).toMatchObject({ email: 'dup@example.com', identities: [] })
  })

  it('refuses a duplicate phone under SMS auto-confirm with 400 "User already registered"', async () => {
    const ok = await server.request('POST', '/signup', {
      body: { phone: '+1 555 0100', password: 'secret123' },
    })
    expect(ok.statusCode).toBe(200)
    expect(ok.json().user.phone).toBe('15550100')
    const dup = await server.request('POST', '/signup', {
      body: { phone: '+15550100', password: 'secret123' },
    })
    expect(dup.statusCode).toBe(400)
    expect(dup.json()).toEqual({
      code: 400,
      error_code: 'user_already_exists',
      msg: 'User already registered',
    })
  })

  it('reports sms_send_failed when a phone confirmation cannot be sent', async () => {
    const phoneOnly = await startTestServer('signup_sms', {
      AUTHSVC_EXTERNAL_PHONE_ENABLED: 'true',
      AUTHSVC_MAILER_AUTOCONFIRM: 'false',
    })
    try {
      const res = await phoneOnly.request('POST', '/signup', {
        body: { phone: '+15550199', password: 'secret123' },
      })
      expect(res.statusCode).toBe(422)
      expect(res.json()).toEqual({
        code: 422,
        error_code: 'sms_send_failed',
        msg: 'Error sending confirmation OTP to provider: no SMS provider is configured',
      })
    } finally {
      await phoneOnly.close()
    }
  })

  it('without auto-confirm returns the user and no session, and sign-in says email not confirmed', async () => {
    const res = await confirmOff.request('POST', '/signup', {
      body: { email: 'pending@example.com', password: 'secret123' },
    })
    expect(res.statusCode).toBe(200)
    expect(res.json().access_token).toBeUndefined()
    expect(res.json().confirmation_sent_at).toEqual(expect.any(String))
    const login = await confirmOff.request('POST', '/token?grant_type=password', {
      body: { email: 'pending@example.com', password: 'secret123' },
    })
    expect(login.statusCode).toBe(400)
    expect(login.json()).toMatchObject({
      error_code: 'email_not_confirmed',
      msg: 'Email not confirmed',
    })
  })

  it.each([
    [{ email: 'x@example.com' }, 400, 'validation_failed', 'Signup requires a valid password'],
    [
      { email: 'x@example.com', password: 'a1'.repeat(37) },
      400,
      'validation_failed',
      'Password cannot be longer than 72 characters',
    ],
    [
      { email: 'x@example.com', phone: '15550101', password: 'secret123' },
      400,
      'validation_failed',
      'Only an email address or phone number should be provided on signup.',
    ],
    [
      { email: 'not-an-email', password: 'secret123' },
      400,
      'validation_failed',
      'Unable to validate email address: invalid format',
    ],
    [
      { phone: '0123', password: 'secret123' },
      400,
      'validation_failed',
      'Invalid phone number format (E.164 required)',
    ],
    [{}, 422, 'anonymous_provider_disabled', 'Anonymous sign-ins are disabled'],
  ])('rejects %j with %i %s', async (body, status, code, msg) => {
    const res = await server.request('POST', '/signup', { body })
    expect(res.statusCode).toBe(status)
    expect(res.json()).toEqual({ code: status, error_code: code, msg })
    expect(res.headers['x-sb-error-code']).toBe(code)
  })

  it('reports weak passwords with reasons in both error shapes', async () => {
    const legacy = await server.request('POST', '/signup', {
      body: { email: 'weak@example.com', password: 'abc' },
    })
    expect(legacy.statusCode).toBe(422)
    expect(legacy.json()).toEqual({
      code: 422,
      error_code: 'weak_password',
      msg: 'Password should be at least 6 characters. Password should contain at least one character of each: abcdefghijklmnopqrstuvwxyz, 0123456789.',
      weak_password: { reasons: ['length', 'characters'] },
    })
    const modern = await server.request('POST', '/signup', {
      body: { email: 'weak@example.com', password: 'abcdefgh' },
      headers: V2024,
    })
    expect(modern.statusCode).toBe(422)
    expect(modern.headers['x-supabase-api-version']).toBe('2024-01-01')
    expect(modern.json()).toEqual({
      code: 'weak_password',
      message:
        'Password should contain at least one character of each: abcdefghijklmnopqrstuvwxyz, 0123456789.',
      weak_password: { reasons: ['characters'] },
    })
  })

  it('answers invalid JSON with bad_json and oversized bodies with 413', async () => {
    const bad = await server.request('POST', '/signup', { body: '{"email":' })
    expect(bad.statusCode).toBe(400)
    expect(bad.json().error_code).toBe('bad_json')
    expect(bad.json().msg).toMatch(/^Could not parse request body as JSON: /)
    const empty = await server.request('POST', '/signup', {
      body: '',
      headers: { 'content-type': 'application/json' },
    })
    expect(empty.json()).toMatchObject({
      error_code: 'bad_json',
      msg: 'Could not parse request body as JSON: unexpected end of JSON input',
    })
    const big = await server.request('POST', '/signup', {
      body: JSON.stringify({ email: 'big@example.com', password: 'x'.repeat(1_100_000) }),
    })
    expect(big.statusCode).toBe(413)
    expect(big.json()).toEqual({
      code: 413,
      error_code: 'request_entity_too_large',
      msg: 'Request body too large (max 1048576 bytes)',
    })
  })

  it("parses a JSON body sent with curl's default form content type, as upstream", async () => {
    const res = await server.app.server.inject({
      method: 'POST',
      url: '/signup',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: JSON.stringify({ email: 'curl@example.com', password: 'secret123' }),
    })
    expect(res.statusCode).toBe(200)
    expect(res.json<Reply>().user.email).toBe('curl@example.com')
  })

  it('ignores unknown fields', async () => {
    const res = await server.request('POST', '/signup', {
      body: { email: 'extra@example.com', password: 'secret123', favourite_colour: 'green' },
    })
    expect(res.statusCode).toBe(200)
  })

  it('signs in with a password (JSON, grant type in the query) and records last_sign_in_at', async () => {
    await signUp(server, 'bob@example.com', 'secret123')
    const res = await server.request('POST', '/token?grant_type=password', {
      body: { email: 'BOB@example.com', password: 'secret123', gotrue_meta_security: {} },
    })
    expect(res.statusCode).toBe(200)
    expect(res.headers['cache-control']).toBe('no-store')
    const body = res.json()
    expect(body.user.last_sign_in_at).toEqual(expect.any(String))
    const amr = decodeJwt(body.access_token).amr as { method: string; timestamp: number }[]
    expect(amr.map((entry) => entry.method)).toEqual(['password'])
    expect(Number.isInteger(amr[0]!.timestamp)).toBe(true)
  })

  it('adds weak_password to a sign-in whose password no longer meets the policy', async () => {
    // Created through the admin API, which does not check strength.
    await server.request('POST', '/admin/users', {
      token: server.serviceKey,
      body: { email: 'old@example.com', password: 'abcdef', email_confirm: true },
    })
    const res = await server.request('POST', '/token?grant_type=password', {
      body: { email: 'old@example.com', password: 'abcdef' },
    })
    expect(res.statusCode).toBe(200)
    // Upstream's message too: auth-js reports `weakPassword` only with both.
    expect(res.json().weak_password).toEqual({
      message:
        'Password should contain at least one character of each: abcdefghijklmnopqrstuvwxyz, 0123456789.',
      reasons: ['characters'],
    })
  })

  it.each([
    [
      { email: 'bob@example.com', password: 'wrong' },
      'invalid_credentials',
      'Invalid login credentials',
    ],
    [
      { email: 'nobody@example.com', password: 'x' },
      'invalid_credentials',
      'Invalid login credentials',
    ],
    [{ password: 'x' }, 'validation_failed', 'missing email or phone'],
    [
      { email: 'bob@example.com', phone: '15550100', password: 'x' },
      'validation_failed',
      'Only an email address or phone number should be provided on login.',
    ],
  ])('password grant %j fails with %s', async (body, code, msg) => {
    const res = await server.request('POST', '/token?grant_type=password', { body })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toEqual({ code: 400, error_code: code, msg })
  })

  it('rejects an unknown grant type', async () => {
    const res = await server.request('POST', '/token?grant_type=magic', { body: {} })
    expect(res.json()).toEqual({
      code: 400,
      error_code: 'invalid_credentials',
      msg: 'unsupported_grant_type',
    })
  })

  it('accepts RFC 6749 form-encoded password and refresh grants with HTTP Basic client auth', async () => {
    await signUp(server, 'form@example.com', 'secret123')
    const basic = `Basic ${Buffer.from('my-client:my-secret').toString('base64')}`
    const res = await server.app.server.inject({
      method: 'POST',
      url: '/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic },
      payload: 'grant_type=password&username=form%40example.com&password=secret123&scope=openid',
    })
    expect(res.statusCode).toBe(200)
    const tokens = res.json<Reply>()
    expect(tokens).toMatchObject({ token_type: 'bearer', expires_in: 3600 })
    const refreshed = await server.app.server.inject({
      method: 'POST',
      url: '/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic },
      payload: `grant_type=refresh_token&refresh_token=${tokens.refresh_token}&client_id=my-client`,
    })
    expect(refreshed.statusCode).toBe(200)
    expect(refreshed.json<Reply>().refresh_token).not.toBe(tokens.refresh_token)
  })

  it('answers form-encoded token requests with RFC 6749 §5.2 errors', async () => {
    const form = (payload: string) =>
      server.app.server.inject({
        method: 'POST',
        url: '/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload,
      })
    const wrong = await form('grant_type=password&username=form%40example.com&password=nope')
    expect(wrong.statusCode).toBe(400)
    expect(wrong.json()).toEqual({
      error: 'invalid_grant',
      error_description: 'Invalid login credentials',
    })
    expect((await form('grant_type=client_credentials')).json()).toEqual({
      error: 'unsupported_grant_type',
    })
    expect((await form('grant_type=refresh_token&refresh_token=abcdefghijkl')).json()).toEqual({
      error: 'invalid_grant',
      error_description: 'Invalid Refresh Token: Refresh Token Not Found',
    })
    expect((await form('grant_type=refresh_token')).json()).toEqual({
      error: 'invalid_request',
      error_description: 'Refresh token is not valid',
    })
  })

  /** @see issue 8, item 7: a ban is reported only to someone who knows the password. */
  it('reports a ban only after the password was checked', async () => {
    const { user } = await signUp(server, 'banned@example.com', 'secret123')
    const ban = await server.request('PUT', `/admin/users/${user.id}`, {
      token: server.serviceKey,
      body: { ban_duration: '24h' },
    })
    expect(ban.statusCode).toBe(200)
    const wrong = await server.request('POST', '/token?grant_type=password', {
      body: { email: 'banned@example.com', password: 'wrong' },
    })
    expect(wrong.json()).toEqual({
      code: 400,
      error_code: 'invalid_credentials',
      msg: 'Invalid login credentials',
    })
    const right = await server.request('POST', '/token?grant_type=password', {
      body: { email: 'banned@example.com', password: 'secret123' },
    })
    expect(right.json()).toEqual({ code: 400, error_code: 'user_banned', msg: 'User is banned' })
  })
})

/** @see issue 8, item 7 (enumeration and disclosure on sign-up) */
describe('duplicate sign-ups reveal nothing', () => {
  const applicationName = `gh_signup_dup_${randomBytes(4).toString('hex')}`
  let server: TestServer
  const clock = new FakeClock(Date.now())

  beforeAll(async () => {
    server = await startTestServer('signup_dup', { AUTHSVC_MAILER_AUTOCONFIRM: 'false' }, clock, {
      connectionParams: { application_name: applicationName },
    })
  })
  afterAll(async () => {
    await server.close()
  })

  async function confirmationToken(id: string): Promise<string> {
    const { rows } = await server.app.db.query<{ confirmation_token: string }>(
      `SELECT confirmation_token FROM ${server.app.db.t.users} WHERE id = $1`,
      [id],
    )
    return rows[0]!.confirmation_token
  }

  it('a duplicate email under another X-JWT-AUD is answered as any duplicate, not with a 500', async () => {
    const first = await server.request('POST', '/signup', {
      body: { email: 'aud-dup@example.com', password: 'secret123' },
    })
    expect(first.statusCode).toBe(200)
    const res = await server.request('POST', '/signup', {
      body: { email: 'aud-dup@example.com', password: 'secret123', data: { x: 1 } },
      headers: { 'x-jwt-aud': 'another-audience' },
    })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body.id).not.toBe(first.json().id)
    expect(body).toMatchObject({
      email: 'aud-dup@example.com',
      aud: 'another-audience',
      user_metadata: { x: 1 },
      identities: [],
    })
  })

  it('a duplicate of an unconfirmed account re-sends the confirmation (once per SMTP_MAX_FREQUENCY) but never returns the account', async () => {
    const first = await server.request('POST', '/signup', {
      body: {
        email: 'pending-dup@example.com',
        password: 'secret123',
        data: { plan: 'plan-platinum-7' },
      },
    })
    expect(first.statusCode).toBe(200)
    const real = first.json()
    const sentBefore = await confirmationToken(real.id)
    const tooSoon = await server.request('POST', '/signup', {
      body: { email: 'pending-dup@example.com', password: 'other-secret1' },
    })
    expect(tooSoon.statusCode).toBe(429)
    expect(tooSoon.json()).toMatchObject({
      error_code: 'over_email_send_rate_limit',
      msg: 'For security purposes, you can only request this after 900 seconds.',
    })
    expect(await confirmationToken(real.id)).toBe(sentBefore)
    clock.advance(900_000)
    const res = await server.request('POST', '/signup', {
      body: { email: 'pending-dup@example.com', password: 'other-secret1' },
    })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body.id).not.toBe(real.id)
    expect(body).toMatchObject({
      email: 'pending-dup@example.com',
      user_metadata: {},
      identities: [],
    })
    expect(JSON.stringify(body)).not.toContain(real.id)
    expect(JSON.stringify(body)).not.toContain('plan-platinum-7')
    expect(await confirmationToken(real.id)).not.toBe(sentBefore)
  })

  it('a sign-up racing another of the same email is answered as a duplicate, not with a 500', async () => {
    // A transaction of the test takes the email first and commits only once the sign-up waits.
    const holder = new pg.Client({ connectionString: server.database.url })
    await holder.connect()
    const observer = new pg.Client({ connectionString: adminDatabaseUrl() })
    await observer.connect()
    try {
      await holder.query('BEGIN')
      await holder.query(
        `INSERT INTO ${server.app.db.t.users} (instance_id, id, aud, role, email, created_at, updated_at)
         VALUES ('00000000-0000-0000-0000-000000000000', gen_random_uuid(), 'authenticated', '',
           'race-dup@example.com', now(), now())`,
      )
      const signup = server.request('POST', '/signup', {
        body: { email: 'race-dup@example.com', password: 'secret123' },
      })
      await waitFor(
        async () => {
          const { rows } = await observer.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE application_name = $1 AND wait_event_type = 'Lock'`,
            [applicationName],
          )
          return rows[0]?.n === 1
        },
        { what: 'the sign-up waiting on the email' },
      )
      await holder.query('COMMIT')
      const res = await signup
      expect(res.statusCode).toBe(200)
      expect(res.json()).toMatchObject({ email: 'race-dup@example.com', identities: [] })
    } finally {
      await holder.end()
      await observer.end()
    }
  })
})
