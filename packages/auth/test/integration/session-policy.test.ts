import type { GoTrueClient } from '@supabase/auth-js'
import { AuthApiError } from '@supabase/auth-js'
import { FakeClock } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { totpCode } from '#internal/crypto/totp.js'
import { startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'

/**
 * `SESSIONS_*` (issue 28, item 2) through unchanged `@supabase/auth-js`, on real PostgreSQL, with
 * the server's clock moved by the test: refreshes refused with upstream's `session_expired`
 * errors, `refreshed_at` kept on `sessions`.
 */

const MINUTE = 60_000

interface Policy {
  readonly server: TestServer
  readonly clock: FakeClock
}

/**
 * A listening server of the enclosing `describe`, with `SESSIONS_*` overrides and its own clock
 * (access tokens live a day, so only the session policy ends them).
 */
function usePolicyServer(label: string, env: Record<string, string>): Policy {
  const clock = new FakeClock(Date.now())
  const policy: { server?: TestServer; clock: FakeClock } = { clock }
  beforeAll(async () => {
    policy.server = await startTestServer(label, { AUTHSVC_JWT_EXP: '86400', ...env }, clock)
    await policy.server.listen()
  })
  afterAll(async () => {
    await policy.server?.close()
  })
  return {
    clock,
    get server() {
      if (!policy.server) throw new Error('server not started')
      return policy.server
    },
  }
}

/** A signed-up (auto-confirmed) user's auth-js client, signed in. */
async function signedUp(server: TestServer, email: string): Promise<GoTrueClient> {
  const auth = authJsClient(server.url)
  const { error } = await auth.signUp({ email, password: 'password123' })
  expect(error).toBeNull()
  return auth
}

/** Another auth-js client of the same user, signed in with the password. */
async function signedIn(server: TestServer, email: string): Promise<GoTrueClient> {
  const auth = authJsClient(server.url)
  const { error } = await auth.signInWithPassword({ email, password: 'password123' })
  expect(error).toBeNull()
  return auth
}

async function expectRefused(auth: GoTrueClient, message: string): Promise<void> {
  const { error } = await auth.refreshSession()
  expect(error).toBeInstanceOf(AuthApiError)
  expect(error).toMatchObject({ status: 400, code: 'session_expired', message })
}

async function expectRefreshed(auth: GoTrueClient): Promise<void> {
  const { data, error } = await auth.refreshSession()
  expect(error).toBeNull()
  expect(data.session?.access_token).toEqual(expect.any(String))
}

async function accessToken(auth: GoTrueClient): Promise<string> {
  const { data } = await auth.getSession()
  return data.session!.access_token
}

/** The `session_id` claim of the client's access token. */
async function sessionIdOf(auth: GoTrueClient): Promise<string> {
  const payload = (await accessToken(auth)).split('.')[1] ?? ''
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { session_id: string }
  return claims.session_id
}

describe('SESSIONS_TIMEBOX and SESSIONS_INACTIVITY_TIMEOUT', () => {
  const p = usePolicyServer('sessions_time', {
    AUTHSVC_SESSIONS_TIMEBOX: '2h',
    AUTHSVC_SESSIONS_INACTIVITY_TIMEOUT: '1h',
  })

  it('refreshes in time keep a session past the inactivity timeout; refreshed_at follows the clock', async () => {
    const auth = await signedUp(p.server, 'active@example.com')
    p.clock.advance(50 * MINUTE)
    await expectRefreshed(auth)
    p.clock.advance(50 * MINUTE)
    await expectRefreshed(auth)
    const sessionId = await sessionIdOf(auth)
    const { rows } = await p.server.app.db.query<{ refreshed_at: Date }>(
      `SELECT refreshed_at AT TIME ZONE 'UTC' AS refreshed_at FROM ${p.server.app.db.t.sessions} WHERE id = $1`,
      [sessionId],
    )
    expect(rows[0]?.refreshed_at.getTime()).toBe(p.clock.now())
  })

  it('an idle session is refused with "(Inactivity)"', async () => {
    const auth = await signedUp(p.server, 'idle@example.com')
    p.clock.advance(30 * MINUTE)
    await expectRefreshed(auth)
    p.clock.advance(61 * MINUTE)
    await expectRefused(auth, 'Invalid Refresh Token: Session Expired (Inactivity)')
  })

  it('a session past its timebox is refused however active, and so is its access token on admin routes', async () => {
    const auth = await signedUp(p.server, 'boxed@example.com')
    for (let i = 0; i < 2; i++) {
      p.clock.advance(50 * MINUTE)
      await expectRefreshed(auth)
    }
    const token = await accessToken(auth)
    // Within the timebox a user's token reaches the admin check (and is not an admin's).
    expect((await p.server.request('GET', '/admin/users', { token })).json()).toMatchObject({
      error_code: 'not_admin',
    })
    p.clock.advance(21 * MINUTE) // 2 h 1 min after the sign-in, 21 min after the last refresh
    const admin = await p.server.request('GET', '/admin/users', { token })
    expect(admin.statusCode).toBe(403)
    expect(admin.json()).toMatchObject({
      error_code: 'session_expired',
      msg: 'Session is no longer valid',
    })
    await expectRefused(auth, 'Invalid Refresh Token: Session Expired')
  })
})

describe('clean-up of ended sessions', () => {
  const p = usePolicyServer('sessions_cleanup', {
    AUTHSVC_SESSIONS_TIMEBOX: '48h',
    AUTHSVC_SESSIONS_INACTIVITY_TIMEOUT: '1h',
    AUTHSVC_DB_CLEANUP_INTERVAL: '0',
  })

  async function sessionExists(id: string): Promise<boolean> {
    const { rows } = await p.server.app.db.query(
      `SELECT 1 FROM ${p.server.app.db.t.sessions} WHERE id = $1`,
      [id],
    )
    return rows.length === 1
  }

  it('deletes sessions a day after inactivity or the timebox ended them, not before', async () => {
    const never = await sessionIdOf(await signedUp(p.server, 'never@example.com'))
    const refreshedAuth = await signedUp(p.server, 'refreshed@example.com')
    p.clock.advance(30 * MINUTE)
    await expectRefreshed(refreshedAuth)
    const refreshed = await sessionIdOf(refreshedAuth)
    // 1 h idle + 24 h: the never-refreshed session goes, the one refreshed 30 min later stays.
    p.clock.advance(24 * 60 * MINUTE + 31 * MINUTE)
    const live = await signedUp(p.server, 'live@example.com')
    const liveAt = p.clock.now()
    expect(await p.server.app.cleanup()).toMatchObject({ sessions: 1 })
    expect(await sessionExists(never)).toBe(false)
    expect(await sessionExists(refreshed)).toBe(true)
    p.clock.advance(30 * MINUTE)
    expect(await p.server.app.cleanup()).toMatchObject({ sessions: 1 })
    expect(await sessionExists(refreshed)).toBe(false)
    // Kept active, a session still goes a day after its timebox (48 h).
    const liveId = await sessionIdOf(live)
    const step = 50 * MINUTE
    const touch = async () => {
      p.clock.advance(step)
      await p.server.app.db.query(
        `UPDATE ${p.server.app.db.t.sessions} SET refreshed_at = $2::timestamptz AT TIME ZONE 'UTC' WHERE id = $1`,
        [liveId, new Date(p.clock.now())],
      )
      await p.server.app.cleanup()
    }
    while (p.clock.now() + step <= liveAt + 72 * 60 * MINUTE) {
      await touch()
      expect(await sessionExists(liveId)).toBe(true)
    }
    await touch()
    expect(await sessionExists(liveId)).toBe(false)
  })
})

describe('SESSIONS_SINGLE_PER_USER with SESSIONS_TAGS', () => {
  const p = usePolicyServer('sessions_single', {
    AUTHSVC_SESSIONS_SINGLE_PER_USER: 'true',
    AUTHSVC_SESSIONS_TAGS: 'web,mobile',
  })

  async function tagSessionOf(auth: GoTrueClient, tag: string): Promise<void> {
    await p.server.app.db.query(`UPDATE ${p.server.app.db.t.sessions} SET tag = $2 WHERE id = $1`, [
      await sessionIdOf(auth),
      tag,
    ])
  }

  it('a new sign-in ends the older session at its next refresh; the new one refreshes', async () => {
    const first = await signedUp(p.server, 'single@example.com')
    p.clock.advance(MINUTE)
    const second = await signedIn(p.server, 'single@example.com')
    await expectRefused(first, 'Invalid Refresh Token: Session Expired (Revoked by Newer Login)')
    await expectRefreshed(second)
  })

  it('sessions of another listed tag are counted apart; an unlisted tag counts as the first', async () => {
    const mobile = await signedUp(p.server, 'tagged@example.com')
    await tagSessionOf(mobile, 'mobile')
    const tv = await signedIn(p.server, 'tagged@example.com')
    await tagSessionOf(tv, 'tv')
    p.clock.advance(MINUTE)
    const web = await signedIn(p.server, 'tagged@example.com')
    await expectRefreshed(mobile)
    await expectRefused(tv, 'Invalid Refresh Token: Session Expired (Revoked by Newer Login)')
    await expectRefreshed(web)
  })
})

describe('SESSIONS_ALLOW_LOW_AAL', () => {
  const p = usePolicyServer('sessions_low_aal', { AUTHSVC_SESSIONS_ALLOW_LOW_AAL: '10m' })

  it('an aal1 session of a user with a verified factor gets tokens up to the allowance, then no refresh', async () => {
    const enrolling = await signedUp(p.server, 'mfa@example.com')
    const { data: factor, error } = await enrolling.mfa.enroll({ factorType: 'totp' })
    expect(error).toBeNull()
    const verified = await enrolling.mfa.challengeAndVerify({
      factorId: factor!.id,
      code: totpCode(factor!.totp.secret, p.clock.now()),
    })
    expect(verified.error).toBeNull()

    const low = await signedIn(p.server, 'mfa@example.com')
    const signedInAt = Math.floor(p.clock.now() / 1000)
    const { data } = await low.getSession()
    expect(data.session?.expires_at).toBe(signedInAt + 600)
    p.clock.advance(11 * MINUTE)
    await expectRefused(
      low,
      'Invalid Refresh Token: Session Expired (Low AAL: User Needs MFA Verification)',
    )
    // The aal2 session is not limited.
    await expectRefreshed(enrolling)
  })
})
