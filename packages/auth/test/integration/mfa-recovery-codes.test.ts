import type { GoTrueClient } from '@supabase/auth-js'
import { startMailInbox, type MailInbox } from '@gatehouse/mail-inbox'
import { FakeClock } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { totpCode } from '#internal/crypto/totp.js'
import { startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'

interface AccessClaims {
  aal: string
  amr: { method: string; timestamp: number }[]
}

function claimsOf(accessToken: string): AccessClaims {
  const payload = accessToken.split('.')[1] ?? ''
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as AccessClaims
}

const STEP = 30_000
const MAX_ATTEMPTS = 3

let server: TestServer
let inbox: MailInbox
const clock = new FakeClock(Date.now())

beforeAll(async () => {
  inbox = await startMailInbox()
  server = await startTestServer(
    'mfa_recovery',
    {
      AUTHSVC_SMTP_HOST: '127.0.0.1',
      AUTHSVC_SMTP_PORT: String(inbox.smtp.port),
      AUTHSVC_SMTP_ADMIN_EMAIL: 'no-reply@example.com',
      AUTHSVC_MAILER_NOTIFICATIONS_MFA_RECOVERY_CODE_USED_ENABLED: 'true',
      AUTHSVC_MFA_RECOVERY_CODES_ENROLL_ENABLED: 'true',
      AUTHSVC_MFA_RECOVERY_CODES_VERIFY_ENABLED: 'true',
      AUTHSVC_MFA_RECOVERY_CODES_COUNT: '8',
      AUTHSVC_SECURITY_OTP_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
      AUTHSVC_RATE_LIMIT_HEADER: 'X-Client-Key',
    },
    clock,
  )
  await server.listen()
})
afterAll(async () => {
  await server.close()
  await inbox.close()
})

/** A request to the server with a bearer token; answers status and JSON body. */
async function call(
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/json',
      'X-Client-Key': `k-${String(Math.random())}`,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  return { status: response.status, json: (await response.json()) as Record<string, unknown> }
}

async function accessToken(auth: GoTrueClient): Promise<string> {
  return (await auth.getSession()).data.session!.access_token
}

/** A user with a verified TOTP factor and a fresh aal1 sign-in. */
async function userWithTotp(email: string): Promise<{ secret: string; auth: GoTrueClient }> {
  const auth = authJsClient(server.url)
  expect((await auth.signUp({ email, password: 'password123' })).error).toBeNull()
  const { data } = await auth.mfa.enroll({ factorType: 'totp' })
  const secret = data!.totp.secret
  expect(
    (await auth.mfa.challengeAndVerify({ factorId: data!.id, code: totpCode(secret, clock.now()) }))
      .error,
  ).toBeNull()
  clock.advance(STEP)
  return { secret, auth }
}

/** A new aal1 session of the user (password only). */
async function signInAal1(email: string): Promise<GoTrueClient> {
  const auth = authJsClient(server.url)
  expect((await auth.signInWithPassword({ email, password: 'password123' })).error).toBeNull()
  return auth
}

async function generate(aal2: GoTrueClient): Promise<string[]> {
  const { status, json } = await call('POST', '/factors/recovery-codes', await accessToken(aal2), {
    friendly_name: 'paper',
  })
  expect(status).toBe(200)
  expect(json).toMatchObject({ type: 'recovery_code', friendly_name: 'paper', total: 8 })
  return json.codes as string[]
}

describe('MFA recovery codes', () => {
  it('a code raises an aal1 session to aal2 once (amr mfa/recovery_code) and mails the user', async () => {
    const email = 'recovery-once@example.com'
    const { auth } = await userWithTotp(email)
    const codes = await generate(auth)
    expect(codes).toHaveLength(8)
    expect(new Set(codes).size).toBe(8)
    for (const code of codes) expect(code).toMatch(/^[0-9a-hjkmnp-tv-z]{16}$/)

    const status = await call('GET', '/factors/recovery-codes', await accessToken(auth))
    expect(status).toMatchObject({ status: 200, json: { total: 8, remaining: 8 } })
    expect(status.json).not.toHaveProperty('codes')

    const aal1 = await signInAal1(email)
    const token = await accessToken(aal1)
    expect(claimsOf(token).aal).toBe('aal1')
    // Typed in upper case with separators: the same code.
    const typed = codes[0]!.toUpperCase().replace(/(.{4})(?!$)/g, '$1-')
    const used = await call('POST', '/factors/recovery-codes/verify', token, { code: typed })
    expect(used.status).toBe(200)
    const claims = claimsOf(used.json.access_token as string)
    expect(claims.aal).toBe('aal2')
    expect(claims.amr.map((e) => e.method)).toContain('mfa/recovery_code')

    // The aal1 token's session is now aal2; the same code is refused afterwards.
    const again = await signInAal1(email)
    const reused = await call('POST', '/factors/recovery-codes/verify', await accessToken(again), {
      code: codes[0],
    })
    expect(reused).toMatchObject({ status: 422, json: { error_code: 'mfa_verification_failed' } })

    const after = await call('GET', '/factors/recovery-codes', used.json.access_token as string)
    expect(after.json).toMatchObject({ total: 8, remaining: 7 })

    const mail = await inbox.store.waitFor(email)
    expect(mail.subject).toBe('A recovery code was used to sign in to your account')
    expect(mail.text).toContain(email)
  })

  it('wrong codes count against the attempt limit, then the user is locked out', async () => {
    const email = 'recovery-guess@example.com'
    const { auth } = await userWithTotp(email)
    const codes = await generate(auth)
    const token = await accessToken(await signInAal1(email))
    // SECURITY_OTP_MAX_ATTEMPTS free failures; the next one starts the back-off.
    for (let i = 0; i <= MAX_ATTEMPTS; i++) {
      const wrong = await call('POST', '/factors/recovery-codes/verify', token, {
        code: 'zzzzzzzzzzzzzzzz',
      })
      expect(wrong).toMatchObject({ status: 422, json: { error_code: 'mfa_verification_failed' } })
    }
    // Past the free failures, even the right code waits.
    const locked = await call('POST', '/factors/recovery-codes/verify', token, { code: codes[1] })
    expect(locked).toMatchObject({ status: 429, json: { error_code: 'mfa_recovery_codes_locked' } })
    clock.advance(60_000)
    const ok = await call('POST', '/factors/recovery-codes/verify', token, { code: codes[1] })
    expect(ok.status).toBe(200)
  })

  it('two concurrent uses of one code: exactly one succeeds', async () => {
    const email = 'recovery-race@example.com'
    const { auth } = await userWithTotp(email)
    const [code] = await generate(auth)
    const tokens = await Promise.all([
      signInAal1(email).then(accessToken),
      signInAal1(email).then(accessToken),
    ])
    const results = await Promise.all(
      tokens.map((t) => call('POST', '/factors/recovery-codes/verify', t, { code })),
    )
    // The loser finds the code used (422), or its aal1 session already ended by the winner.
    const won = results.filter((r) => r.status === 200)
    expect(won).toHaveLength(1)
    expect(results.find((r) => r.status !== 200)?.status).toBeGreaterThanOrEqual(400)
    const status = await call('GET', '/factors/recovery-codes', won[0]!.json.access_token as string)
    expect(status.json).toMatchObject({ total: 8, remaining: 7 })
  })

  it('regenerate invalidates the old set; generate needs aal2 and refuses a second set', async () => {
    const email = 'recovery-regen@example.com'
    const { auth } = await userWithTotp(email)
    const old = await generate(auth)
    const second = await call('POST', '/factors/recovery-codes', await accessToken(auth))
    expect(second).toMatchObject({
      status: 422,
      json: { error_code: 'mfa_verified_factor_exists' },
    })

    const aal1 = await accessToken(await signInAal1(email))
    const refused = await call('POST', '/factors/recovery-codes/regenerate', aal1)
    expect(refused).toMatchObject({ status: 403, json: { error_code: 'insufficient_aal' } })

    const regenerated = await call(
      'POST',
      '/factors/recovery-codes/regenerate',
      await accessToken(auth),
    )
    expect(regenerated).toMatchObject({ status: 200, json: { total: 8 } })
    const fresh = regenerated.json.codes as string[]
    expect(fresh.some((c) => old.includes(c))).toBe(false)

    const stale = await call('POST', '/factors/recovery-codes/verify', aal1, { code: old[2] })
    expect(stale).toMatchObject({ status: 422, json: { error_code: 'mfa_verification_failed' } })
    const current = await call('POST', '/factors/recovery-codes/verify', aal1, { code: fresh[2] })
    expect(current.status).toBe(200)
  })

  it('an admin reset removes the codes', async () => {
    const email = 'recovery-admin@example.com'
    const { auth } = await userWithTotp(email)
    const codes = await generate(auth)
    const userId = (await auth.getUser()).data.user!.id
    const userToken = await accessToken(auth)
    // A session raised by a code, before the reset.
    const raised = await call(
      'POST',
      '/factors/recovery-codes/verify',
      await accessToken(await signInAal1(email)),
      { code: codes[3] },
    )
    expect(raised.status).toBe(200)
    const denied = await call('DELETE', `/admin/users/${userId}/factors/recovery-codes`, userToken)
    expect(denied.status).toBe(403)

    const reset = await call(
      'DELETE',
      `/admin/users/${userId}/factors/recovery-codes`,
      server.serviceKey,
    )
    expect(reset.status).toBe(200)
    expect(reset.json.id).toEqual(expect.any(String))
    // The session the codes raised is back at aal1 (its amr entry is gone).
    const refreshed = await fetch(`${server.url}/token?grant_type=refresh_token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ refresh_token: raised.json.refresh_token }),
    })
    expect(refreshed.status).toBe(200)
    const lowered = claimsOf(((await refreshed.json()) as { access_token: string }).access_token)
    expect(lowered.aal).toBe('aal1')
    expect(lowered.amr.map((e) => e.method)).not.toContain('mfa/recovery_code')
    const gone = await call('GET', '/factors/recovery-codes', userToken)
    expect(gone).toMatchObject({ status: 404, json: { error_code: 'mfa_factor_not_found' } })
    const aal1 = await accessToken(await signInAal1(email))
    const refused = await call('POST', '/factors/recovery-codes/verify', aal1, { code: codes[0] })
    expect(refused).toMatchObject({ status: 404, json: { error_code: 'mfa_factor_not_found' } })
    const again = await call(
      'DELETE',
      `/admin/users/${userId}/factors/recovery-codes`,
      server.serviceKey,
    )
    expect(again.status).toBe(404)
  })

  it('hostile input: empty, huge and non-string codes are clear 4xx answers', async () => {
    const email = 'recovery-hostile@example.com'
    const { auth } = await userWithTotp(email)
    await generate(auth)
    const token = await accessToken(await signInAal1(email))
    expect((await call('POST', '/factors/recovery-codes/verify', token, { code: '' })).status).toBe(
      400,
    )
    expect(
      (await call('POST', '/factors/recovery-codes/verify', token, { code: 'a'.repeat(100_000) }))
        .status,
    ).toBe(422)
    expect((await call('POST', '/factors/recovery-codes/verify', token, { code: 42 })).status).toBe(
      400,
    )
  })
})
