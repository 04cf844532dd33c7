import { FakeClock } from '@gatehouse/testing'
import { SignJWT } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, TEST_JWT_SECRET, type TestServer } from '../helpers.js'

const secret = new TextEncoder().encode(TEST_JWT_SECRET)

function roleKey(role: string): Promise<string> {
  return new SignJWT({ role })
    .setProtectedHeader({ alg: 'HS256' })
    .setExpirationTime(Math.floor(Date.now() / 1000) + 3600)
    .sign(secret)
}

describe('admin users API and /invite', () => {
  const clock = new FakeClock(Date.now())
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer('admin', { AUTHSVC_MAILER_AUTOCONFIRM: 'false' }, clock)
  })
  afterAll(async () => {
    await server.close()
  })

  it('creates a user with metadata and confirmation, and reads it back', async () => {
    const res = await server.request('POST', '/admin/users', {
      token: server.serviceKey,
      body: {
        email: 'Created@Example.com',
        password: 'secret123',
        email_confirm: true,
        user_metadata: { name: 'C' },
        app_metadata: { plan: 'pro' },
        role: 'editor',
      },
    })
    expect(res.statusCode).toBe(200)
    const user = res.json()
    expect(user).toMatchObject({
      email: 'created@example.com',
      role: 'editor',
      user_metadata: { name: 'C' },
      app_metadata: { plan: 'pro', provider: 'email', providers: ['email'] },
    })
    expect(user.email_confirmed_at).toEqual(expect.any(String))
    const read = await server.request('GET', `/admin/users/${user.id}`, {
      token: server.serviceKey,
    })
    expect(read.json()).toMatchObject({ id: user.id, email: 'created@example.com' })
    const login = await server.request('POST', '/token?grant_type=password', {
      body: { email: 'created@example.com', password: 'secret123' },
    })
    expect(login.statusCode).toBe(200)
  })

  it.each([
    [{}, 400, 'validation_failed', 'Cannot create a user without either an email or phone'],
    [
      { email: 'a@b.co', password: 'x', password_hash: '$2a$10$abc' },
      400,
      'validation_failed',
      'Only a password or a password hash should be provided',
    ],
    [
      { email: 'a@b.co', id: 'nope' },
      400,
      'validation_failed',
      'ID must conform to the uuid v4 format',
    ],
    [
      { email: 'a@b.co', id: '00000000-0000-0000-0000-000000000000' },
      400,
      'validation_failed',
      'ID cannot be a nil uuid',
    ],
    [
      { email: 'a@b.co', ban_duration: '1d' },
      400,
      'validation_failed',
      'invalid format for ban duration: time: unknown unit "d" in duration "1d"',
    ],
  ])('refuses to create %j', async (body, status, code, msg) => {
    const res = await server.request('POST', '/admin/users', { token: server.serviceKey, body })
    expect(res.json()).toEqual({ code: status, error_code: code, msg })
  })

  it('refuses duplicate emails and phones', async () => {
    await server.request('POST', '/admin/users', {
      token: server.serviceKey,
      body: { email: 'taken@example.com', phone: '+4915112345678' },
    })
    const email = await server.request('POST', '/admin/users', {
      token: server.serviceKey,
      body: { email: 'TAKEN@example.com' },
    })
    expect(email.json()).toEqual({
      code: 422,
      error_code: 'email_exists',
      msg: 'A user with this email address has already been registered',
    })
    const phone = await server.request('POST', '/admin/users', {
      token: server.serviceKey,
      body: { phone: '4915112345678' },
    })
    expect(phone.json()).toEqual({
      code: 422,
      error_code: 'phone_exists',
      msg: 'Phone number already registered by another user',
    })
  })

  it('pages users with X-Total-Count and Link headers', async () => {
    for (const n of [1, 2, 3]) {
      clock.advance(1000)
      await server.request('POST', '/admin/users', {
        token: server.serviceKey,
        body: { email: `page${String(n)}@list.example` },
      })
    }
    const res = await server.request('GET', '/admin/users?page=1&per_page=2&filter=list.example', {
      token: server.serviceKey,
    })
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-total-count']).toBe('3')
    expect(res.headers.link).toBe(
      '</admin/users?page=2&per_page=2>; rel="next", </admin/users?page=2&per_page=2>; rel="last"',
    )
    const body = res.json()
    expect(body.aud).toBe('authenticated')
    expect(body.users.map((u) => u.email)).toEqual(['page3@list.example', 'page2@list.example'])
    const last = await server.request('GET', '/admin/users?page=2&per_page=2&filter=list.example', {
      token: server.serviceKey,
    })
    expect(last.json().users.map((u) => u.email)).toEqual(['page1@list.example'])
    expect(last.headers.link).toBe('</admin/users?page=2&per_page=2>; rel="last"')
    const none = await server.request('GET', '/admin/users?page=&per_page=&filter=zzz', {
      token: server.serviceKey,
    })
    expect(none.headers['x-total-count']).toBe('0')
    expect(none.headers.link).toBe('</admin/users?page=0&per_page=50>; rel="last"')
  })

  it('bans with a Go duration, unbans with "none"', async () => {
    const created = await server.request('POST', '/admin/users', {
      token: server.serviceKey,
      body: { email: 'ban@example.com', password: 'secret123', email_confirm: true },
    })
    const id = created.json().id
    const banned = await server.request('PUT', `/admin/users/${id}`, {
      token: server.serviceKey,
      body: { ban_duration: '1h30m' },
    })
    expect(banned.statusCode).toBe(200)
    expect(Date.parse(banned.json().banned_until!)).toBe(clock.now() + 90 * 60_000)
    const login = await server.request('POST', '/token?grant_type=password', {
      body: { email: 'ban@example.com', password: 'secret123' },
    })
    expect(login.json().error_code).toBe('user_banned')
    const unbanned = await server.request('PUT', `/admin/users/${id}`, {
      token: server.serviceKey,
      body: { ban_duration: 'none' },
    })
    expect(unbanned.json().banned_until).toBeUndefined()
    const again = await server.request('POST', '/token?grant_type=password', {
      body: { email: 'ban@example.com', password: 'secret123' },
    })
    expect(again.statusCode).toBe(200)
  })

  it('updates metadata, password (logging out all sessions) and confirms email', async () => {
    const created = await server.request('POST', '/admin/users', {
      token: server.serviceKey,
      body: { email: 'upd@example.com', password: 'secret123', user_metadata: { a: 1 } },
    })
    const id = created.json().id
    const res = await server.request('PUT', `/admin/users/${id}`, {
      token: server.serviceKey,
      body: {
        user_metadata: { b: 2 },
        app_metadata: { tier: 'gold' },
        email_confirm: true,
        password: 'new-secret1',
      },
    })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({
      user_metadata: { a: 1, b: 2 },
      app_metadata: { tier: 'gold' },
    })
    expect(res.json().email_confirmed_at).toEqual(expect.any(String))
    const weak = await server.request('PUT', `/admin/users/${id}`, {
      token: server.serviceKey,
      body: { password: '' },
    })
    expect(weak.statusCode).toBe(422)
    expect(weak.json().error_code).toBe('weak_password')
  })

  it('also accepts POST /admin/users/<id> for updates, as the spec lists', async () => {
    const created = await server.request('POST', '/admin/users', {
      token: server.serviceKey,
      body: { email: 'post-update@example.com' },
    })
    const res = await server.request('POST', `/admin/users/${created.json().id}`, {
      token: server.serviceKey,
      body: { role: 'editor' },
    })
    expect(res.statusCode).toBe(200)
    expect(res.json().role).toBe('editor')
  })

  it('answers unknown and malformed ids with 404', async () => {
    const bad = await server.request('GET', '/admin/users/not-a-uuid', { token: server.serviceKey })
    expect(bad.json()).toEqual({
      code: 404,
      error_code: 'validation_failed',
      msg: 'user_id must be an UUID',
    })
    const missing = await server.request('GET', `/admin/users/${crypto.randomUUID()}`, {
      token: server.serviceKey,
    })
    expect(missing.json()).toEqual({
      code: 404,
      error_code: 'user_not_found',
      msg: 'User not found',
    })
  })

  it('deletes users (hard and soft) with audit entries', async () => {
    const hard = (
      await server.request('POST', '/admin/users', {
        token: server.serviceKey,
        body: { email: 'hard@example.com' },
      })
    ).json().id
    const del = await server.request('DELETE', `/admin/users/${hard}`, { token: server.serviceKey })
    expect(del.statusCode).toBe(200)
    expect(del.json()).toEqual({})
    expect(
      (await server.request('GET', `/admin/users/${hard}`, { token: server.serviceKey }))
        .statusCode,
    ).toBe(404)

    const soft = (
      await server.request('POST', '/admin/users', {
        token: server.serviceKey,
        body: { email: 'soft@example.com' },
      })
    ).json().id
    await server.request('DELETE', `/admin/users/${soft}`, {
      token: server.serviceKey,
      body: { should_soft_delete: true },
    })
    const read = await server.request('GET', `/admin/users/${soft}`, { token: server.serviceKey })
    expect(read.json()).toMatchObject({ email: '', deleted_at: expect.any(String) as unknown })
    const { rows } = await server.app.db.query(
      `SELECT 1 FROM ${server.app.db.t.auditLogEntries} WHERE payload->>'action' = 'user_deleted'`,
    )
    expect(rows).toHaveLength(2)
  })

  it('requires an admin role', async () => {
    const user = await server.request('GET', '/admin/users', {
      token: await roleKey('authenticated'),
    })
    expect(user.json()).toEqual({ code: 403, error_code: 'not_admin', msg: 'User not allowed' })
    const none = await server.request('GET', '/admin/users')
    expect(none.statusCode).toBe(401)
    const supabaseAdmin = await server.request('GET', '/admin/users', {
      token: await roleKey('supabase_admin'),
    })
    expect(supabaseAdmin.statusCode).toBe(200)
  })

  it('lets only service_role and svc_admin invite', async () => {
    const forbidden = await server.request('POST', '/invite', {
      token: await roleKey('supabase_admin'),
      body: { email: 'invitee@example.com' },
    })
    expect(forbidden.json()).toEqual({
      code: 403,
      error_code: 'not_admin',
      msg: 'User not allowed',
    })
    const ok = await server.request('POST', '/invite', {
      token: await roleKey('svc_admin'),
      body: { email: 'invitee@example.com', data: { team: 'x' } },
    })
    expect(ok.statusCode).toBe(200)
    expect(ok.json()).toMatchObject({ email: 'invitee@example.com', user_metadata: { team: 'x' } })
    expect(ok.json().invited_at).toEqual(expect.any(String))
    const again = await server.request('POST', '/invite', {
      token: server.serviceKey,
      body: { email: 'invitee@example.com' },
    })
    expect(again.statusCode).toBe(200)
  })

  /** @see issue 8, item 9: bcrypt ignores bytes after the 72nd, so longer passwords are refused. */
  it('refuses passwords over 72 bytes on create and update (UTF-8 bytes, not characters)', async () => {
    const tooLong = 'é'.repeat(37) // 37 characters, 74 bytes
    const expected = {
      code: 400,
      error_code: 'validation_failed',
      msg: 'Password cannot be longer than 72 characters',
    }
    const created = await server.request('POST', '/admin/users', {
      token: server.serviceKey,
      body: { email: 'long-pw@example.com', password: tooLong, email_confirm: true },
    })
    expect(created.json()).toEqual(expected)
    const ok = await server.request('POST', '/admin/users', {
      token: server.serviceKey,
      body: { email: 'long-pw@example.com', password: 'é'.repeat(36), email_confirm: true },
    })
    expect(ok.statusCode).toBe(200)
    const updated = await server.request('PUT', `/admin/users/${ok.json().id}`, {
      token: server.serviceKey,
      body: { password: tooLong },
    })
    expect(updated.json()).toEqual(expected)
    const login = await server.request('POST', '/token?grant_type=password', {
      body: { email: 'long-pw@example.com', password: 'é'.repeat(36) },
    })
    const self = await server.request('PUT', '/user', {
      token: login.json().access_token,
      body: { password: tooLong },
    })
    expect(self.json()).toEqual(expected)
  })

  /** @see issue 8, item 7: an email is unique across audiences. */
  it('refuses to invite an email taken in another audience with 422, not a 500', async () => {
    const created = await server.request('POST', '/admin/users', {
      token: server.serviceKey,
      body: { email: 'other-aud@example.com', password: 'secret123' },
    })
    expect(created.statusCode).toBe(200)
    const res = await server.request('POST', '/invite', {
      token: server.serviceKey,
      body: { email: 'other-aud@example.com' },
      headers: { 'x-jwt-aud': 'another-audience' },
    })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({
      code: 422,
      error_code: 'email_exists',
      msg: 'A user with this email address has already been registered',
    })
  })
})

