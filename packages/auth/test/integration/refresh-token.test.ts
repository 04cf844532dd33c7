import { FakeClock } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signUp, startTestServer, type TestServer } from '../helpers.js'

async function refresh(server: TestServer, token: string) {
  return server.request('POST', '/token?grant_type=refresh_token', {
    body: { refresh_token: token },
  })
}

async function tokenRows(server: TestServer, userId: string) {
  const { rows } = await server.app.db.query<{
    token: string
    parent: string | null
    revoked: boolean
  }>(
    `SELECT token, parent, revoked FROM ${server.app.db.t.refreshTokens} WHERE user_id = $1 ORDER BY id`,
    [userId],
  )
  return rows
}

describe('refresh-token rotation', () => {
  const clock = new FakeClock(Date.now())
  let server: TestServer
  let noRotation: TestServer

  beforeAll(async () => {
    server = await startTestServer(
      'refresh',
      { AUTHSVC_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: '10' },
      clock,
    )
    noRotation = await startTestServer(
      'refresh_norot',
      { AUTHSVC_SECURITY_REFRESH_TOKEN_ROTATION_ENABLED: 'false' },
      clock,
    )
  })
  afterAll(async () => {
    await server.close()
    await noRotation.close()
  })

  it('rotates: the old token is revoked and the child records it as parent', async () => {
    const session = await signUp(server, 'rotate@example.com')
    const res = await refresh(server, session.refresh_token)
    expect(res.statusCode).toBe(200)
    const next = res.json()
    expect(next.refresh_token).not.toBe(session.refresh_token)
    expect(next.user.id).toBe(session.user.id)
    expect(await tokenRows(server, session.user.id)).toEqual([
      { token: session.refresh_token, parent: null, revoked: true },
      { token: next.refresh_token, parent: session.refresh_token, revoked: false },
    ])
    const { rows } = await server.app.db.query<{ action: string }>(
      `SELECT payload->>'action' AS action FROM ${server.app.db.t.auditLogEntries}
       WHERE payload->>'actor_id' = $1 ORDER BY created_at, payload->>'action'`,
      [session.user.id],
    )
    expect(rows.map((r) => r.action).sort()).toEqual([
      'token_refreshed',
      'token_revoked',
      'user_signedup',
    ])
  })

  it("a rotation's audit entries name the actor as the sign-up's entry does", async () => {
    const res = await server.request('POST', '/signup', {
      body: { email: 'actor@example.com', password: 'password123', data: { full_name: 'Ada L' } },
    })
    const session = res.json()
    await refresh(server, session.refresh_token)
    const { rows } = await server.app.db.query<{ payload: Record<string, unknown> }>(
      `SELECT payload FROM ${server.app.db.t.auditLogEntries}
       WHERE payload->>'actor_id' = $1 ORDER BY payload->>'action'`,
      [session.user.id],
    )
    const actor = {
      actor_id: session.user.id,
      actor_via_sso: false,
      actor_username: 'actor@example.com',
      actor_name: 'Ada L',
    }
    expect(rows.map((r) => r.payload)).toEqual([
      { ...actor, action: 'token_refreshed', log_type: 'token' },
      { ...actor, action: 'token_revoked', log_type: 'token' },
      { ...actor, action: 'user_signedup', log_type: 'team', traits: { provider: 'email' } },
    ])
  })

  it('returns the same child again when the parent is retried within the reuse interval (lost response)', async () => {
    const session = await signUp(server, 'retry@example.com')
    const first = (await refresh(server, session.refresh_token)).json()
    clock.advance(9_000)
    const again = await refresh(server, session.refresh_token)
    expect(again.statusCode).toBe(200)
    expect(again.json().refresh_token).toBe(first.refresh_token)
  })

  /**
   * Upstream returns a revoked token's child again, at any time, while that child is the
   * session's active token (nobody has used it): the client never received it.
   *
   * @see issue 25, item 5: a refresh whose answer was lost must not log the user out.
   */
  it('a parent presented after the reuse interval still gets its unused child', async () => {
    const session = await signUp(server, 'retry-late@example.com')
    const child = (await refresh(server, session.refresh_token)).json().refresh_token
    clock.advance(3_600_000)
    const late = await refresh(server, session.refresh_token)
    expect(late.statusCode).toBe(200)
    expect(late.json().refresh_token).toBe(child)
    const grandchild = (await refresh(server, child)).json().refresh_token
    expect(await tokenRows(server, session.user.id)).toEqual([
      { token: session.refresh_token, parent: null, revoked: true },
      { token: child, parent: session.refresh_token, revoked: true },
      { token: grandchild, parent: child, revoked: false },
    ])
    // Once the child has been used, the parent is reuse: the family is revoked.
    clock.advance(11_000)
    const reuse = await refresh(server, session.refresh_token)
    expect(reuse.json().error_code).toBe('refresh_token_already_used')
    expect((await tokenRows(server, session.user.id)).every((r) => r.revoked)).toBe(true)
  })

  it('parallel refreshes of one token all get the same child: the family never forks', async () => {
    const session = await signUp(server, 'parallel@example.com')
    const results = await Promise.all(
      Array.from({ length: 12 }, () => refresh(server, session.refresh_token)),
    )
    expect(results.map((r) => r.statusCode)).toEqual(Array(12).fill(200))
    const issued = new Set(results.map((r) => r.json().refresh_token))
    expect(issued.size).toBe(1)
    const rows = await tokenRows(server, session.user.id)
    expect(rows).toHaveLength(2)
    expect(rows.filter((r) => !r.revoked)).toHaveLength(1)
  })

  it('within the reuse interval an older revoked token gets a new child', async () => {
    const session = await signUp(server, 'interval@example.com')
    const a = session.refresh_token
    const b = (await refresh(server, a)).json().refresh_token
    const c = (await refresh(server, b)).json().refresh_token
    clock.advance(5_000)
    const res = await refresh(server, a)
    expect(res.statusCode).toBe(200)
    const d = res.json().refresh_token
    expect([a, b, c]).not.toContain(d)
    const rows = await tokenRows(server, session.user.id)
    expect(rows.find((r) => r.token === d)).toEqual({ token: d, parent: a, revoked: false })
  })

  it('outside the interval reuse revokes every token of the family', async () => {
    const session = await signUp(server, 'reuse@example.com')
    const a = session.refresh_token
    const b = (await refresh(server, a)).json().refresh_token
    const c = (await refresh(server, b)).json().refresh_token
    clock.advance(11_000)
    const reuse = await refresh(server, a)
    expect(reuse.statusCode).toBe(400)
    expect(reuse.json()).toEqual({
      code: 400,
      error_code: 'refresh_token_already_used',
      msg: 'Invalid Refresh Token: Already Used',
    })
    expect((await tokenRows(server, session.user.id)).every((r) => r.revoked)).toBe(true)
    // Every token of the family now fails, even one revoked only seconds ago.
    const latest = await refresh(server, c)
    expect(latest.json().error_code).toBe('refresh_token_already_used')
    clock.advance(1_000)
    expect((await refresh(server, b)).json().error_code).toBe('refresh_token_already_used')
  })

  it('with rotation disabled a reused token fails without revoking the family', async () => {
    const session = await signUp(noRotation, 'norot@example.com')
    const a = session.refresh_token
    const b = (await refresh(noRotation, a)).json().refresh_token
    await refresh(noRotation, b)
    const reuse = await refresh(noRotation, a)
    expect(reuse.json().error_code).toBe('refresh_token_already_used')
    const rows = await tokenRows(noRotation, session.user.id)
    expect(rows.filter((r) => !r.revoked)).toHaveLength(1)
  })

  it.each([
    ['short', 'validation_failed', 'Refresh token is not valid'],
    ['ABCDEFGHIJKL', 'validation_failed', 'Refresh token is not valid'],
    ['abcdefghijkl', 'refresh_token_not_found', 'Invalid Refresh Token: Refresh Token Not Found'],
  ])('rejects %s', async (token, code, msg) => {
    const res = await refresh(server, token)
    expect(res.statusCode).toBe(400)
    expect(res.json()).toEqual({ code: 400, error_code: code, msg })
  })

  it('refuses refreshes of banned users until the ban ends', async () => {
    const session = await signUp(server, 'ban-refresh@example.com')
    await server.request('PUT', `/admin/users/${session.user.id}`, {
      token: server.serviceKey,
      body: { ban_duration: '1h' },
    })
    const banned = await refresh(server, session.refresh_token)
    expect(banned.json()).toMatchObject({
      error_code: 'user_banned',
      msg: 'Invalid Refresh Token: User Banned',
    })
    clock.advance(3_600_001)
    const ok = await refresh(server, session.refresh_token)
    expect(ok.statusCode).toBe(200)
  })

  it('a logged-out session cannot be refreshed', async () => {
    const session = await signUp(server, 'logout-refresh@example.com')
    const out = await server.request('POST', '/logout', { token: session.access_token })
    expect(out.statusCode).toBe(204)
    const res = await refresh(server, session.refresh_token)
    expect(res.json()).toMatchObject({ error_code: 'refresh_token_not_found' })
  })
})
