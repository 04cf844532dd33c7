import type { GoTrueClient } from '@supabase/auth-js'
import { AuthApiError, GoTrueAdminApi } from '@supabase/auth-js'
import { startMailInbox, type MailInbox } from '@gatehouse/mail-inbox'
import { FakeClock } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type SmsChannel, type SmsProvider } from '@gatehouse/auth'
import { totpCode } from '#internal/crypto/totp.js'
import { signUp, startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'

/** An SMS provider that keeps what it is asked to send (the real ones come with issue 12). */
class RecordingSmsProvider implements SmsProvider {
  readonly sent: { phone: string; message: string; channel: SmsChannel; otp: string }[] = []

  sendMessage(phone: string, message: string, channel: SmsChannel, otp: string): Promise<string> {
    this.sent.push({ phone, message, channel, otp })
    return Promise.resolve(`msg-${String(this.sent.length)}`)
  }
}

interface AccessClaims {
  aal: string
  amr: { method: string; timestamp: number }[]
  session_id: string
}

function claimsOf(accessToken: string): AccessClaims {
  const payload = accessToken.split('.')[1] ?? ''
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as AccessClaims
}

/** Step of 30 s, as the clock is moved past a used TOTP step. */
const STEP = 30_000

let server: TestServer
let inbox: MailInbox
let admin: GoTrueAdminApi
const sms = new RecordingSmsProvider()
const clock = new FakeClock(Date.now())

beforeAll(async () => {
  inbox = await startMailInbox()
  server = await startTestServer(
    'mfa',
    {
      AUTHSVC_SMTP_HOST: '127.0.0.1',
      AUTHSVC_SMTP_PORT: String(inbox.smtp.port),
      AUTHSVC_SMTP_ADMIN_EMAIL: 'no-reply@example.com',
      AUTHSVC_MAILER_NOTIFICATIONS_MFA_FACTOR_ENROLLED_ENABLED: 'true',
      AUTHSVC_MAILER_NOTIFICATIONS_MFA_FACTOR_UNENROLLED_ENABLED: 'true',
      AUTHSVC_MFA_PHONE_ENROLL_ENABLED: 'true',
      AUTHSVC_MFA_PHONE_VERIFY_ENABLED: 'true',
      AUTHSVC_MFA_PHONE_TEMPLATE: 'Gatehouse code: {{ .Code }}',
      AUTHSVC_MFA_MAX_ENROLLED_FACTORS: '3',
      AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: 'true',
      AUTHSVC_RATE_LIMIT_HEADER: 'X-Client-Key',
    },
    clock,
    { deps: { sms } },
  )
  await server.listen()
  admin = new GoTrueAdminApi({
    url: server.url,
    headers: { Authorization: `Bearer ${server.serviceKey}` },
  })
})
afterAll(async () => {
  await server.close()
  await inbox.close()
})

function client(): GoTrueClient {
  return authJsClient(server.url)
}

/** A signed-in auth-js client of a new user (auto-confirmed). */
async function signedIn(email: string): Promise<GoTrueClient> {
  const auth = client()
  const { error } = await auth.signUp({ email, password: 'password123' })
  expect(error).toBeNull()
  return auth
}

/** Enrolls a TOTP factor through auth-js; returns its id and secret. */
async function enrollTotp(auth: GoTrueClient, friendlyName?: string) {
  const { data, error } = await auth.mfa.enroll({
    factorType: 'totp',
    issuer: 'Gatehouse Tests',
    ...(friendlyName === undefined ? {} : { friendlyName }),
  })
  expect(error).toBeNull()
  return { id: data!.id, secret: data!.totp.secret }
}

/** Challenges and verifies a TOTP factor with the current code, then moves past its step. */
async function verifyTotp(auth: GoTrueClient, factorId: string, secret: string): Promise<void> {
  const { error } = await auth.mfa.challengeAndVerify({
    factorId,
    code: totpCode(secret, clock.now()),
  })
  expect(error).toBeNull()
  clock.advance(STEP)
}

describe('TOTP factors through @supabase/auth-js', () => {
  it('enroll → challenge → verify raises the session to aal2 and records the amr entry', async () => {
    const auth = await signedIn('totp-journey@example.com')
    expect((await auth.mfa.getAuthenticatorAssuranceLevel()).data).toMatchObject({
      currentLevel: 'aal1',
      nextLevel: 'aal1',
    })

    const enrolled = await auth.mfa.enroll({
      factorType: 'totp',
      issuer: 'Gatehouse Tests',
      friendlyName: 'phone app',
    })
    expect(enrolled.error).toBeNull()
    const factor = enrolled.data!
    expect(factor).toMatchObject({ type: 'totp', friendly_name: 'phone app' })
    expect(factor.totp.secret).toMatch(/^[A-Z2-7]{32}$/)
    const uri = new URL(factor.totp.uri)
    expect(uri.protocol).toBe('otpauth:')
    expect(uri.host).toBe('totp')
    expect(decodeURIComponent(uri.pathname)).toBe('/Gatehouse Tests:totp-journey@example.com')
    expect(uri.searchParams.get('secret')).toBe(factor.totp.secret)
    expect(uri.searchParams.get('period')).toBe('30')
    expect(factor.totp.qr_code).toMatch(/^data:image\/svg\+xml;utf-8,<svg[\s\S]*<\/svg>\s*$/)

    const listed = await auth.mfa.listFactors()
    expect(listed.data?.all).toMatchObject([{ id: factor.id, status: 'unverified' }])
    expect(listed.data?.totp).toEqual([])

    const challenge = await auth.mfa.challenge({ factorId: factor.id })
    expect(challenge.error).toBeNull()
    expect(challenge.data?.type).toBe('totp')
    expect(challenge.data?.expires_at).toBe(Math.floor(clock.now() / 1000) + 300)
    const before = (await auth.getSession()).data.session!
    const verified = await auth.mfa.verify({
      factorId: factor.id,
      challengeId: challenge.data!.id,
      code: totpCode(factor.totp.secret, clock.now()),
    })
    expect(verified.error).toBeNull()
    const session = (await auth.getSession()).data.session!
    expect(session.refresh_token).not.toBe(before.refresh_token)
    const claims = claimsOf(session.access_token)
    expect(claims.aal).toBe('aal2')
    expect(claims.session_id).toBe(claimsOf(before.access_token).session_id)
    expect(claims.amr.map((e) => e.method).sort()).toEqual(['password', 'totp'])

    const level = await auth.mfa.getAuthenticatorAssuranceLevel()
    expect(level.data).toMatchObject({ currentLevel: 'aal2', nextLevel: 'aal2' })
    expect((await auth.mfa.listFactors()).data?.totp).toMatchObject([
      { id: factor.id, status: 'verified', factor_type: 'totp' },
    ])

    const mail = await inbox.store.waitFor('totp-journey@example.com')
    expect(mail.subject).toBe('A new verification method was added to your account')
    expect(mail.text).toContain(
      'A totp verification method was added to the account totp-journey@example.com.',
    )

    // The aal1 refresh token is gone (even within a reuse interval); the new one keeps aal2.
    const stale = await client().refreshSession({ refresh_token: before.refresh_token })
    expect(stale.error).toMatchObject({ code: 'refresh_token_not_found' })
    const refreshed = await auth.refreshSession()
    expect(refreshed.error).toBeNull()
    expect(claimsOf(refreshed.data.session!.access_token).aal).toBe('aal2')
    expect(refreshed.data.session!.user.factors).toMatchObject([
      { id: factor.id, status: 'verified' },
    ])

    // A new sign-in starts at aal1 and is told that aal2 is available.
    const other = client()
    await other.signInWithPassword({ email: 'totp-journey@example.com', password: 'password123' })
    expect((await other.mfa.getAuthenticatorAssuranceLevel()).data).toMatchObject({
      currentLevel: 'aal1',
      nextLevel: 'aal2',
    })
  })

  it('never accepts a code twice, and accepts one step of drift', async () => {
    const auth = await signedIn('totp-replay@example.com')
    const { id, secret } = await enrollTotp(auth)
    const code = totpCode(secret, clock.now())
    expect((await auth.mfa.challengeAndVerify({ factorId: id, code })).error).toBeNull()

    const replayed = await auth.mfa.challengeAndVerify({ factorId: id, code })
    expect(replayed.error).toBeInstanceOf(AuthApiError)
    expect(replayed.error).toMatchObject({
      status: 422,
      code: 'mfa_verification_failed',
      message: 'Invalid TOTP code entered',
    })

    const wrong = await auth.mfa.challengeAndVerify({ factorId: id, code: '000000' })
    expect(wrong.error).toMatchObject({ code: 'mfa_verification_failed' })

    // The next step's code, one step early (clock drift), is accepted once.
    const early = totpCode(secret, clock.now() + STEP)
    expect((await auth.mfa.challengeAndVerify({ factorId: id, code: early })).error).toBeNull()
    clock.advance(STEP)
    const again = await auth.mfa.challengeAndVerify({ factorId: id, code: early })
    expect(again.error).toMatchObject({ code: 'mfa_verification_failed' })
    clock.advance(STEP)
  })

  it('refuses an expired challenge (MFA_CHALLENGE_EXPIRY_DURATION) and deletes it', async () => {
    const auth = await signedIn('totp-expired@example.com')
    const { id, secret } = await enrollTotp(auth)
    const challenge = await auth.mfa.challenge({ factorId: id })
    clock.advance(301_000)
    const params = {
      factorId: id,
      challengeId: challenge.data!.id,
      code: totpCode(secret, clock.now()),
    }
    const expired = await auth.mfa.verify(params)
    expect(expired.error).toMatchObject({
      status: 422,
      code: 'mfa_challenge_expired',
      message: `MFA challenge ${challenge.data!.id} has expired, verify against another challenge or create a new challenge.`,
    })
    const gone = await auth.mfa.verify(params)
    expect(gone.error).toMatchObject({ status: 422, code: 'mfa_factor_not_found' })
  })
})

describe('assurance levels', () => {
  it('password change and unenrolling a verified factor need aal2', async () => {
    const auth = await signedIn('aal-rules@example.com')
    const { id, secret } = await enrollTotp(auth)
    // Before any factor is verified, aal1 may change the password.
    expect((await auth.updateUser({ password: 'password456' })).error).toBeNull()
    await verifyTotp(auth, id, secret)

    const aal1 = client()
    await aal1.signInWithPassword({ email: 'aal-rules@example.com', password: 'password456' })
    const change = await aal1.updateUser({ password: 'password789' })
    expect(change.error).toMatchObject({
      status: 401,
      code: 'insufficient_aal',
      message: 'AAL2 session is required to update email or password when MFA is enabled.',
    })
    expect((await aal1.updateUser({ email: 'aal-rules-new@example.com' })).error).toMatchObject({
      status: 401,
      code: 'insufficient_aal',
    })
    expect((await aal1.updateUser({ data: { plan: 'pro' } })).error).toBeNull()
    const unenroll = await aal1.mfa.unenroll({ factorId: id })
    expect(unenroll.error).toMatchObject({
      status: 422,
      code: 'insufficient_aal',
      message: 'AAL2 required to unenroll verified factor',
    })
    const enrollMore = await aal1.mfa.enroll({ factorType: 'totp', friendlyName: 'second' })
    expect(enrollMore.error).toMatchObject({ status: 403, code: 'insufficient_aal' })

    // Verifying from the aal1 session raises it; then both are allowed.
    await verifyTotp(aal1, id, secret)
    expect((await aal1.updateUser({ password: 'password789' })).error).toBeNull()
    expect((await aal1.mfa.unenroll({ factorId: id })).error).toBeNull()
    // The session that verified through the removed factor is back at aal1.
    const refreshed = await aal1.refreshSession()
    const claims = claimsOf(refreshed.data.session!.access_token)
    expect(claims.aal).toBe('aal1')
    expect(claims.amr.map((e) => e.method)).not.toContain('totp')
    expect((await aal1.mfa.listFactors()).data?.all).toEqual([])
  })

  it('sends the unenrolled notification and refuses anonymous users', async () => {
    const auth = await signedIn('unenroll-mail@example.com')
    const { id } = await enrollTotp(auth)
    const removed = await auth.mfa.unenroll({ factorId: id })
    expect(removed.error).toBeNull()
    expect(removed.data).toEqual({ id })
    const mail = await inbox.store.waitFor('unenroll-mail@example.com')
    expect(mail.subject).toBe('A verification method was removed from your account')
    expect(mail.text).toContain('A totp verification method was removed')
    const missing = await auth.mfa.unenroll({ factorId: id })
    expect(missing.error).toMatchObject({ status: 404, code: 'mfa_factor_not_found' })

    const anonymous = client()
    expect((await anonymous.signInAnonymously()).error).toBeNull()
    const refused = await anonymous.mfa.enroll({ factorType: 'totp' })
    expect(refused.error).toMatchObject({ status: 403, code: 'no_authorization' })
  })
})

describe('phone factors', () => {
  it('sends the code with MFA_PHONE_TEMPLATE through the SMS provider and verifies it', async () => {
    const auth = await signedIn('phone-factor@example.com')
    const enrolled = await auth.mfa.enroll({ factorType: 'phone', phone: '+15551234567' })
    expect(enrolled.error).toBeNull()
    expect(enrolled.data).toMatchObject({ type: 'phone', phone: '+15551234567' })
    const factorId = enrolled.data!.id

    const challenge = await auth.mfa.challenge({ factorId })
    expect(challenge.error).toBeNull()
    const sent = sms.sent.at(-1)!
    expect(sent).toMatchObject({ phone: '15551234567', channel: 'sms' })
    expect(sent.otp).toMatch(/^\d{6}$/)
    expect(sent.message).toBe(`Gatehouse code: ${sent.otp}`)

    const again = await auth.mfa.challenge({ factorId })
    expect(again.error).toMatchObject({ status: 429, code: 'over_sms_send_rate_limit' })

    const wrong = await auth.mfa.verify({
      factorId,
      challengeId: challenge.data!.id,
      code: sent.otp === '000000' ? '111111' : '000000',
    })
    expect(wrong.error).toMatchObject({ status: 422, code: 'mfa_verification_failed' })
    const verified = await auth.mfa.verify({
      factorId,
      challengeId: challenge.data!.id,
      code: sent.otp,
    })
    expect(verified.error).toBeNull()
    const claims = claimsOf(verified.data!.access_token)
    expect(claims.aal).toBe('aal2')
    expect(claims.amr.map((e) => e.method)).toContain('mfa/phone')
    expect((await auth.mfa.listFactors()).data?.phone).toMatchObject([
      { id: factorId, status: 'verified', phone: '15551234567' },
    ])
    // A verified challenge cannot be used again.
    const reused = await auth.mfa.verify({
      factorId,
      challengeId: challenge.data!.id,
      code: sent.otp,
    })
    expect(reused.error).toMatchObject({ code: 'mfa_ip_address_mismatch' })
  })
})

/** @see issue 24, item 5 */
describe('leftover factors', () => {
  it('the first verified factor removes unverified factors of every type, so one enrolled with the password alone raises nothing', async () => {
    const email = 'leftover-factor@example.com'
    const victim = await signedIn(email)
    // Someone who has the password plants a phone factor of their own and leaves it unverified.
    const attacker = client()
    expect((await attacker.signInWithPassword({ email, password: 'password123' })).error).toBeNull()
    const planted = await attacker.mfa.enroll({
      factorType: 'phone',
      phone: '+15557770001',
      friendlyName: 'planted',
    })
    expect(planted.error).toBeNull()

    const { id, secret } = await enrollTotp(victim)
    await verifyTotp(victim, id, secret)
    expect((await victim.mfa.listFactors()).data?.all).toMatchObject([
      { id, factor_type: 'totp', status: 'verified' },
    ])
    expect((await victim.mfa.listFactors()).data?.all).toHaveLength(1)

    const later = client()
    expect((await later.signInWithPassword({ email, password: 'password123' })).error).toBeNull()
    const sent = sms.sent.length
    const challenge = await later.mfa.challenge({ factorId: planted.data!.id })
    expect(challenge.error).toMatchObject({ status: 404, code: 'mfa_factor_not_found' })
    expect(sms.sent.length).toBe(sent)
  })

  it('once a factor is verified, an aal1 session can neither challenge nor verify an unverified one', async () => {
    const email = 'aal1-pending-factor@example.com'
    const owner = await signedIn(email)
    const first = await enrollTotp(owner, 'first')
    await verifyTotp(owner, first.id, first.secret)
    // The owner (aal2) starts enrolling two more factors and leaves them pending.
    const pending = await enrollTotp(owner, 'second')
    const phone = await owner.mfa.enroll({ factorType: 'phone', phone: '+15557770002' })
    expect(phone.error).toBeNull()

    const attacker = client()
    expect((await attacker.signInWithPassword({ email, password: 'password123' })).error).toBeNull()
    const refused = {
      status: 403,
      code: 'insufficient_aal',
      message: 'AAL2 required to enroll a new factor',
    }
    expect((await attacker.mfa.challenge({ factorId: pending.id })).error).toMatchObject(refused)
    const sent = sms.sent.length
    const phoneChallenge = await attacker.mfa.challenge({ factorId: phone.data!.id })
    expect(phoneChallenge.error).toMatchObject(refused)
    expect(sms.sent.length).toBe(sent)

    // Not even with a challenge the owner's aal2 session created.
    const challenge = await owner.mfa.challenge({ factorId: pending.id })
    expect(challenge.error).toBeNull()
    const params = {
      factorId: pending.id,
      challengeId: challenge.data!.id,
      code: totpCode(pending.secret, clock.now()),
    }
    expect((await attacker.mfa.verify(params)).error).toMatchObject(refused)
    expect((await owner.mfa.verify(params)).error).toBeNull()
    clock.advance(STEP)
  })
})

describe('limits', () => {
  it('MFA_MAX_ENROLLED_FACTORS and friendly-name conflicts', async () => {
    const auth = await signedIn('limits@example.com')
    await enrollTotp(auth, 'one')
    const conflict = await auth.mfa.enroll({ factorType: 'totp', friendlyName: 'one' })
    expect(conflict.error).toMatchObject({
      status: 422,
      code: 'mfa_factor_name_conflict',
      message: 'A factor with the friendly name "one" for this user already exists',
    })
    await enrollTotp(auth, 'two')
    await enrollTotp(auth, 'three')
    const fourth = await auth.mfa.enroll({ factorType: 'totp', friendlyName: 'four' })
    expect(fourth.error).toMatchObject({
      status: 422,
      code: 'too_many_enrolled_mfa_factors',
      message: 'Maximum number of verified factors reached, unenroll to continue',
    })
    const bad = await auth.mfa.enroll({ factorType: 'email' } as never)
    expect(bad.error).toMatchObject({ status: 400, code: 'validation_failed' })
  })

  it('MFA_RATE_LIMIT_CHALLENGE_AND_VERIFY: a burst of 30, then 15 a minute', async () => {
    const auth = await signedIn('rate-limit@example.com')
    const { id } = await enrollTotp(auth)
    const token = (await auth.getSession()).data.session!.access_token
    const challenge = () =>
      server.request('POST', `/factors/${id}/challenge`, {
        token,
        body: {},
        headers: { 'x-client-key': 'rate-limit-client' },
      })
    for (let i = 0; i < 30; i++) expect((await challenge()).statusCode).toBe(200)
    const limited = await challenge()
    expect(limited.statusCode).toBe(429)
    expect(limited.json().error_code).toBe('over_request_rate_limit')
    clock.advance(4_000)
    expect((await challenge()).statusCode).toBe(200)
  })
})

describe('hostile input', () => {
  it('answers malformed requests with 4xx and a code, never a crash', async () => {
    const auth = await signedIn('hostile@example.com')
    const { id } = await enrollTotp(auth)
    const token = (await auth.getSession()).data.session!.access_token
    const call = (method: 'POST' | 'DELETE', url: string, body?: unknown) =>
      server.request(method, url, { token, ...(body === undefined ? {} : { body }) })

    const longIssuer = await call('POST', '/factors', {
      factor_type: 'totp',
      issuer: 'x'.repeat(3000),
    })
    expect(longIssuer.statusCode).toBe(400)
    expect(longIssuer.json().error_code).toBe('validation_failed')
    const badPhone = await call('POST', '/factors', { factor_type: 'phone', phone: '12ab' })
    expect(badPhone.json()).toMatchObject({
      code: 400,
      error_code: 'validation_failed',
      msg: 'Invalid phone number format (E.164 required)',
    })
    const noPhone = await call('POST', '/factors', { factor_type: 'phone' })
    expect(noPhone.json().msg).toBe('Phone number required to enroll Phone factor')
    const badId = await call('POST', '/factors/not-a-uuid/challenge', {})
    expect(badId.statusCode).toBe(404)
    expect(badId.json().msg).toBe('factor_id must be an UUID')
    const badChallenge = await call('POST', `/factors/${id}/verify`, {
      challenge_id: "1' OR '1'='1",
      code: '123456',
    })
    expect(badChallenge.json()).toMatchObject({ code: 400, msg: 'challenge_id must be an UUID' })
    const noCode = await call('POST', `/factors/${id}/verify`, { challenge_id: id, code: '' })
    expect(noCode.json()).toMatchObject({ code: 400, msg: 'Code needs to be non-empty' })
    const unknownChallenge = await call('POST', `/factors/${id}/verify`, {
      challenge_id: id,
      code: '123456',
    })
    expect(unknownChallenge.json()).toMatchObject({ code: 422, error_code: 'mfa_factor_not_found' })
    const badChannel = await call('POST', `/factors/${id}/challenge`, { channel: 'pigeon' })
    expect(badChannel.statusCode).toBe(200) // TOTP challenges ignore the channel, as upstream
    const noToken = await server.request('POST', '/factors', { body: { factor_type: 'totp' } })
    expect(noToken.json()).toMatchObject({ code: 401, error_code: 'no_authorization' })
  })
})

describe('switches', () => {
  it('MFA_TOTP_ENROLL_ENABLED=false and the default MFA_PHONE_ENROLL_ENABLED=false refuse enrolment', async () => {
    const off = await startTestServer('mfa_off', { AUTHSVC_MFA_TOTP_ENROLL_ENABLED: 'false' })
    try {
      const { access_token: token } = await signUp(off, 'switches@example.com')
      const totp = await off.request('POST', '/factors', { token, body: { factor_type: 'totp' } })
      expect(totp.json()).toMatchObject({
        code: 422,
        error_code: 'mfa_totp_enroll_not_enabled',
        msg: 'MFA enroll is disabled for TOTP',
      })
      const phone = await off.request('POST', '/factors', {
        token,
        body: { factor_type: 'phone', phone: '+15551234567' },
      })
      expect(phone.json()).toMatchObject({
        code: 422,
        error_code: 'mfa_phone_enroll_not_enabled',
        msg: 'MFA enroll is disabled for Phone',
      })
    } finally {
      await off.close()
    }
  })
})

describe('admin factors API', () => {
  it('lists and deletes a user’s factors', async () => {
    const auth = await signedIn('admin-factors@example.com')
    const { id, secret } = await enrollTotp(auth, 'laptop')
    await verifyTotp(auth, id, secret)
    const userId = (await auth.getUser()).data.user!.id

    const listed = await admin.mfa.listFactors({ userId })
    expect(listed.error).toBeNull()
    expect(listed.data?.factors).toMatchObject([
      { id, friendly_name: 'laptop', factor_type: 'totp', status: 'verified' },
    ])
    expect(JSON.stringify(listed.data)).not.toContain(secret)

    const deleted = await admin.mfa.deleteFactor({ userId, id })
    expect(deleted.error).toBeNull()
    // auth-js hands the body on wrapped once more: `data.data` is the deleted factor.
    expect(deleted.data).toMatchObject({ data: { id, factor_type: 'totp' } })
    expect((await admin.mfa.listFactors({ userId })).data?.factors).toEqual([])
    const again = await admin.mfa.deleteFactor({ userId, id })
    expect(again.error).toMatchObject({ status: 404, code: 'mfa_factor_not_found' })
    // A soft-deleted user keeps no factors (upstream).
    const { id: second, secret: secondSecret } = await enrollTotp(auth, 'desktop')
    await verifyTotp(auth, second, secondSecret)
    expect((await admin.deleteUser(userId, true)).error).toBeNull()
    expect((await admin.mfa.listFactors({ userId })).data?.factors).toEqual([])
    const badUser = await server.request('GET', '/admin/users/not-a-uuid/factors', {
      token: server.serviceKey,
    })
    expect(badUser.statusCode).toBe(404)
  })

  it('renames a factor (PUT), refuses a name the user has, and audits factor_updated', async () => {
    const auth = await signedIn('admin-rename@example.com')
    const { id } = await enrollTotp(auth, 'laptop')
    const { id: other } = await enrollTotp(auth, 'phone app')
    const userId = (await auth.getUser()).data.user!.id
    const put = (factorId: string, body: unknown) =>
      server.request('PUT', `/admin/users/${userId}/factors/${factorId}`, {
        token: server.serviceKey,
        body,
      })
    const renamed = await put(id, { friendly_name: 'work laptop', phone: '+15550001111' })
    expect(renamed.statusCode).toBe(200)
    // A TOTP factor has no number: the phone is ignored, as upstream.
    expect(renamed.json()).toMatchObject({ id, friendly_name: 'work laptop', factor_type: 'totp' })
    expect((renamed.json() as { phone?: string }).phone ?? '').toBe('')
    expect((await put(other, { friendly_name: 'work laptop' })).json()).toMatchObject({
      code: 422,
      error_code: 'mfa_factor_name_conflict',
    })
    expect((await put(id, {})).json()).toMatchObject({ id, friendly_name: 'work laptop' })
    const missing = await put('00000000-0000-4000-8000-000000000000', { friendly_name: 'x' })
    expect(missing.json()).toMatchObject({ code: 404, error_code: 'mfa_factor_not_found' })
    expect((await put('nope', {})).statusCode).toBe(404)
    expect(
      (
        await server.request('PUT', `/admin/users/${userId}/factors/${id}`, {
          body: { friendly_name: 'x' },
        })
      ).statusCode,
    ).toBe(401)
    const { rows } = await server.app.db.query<{ traits: unknown }>(
      `SELECT payload->'traits' AS traits FROM ${server.app.db.t.auditLogEntries}
       WHERE payload->>'action' = 'factor_updated'`,
    )
    expect(rows.map((r) => r.traits)).toContainEqual({
      user_id: userId,
      factor_id: id,
      factor_type: 'totp',
    })
  })
})