describe('the audit log API', () => {
  const clock = new FakeClock(Date.now())
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer('admin_audit', {}, clock)
  })
  afterAll(async () => {
    await server.close()
  })

  it('reads the audit log a page at a time, searched by author, action or type', async () => {
    for (const n of [1, 2]) {
      clock.advance(1000)
      const created = await server.request('POST', '/admin/users', {
        token: server.serviceKey,
        body: {
          email: `audited${String(n)}@audit.example`,
          user_metadata: { full_name: `Aud ${String(n)}` },
        },
      })
      expect(created.statusCode).toBe(200)
      const { id } = created.json() as unknown as { id: string }
      await server.request('DELETE', `/admin/users/${id}`, {
        token: server.serviceKey,
      })
    }
    const get = (query: string) =>
      server.request('GET', `/admin/audit${query}`, { token: server.serviceKey })
    const deleted = await get('?query=action:user_deleted&per_page=1')
    expect(deleted.statusCode).toBe(200)
    expect(deleted.headers['x-total-count']).toBe('2')
    expect(deleted.headers.link).toBe(
      '</admin/audit?page=2&per_page=1>; rel="next", </admin/audit?page=2&per_page=1>; rel="last"',
    )
    const [newest] = deleted.json() as unknown as Record<string, unknown>[]
    expect(typeof newest?.id).toBe('string')
    expect(typeof newest?.ip_address).toBe('string')
    expect(String(newest?.created_at)).toMatch(/^\d{4}-\d\d-\d\dT/)
    expect(newest).toMatchObject({
      payload: {
        action: 'user_deleted',
        log_type: 'team',
        traits: { user_email: 'audited2@audit.example' },
      },
    })
    // The search is a case-insensitive substring; % and _ are literal.
    expect((await get('?query=type:TEAM')).json().length).toBeGreaterThanOrEqual(2)
    expect((await get('?query=author:%25')).headers['x-total-count']).toBe('0')
    expect((await get('?query=action:user_deleted&page=2&per_page=1')).json()).toHaveLength(1)
    for (const bad of ['?query=nope:x', '?query=author']) {
      const res = await get(bad)
      expect(res.statusCode).toBe(400)
      expect(res.json()).toMatchObject({
        error_code: 'validation_failed',
        msg: `Invalid query scope: ${decodeURIComponent(bad.slice(7))}`,
      })
    }
    expect((await get('?page=x')).json()).toMatchObject({ msg: 'Bad Pagination Parameters: page' })
    // Numbers past any page count are refused (upstream: ParseUint), never sent to PostgreSQL.
    for (const path of ['/admin/audit?page=', '/admin/users?page=', '/admin/users?per_page=']) {
      const huge = await server.request('GET', `${path}99999999999999999999`, {
        token: server.serviceKey,
      })
      expect(huge.statusCode).toBe(400)
      expect(huge.json()).toMatchObject({ error_code: 'validation_failed' })
    }
    // A page holds at most 1,000 entries (upstream: any number, all in memory at once).
    const capped = await get('?per_page=5000')
    expect(capped.statusCode).toBe(200)
    expect(capped.headers.link).toContain('per_page=1000')
    expect((await server.request('GET', '/admin/audit')).statusCode).toBe(401)
  })
})
