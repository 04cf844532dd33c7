import { createTestSchema, FakeClock, type TestDatabase } from '@gatehouse/testing'
import type { AuthError, GoTrueClient } from '@supabase/auth-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createAuthApp,
  loadSettings,
  migrate,
  openDb,
  type AuthApp,
  type Db,
  type SmsChannel,
  type SmsProvider,
} from '@gatehouse/auth'
import { PasswordBackoff } from '#internal/limiter/password-backoff.js'
import { totpCode } from '#internal/crypto/totp.js'
import { RecordingMailer, startTestServer, testEnv, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'

/**
 * Guessing one-time codes: every code, nonce and MFA challenge takes a few wrong answers at most
 * (`SECURITY_OTP_MAX_ATTEMPTS`, 5 by default), counted in the database per target whatever the
 * client does; unknown targets are answered exactly as known ones.
 *
 * @see issue 24, item 2
 */

const PASSWORD = 'password123'
/** `SECURITY_OTP_MAX_ATTEMPTS`' default. */
const MAX_ATTEMPTS = 5
/** One TOTP step. */
const STEP = 30_000

/** An SMS provider that keeps what it is asked to send. */
class RecordingSmsProvider implements SmsProvider {
  readonly sent: { phone: string; otp: string }[] = []

  sendMessage(phone: string, _message: string, _channel: SmsChannel, otp: string): Promise<string> {
    this.sent.push({ phone, otp })
    return Promise.resolve(`msg-${String(this.sent.length)}`)
  }

  /** The newest code sent to `phone`. */
  codeTo(phone: string): string {
    const code = this.sent.filter((s) => s.phone === phone).at(-1)?.otp
    if (code === undefined) throw new Error(`no SMS to ${phone}`)
    return code
  }
}

/** `count` six-digit codes, none of them `right` (a bounded guessing loop's guesses). */
function wrongCodes(right: string | readonly string[], count: number): string[] {
  const rights = new Set(typeof right === 'string' ? [right] : right)
  const codes: string[] = []
  for (let n = 0; codes.length < count; n++) {
    const code = String(n * 7919).padStart(6, '0')
    if (!rights.has(code)) codes.push(code)
  }
  return codes
}

/** What a client sees of an error: status, code and message. */
function seen(error: AuthError | null): { status?: number; code?: string; message: string } {
  expect(error).not.toBeNull()
  return { status: error?.status, code: error?.code, message: error?.message ?? '' }
}

const CODE_INVALID = {
  status: 403,
  code: 'otp_expired',
  message: 'Token has expired or is invalid',
}

describe('one-time codes cannot be guessed', () => {
  const clock = new FakeClock(Date.now())
  const mailer = new RecordingMailer()
  const sms = new RecordingSmsProvider()
  let server: TestServer
  let counter = 0
  const nextPhone = (): string => `1555070${String(1000 + ++counter)}`

  beforeAll(async () => {
    server = await startTestServer(
      'attempt_limits',
      {
        AUTHSVC_EXTERNAL_PHONE_ENABLED: 'true',
        AUTHSVC_RATE_LIMIT_EMAIL_SENT: '1000',
        AUTHSVC_RATE_LIMIT_SMS_SENT: '1000',
        AUTHSVC_SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION: 'true',
        // Sessions are aged past 24 hours below.
        AUTHSVC_JWT_EXP: '200000',
      },
      clock,
      { deps: { mailer, sms } },
    )
    await server.listen()
  })
  afterAll(async () => {
    await server.close()
  })

  function client(): GoTrueClient {
    return authJsClient(server.url)
  }

  async function signedUp(email: string): Promise<GoTrueClient> {
    const auth = client()
    expect((await auth.signUp({ email, password: PASSWORD })).error).toBeNull()
    return auth
  }

  async function userRow(email: string): Promise<Record<string, unknown>> {
    const { rows } = await server.app.db.query(
      `SELECT * FROM ${server.app.db.t.users} WHERE email = $1`,
      [email],
    )
    return rows[0]!
  }

  it('a recovery code is invalidated by its fifth wrong guess; unknown addresses get the same answers', async () => {
    const email = 'guess-recovery@example.com'
    await signedUp(email)
    const auth = client()
    expect((await auth.resetPasswordForEmail(email)).error).toBeNull()
    const code = (await mailer.waitFor(email, 'recovery')).token
    const guess = (address: string, token: string) =>
      auth.verifyOtp({ email: address, token, type: 'recovery' })

    for (const wrong of wrongCodes(code, MAX_ATTEMPTS)) {
      expect(seen((await guess(email, wrong)).error)).toEqual(CODE_INVALID)
      expect(seen((await guess('nobody@example.com', wrong)).error)).toEqual(CODE_INVALID)
    }
    // The right code comes too late: the code is gone and a new one must be requested.
    expect(seen((await guess(email, code)).error)).toEqual(CODE_INVALID)
    expect((await userRow(email)).recovery_token).toBe('')

    clock.advance(901_000) // SMTP_MAX_FREQUENCY
    expect((await auth.resetPasswordForEmail(email)).error).toBeNull()
    const fresh = (await mailer.waitFor(email, 'recovery', 2)).token
    for (const wrong of wrongCodes(fresh, MAX_ATTEMPTS - 1)) {
      expect(seen((await guess(email, wrong)).error)).toEqual(CODE_INVALID)
    }
    const signedIn = await guess(email, fresh)
    expect(signedIn.error).toBeNull()
    expect(signedIn.data.session?.access_token).toEqual(expect.any(String))
  })

  it('a password reset ends the back-off that failed sign-ins put on the account', async () => {
    const email = 'reset-backoff@example.com'
    await signedUp(email)
    const signIn = (password: string) => client().signInWithPassword({ email, password })
    // RATE_LIMIT_PASSWORD_FAILURES (5) free failures, then each one doubles the wait.
    for (let i = 0; i < 8; i++) await signIn(`wrong-${String(i)}`)
    expect(seen((await signIn(PASSWORD)).error)).toMatchObject({
      status: 429,
      code: 'over_request_rate_limit',
    })
    const auth = client()
    expect((await auth.resetPasswordForEmail(email)).error).toBeNull()
    const code = (await mailer.waitFor(email, 'recovery')).token
    expect((await auth.verifyOtp({ email, token: code, type: 'recovery' })).error).toBeNull()
    expect((await auth.updateUser({ password: 'after-reset-1' })).error).toBeNull()
    // No time passed: the change alone cleared the account's failures.
    expect((await signIn('after-reset-1')).error).toBeNull()
  })

  it('an email OTP counts the guesses of every type that can match it', async () => {
    const email = 'guess-email-otp@example.com'
    await signedUp(email)
    const auth = client()
    expect((await auth.signInWithOtp({ email })).error).toBeNull()
    const code = (await mailer.waitFor(email, 'magic_link')).token
    const [a, b, c, d, e] = wrongCodes(code, MAX_ATTEMPTS)
    for (const wrong of [a, b, c]) {
      const res = await auth.verifyOtp({ email, token: wrong!, type: 'email' })
      expect(seen(res.error)).toEqual(CODE_INVALID)
    }
    for (const wrong of [d, e]) {
      const res = await auth.verifyOtp({ email, token: wrong!, type: 'magiclink' })
      expect(seen(res.error)).toEqual(CODE_INVALID)
    }
    const late = await auth.verifyOtp({ email, token: code, type: 'email' })
    expect(seen(late.error)).toEqual(CODE_INVALID)
  })

  it('an SMS code is invalidated by its fifth wrong guess; unknown numbers get the same answers', async () => {
    const phone = nextPhone()
    const auth = client()
    expect((await auth.signUp({ phone, password: PASSWORD })).error).toBeNull()
    const signedUp = await auth.verifyOtp({ phone, token: sms.codeTo(phone), type: 'sms' })
    expect(signedUp.error).toBeNull()
    clock.advance(61_000) // SMS_MAX_FREQUENCY
    expect((await auth.signInWithOtp({ phone })).error).toBeNull()
    const code = sms.codeTo(phone)
    const unknown = nextPhone()
    for (const wrong of wrongCodes(code, MAX_ATTEMPTS)) {
      const known = await auth.verifyOtp({ phone, token: wrong, type: 'sms' })
      expect(seen(known.error)).toEqual(CODE_INVALID)
      const other = await auth.verifyOtp({ phone: unknown, token: wrong, type: 'sms' })
      expect(seen(other.error)).toEqual(CODE_INVALID)
    }
    const late = await auth.verifyOtp({ phone, token: code, type: 'sms' })
    expect(seen(late.error)).toEqual(CODE_INVALID)
  })

  it('concurrent guesses are counted as well: the right code among them is refused once the limit is reached', async () => {
    const email = 'guess-concurrent@example.com'
    await signedUp(email)
    const auth = client()
    expect((await auth.signInWithOtp({ email })).error).toBeNull()
    const code = (await mailer.waitFor(email, 'magic_link')).token
    const results = await Promise.all(
      wrongCodes(code, 40).map((token) =>
        server.request('POST', '/verify', { body: { type: 'magiclink', email, token } }),
      ),
    )
    expect(results.map((r) => r.statusCode)).toEqual(results.map(() => 403))
    const late = await auth.verifyOtp({ email, token: code, type: 'magiclink' })
    expect(seen(late.error)).toEqual(CODE_INVALID)
  })

  it('a reauthentication nonce is invalidated by its fifth wrong guess', async () => {
    const email = 'guess-nonce@example.com'
    const auth = await signedUp(email)
    clock.advance(25 * 3_600_000)
    expect((await auth.reauthenticate()).error).toBeNull()
    const nonce = mailer.last(email, 'reauthentication').token
    const refused = {
      status: 422,
      code: 'reauthentication_not_valid',
      message: 'Nonce has expired or is invalid',
    }
    for (const wrong of wrongCodes(nonce, MAX_ATTEMPTS)) {
      const res = await auth.updateUser({ password: 'a-new-password', nonce: wrong })
      expect(seen(res.error)).toEqual(refused)
    }
    const late = await auth.updateUser({ password: 'a-new-password', nonce })
    expect(seen(late.error)).toEqual(refused)
    expect((await userRow(email)).reauthentication_token).toBe('')

    clock.advance(901_000) // SMTP_MAX_FREQUENCY
    expect((await auth.reauthenticate()).error).toBeNull()
    const fresh = mailer.last(email, 'reauthentication').token
    expect((await auth.updateUser({ password: 'a-new-password', nonce: fresh })).error).toBeNull()
  })

  it('a TOTP challenge takes five wrong codes; then the factor backs off, even for the right code', async () => {
    const email = 'guess-totp@example.com'
    const owner = await signedUp(email)
    const enrolled = await owner.mfa.enroll({ factorType: 'totp' })
    expect(enrolled.error).toBeNull()
    const factorId = enrolled.data!.id
    const secret = enrolled.data!.totp.secret
    const first = await owner.mfa.challengeAndVerify({
      factorId,
      code: totpCode(secret, clock.now()),
    })
    expect(first.error).toBeNull()
    clock.advance(STEP)

    // Someone with the password only: an aal1 session guessing codes.
    const attacker = client()
    expect((await attacker.signInWithPassword({ email, password: PASSWORD })).error).toBeNull()
    const valid = [-STEP, 0, STEP].map((d) => totpCode(secret, clock.now() + d))
    const challenge = await attacker.mfa.challenge({ factorId })
    expect(challenge.error).toBeNull()
    const challengeId = challenge.data!.id
    const answers: (string | undefined)[] = []
    for (const code of wrongCodes(valid, 3 * MAX_ATTEMPTS)) {
      answers.push((await attacker.mfa.verify({ factorId, challengeId, code })).error?.code)
    }
    expect(answers).toEqual([
      ...Array<string>(MAX_ATTEMPTS).fill('mfa_verification_failed'),
      ...Array<string>(2 * MAX_ATTEMPTS).fill('mfa_factor_not_found'),
    ])
    const late = await attacker.mfa.verify({ factorId, challengeId, code: valid[1]! })
    expect(seen(late.error)).toEqual({
      status: 422,
      code: 'mfa_factor_not_found',
      message: 'MFA factor with the provided challenge ID not found',
    })

    // A new challenge: the factor had its free failures; the next one starts the back-off.
    const token = (await attacker.getSession()).data.session!.access_token
    const verify = async (code: string) => {
      const next = await attacker.mfa.challenge({ factorId })
      expect(next.error).toBeNull()
      return server.request('POST', `/factors/${factorId}/verify`, {
        token,
        body: { challenge_id: next.data!.id, code },
      })
    }
    const wrong = await verify(wrongCodes(valid, 1)[0]!)
    expect(wrong.json().error_code).toBe('mfa_verification_failed')
    const blocked = await verify(totpCode(secret, clock.now()))
    expect(blocked.statusCode).toBe(429)
    expect(blocked.json()).toMatchObject({ error_code: 'over_request_rate_limit' })
    expect(blocked.headers['retry-after']).toBe('1')
    clock.advance(1_000)
    const raised = await verify(totpCode(secret, clock.now()))
    expect(raised.statusCode).toBe(200)
  })
})

describe('phone factor challenges cannot be guessed', () => {
  const clock = new FakeClock(Date.now())
  const sms = new RecordingSmsProvider()
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer(
      'attempt_limits_phone_mfa',
      {
        AUTHSVC_MFA_PHONE_ENROLL_ENABLED: 'true',
        AUTHSVC_MFA_PHONE_VERIFY_ENABLED: 'true',
        AUTHSVC_RATE_LIMIT_SMS_SENT: '1000',
      },
      clock,
      { deps: { sms } },
    )
  })
  afterAll(async () => {
    await server.close()
  })

  it('five wrong codes delete the challenge; the right one then finds nothing', async () => {
    const signUp = await server.request('POST', '/signup', {
      body: { email: 'guess-sms-factor@example.com', password: PASSWORD },
    })
    const token = signUp.json().access_token
    const enrolled = await server.request('POST', '/factors', {
      token,
      body: { factor_type: 'phone', phone: '+15550710001' },
    })
    const factorId = (enrolled.json() as unknown as { id: string }).id
    const challenge = await server.request('POST', `/factors/${factorId}/challenge`, {
      token,
      body: {},
    })
    const challengeId = (challenge.json() as unknown as { id: string }).id
    const code = sms.codeTo('15550710001')
    const verify = (guess: string) =>
      server.request('POST', `/factors/${factorId}/verify`, {
        token,
        body: { challenge_id: challengeId, code: guess },
      })
    const codes: string[] = []
    for (const guess of wrongCodes(code, MAX_ATTEMPTS + 2)) {
      codes.push((await verify(guess)).json().error_code)
    }
    expect(codes).toEqual([
      ...Array<string>(MAX_ATTEMPTS).fill('mfa_verification_failed'),
      'mfa_factor_not_found',
      'mfa_factor_not_found',
    ])
    expect((await verify(code)).json().error_code).toBe('mfa_factor_not_found')
  })
})

describe('the password back-off is shared by every instance', () => {
  const clock = new FakeClock(Date.now())
  let server: TestServer
  let second: AuthApp

  beforeAll(async () => {
    server = await startTestServer('attempt_limits_instances', {}, clock)
    second = await createAuthApp(loadSettings(testEnv(server.database.url)), { clock })
  })
  afterAll(async () => {
    await second.close()
    await server.close()
  })

  it('failed passwords on one instance make another refuse the account, then both allow it again', async () => {
    const email = 'two-instances@example.com'
    expect(
      (await server.request('POST', '/signup', { body: { email, password: PASSWORD } })).statusCode,
    ).toBe(200)
    const signIn = (app: AuthApp, password: string) =>
      app.server.inject({
        method: 'POST',
        url: '/token?grant_type=password',
        payload: { email, password },
      })
    // RATE_LIMIT_PASSWORD_FAILURES (5) free failures, then the sixth starts the back-off.
    for (let i = 0; i < 6; i++) {
      expect((await signIn(server.app, `wrong-${String(i)}`)).statusCode).toBe(400)
    }
    const refused = await signIn(second, PASSWORD)
    expect(refused.statusCode).toBe(429)
    expect(refused.json()).toMatchObject({ error_code: 'over_request_rate_limit' })
    expect(refused.headers['retry-after']).toBe('1')
    clock.advance(1_000)
    expect((await signIn(second, PASSWORD)).statusCode).toBe(200)
    // The success cleared the account's failures for every instance.
    expect((await signIn(server.app, 'wrong-again')).statusCode).toBe(400)
    expect((await signIn(server.app, PASSWORD)).statusCode).toBe(200)
  })
})

describe('PasswordBackoff (in the database)', () => {
  let schema: TestDatabase
  let db: Db

  beforeAll(async () => {
    schema = await createTestSchema('auth_password_backoff')
    db = await openDb(schema.url, '', 2)
    await migrate(db)
  })
  afterAll(async () => {
    await db.close()
    await schema.drop()
  })

  it('lets the free failures pass, then doubles the delay up to the maximum', async () => {
    const backoff = new PasswordBackoff({ freeFailures: 2, baseDelayMs: 1_000, maxDelayMs: 4_000 })
    await backoff.failed(db, 'email:a@x', 0)
    await backoff.failed(db, 'email:a@x', 0)
    expect(await backoff.wait(db, 'email:a@x', 0)).toBe(0)
    const delays: number[] = []
    let now = 0
    for (let i = 0; i < 5; i++) {
      await backoff.failed(db, 'email:a@x', now)
      delays.push(await backoff.wait(db, 'email:a@x', now))
      now += delays.at(-1) ?? 0
      expect(await backoff.wait(db, 'email:a@x', now)).toBe(0)
    }
    expect(delays).toEqual([1_000, 2_000, 4_000, 4_000, 4_000])
    expect(await backoff.wait(db, 'email:other@x', now)).toBe(0)
  })

  it('is cleared by a success and forgotten after a quiet hour', async () => {
    const backoff = new PasswordBackoff({ freeFailures: 1 })
    await backoff.failed(db, 'k', 0)
    await backoff.failed(db, 'k', 0)
    expect(await backoff.wait(db, 'k', 0)).toBe(1_000)
    await backoff.succeeded(db, 'k')
    expect(await backoff.wait(db, 'k', 0)).toBe(0)
    await backoff.failed(db, 'k', 10_000)
    await backoff.failed(db, 'k', 10_000)
    expect(await backoff.wait(db, 'k', 3_610_999)).toBe(0)
    // A failure an hour after the last delay ended starts afresh: the first one is free again.
    await backoff.failed(db, 'k', 3_612_000)
    expect(await backoff.wait(db, 'k', 3_612_000)).toBe(0)
  })

  it('counts concurrent failures, stores no identifier and does nothing when off', async () => {
    const backoff = new PasswordBackoff({ freeFailures: 3 })
    await Promise.all(Array.from({ length: 8 }, () => backoff.failed(db, 'burst@x', 0)))
    // 8 failures, 3 free: the fifth doubling (16 s) is in force.
    expect(await backoff.wait(db, 'burst@x', 0)).toBe(16_000)
    const { rows } = await db.query<{ target: string }>(`SELECT target FROM ${db.t.failedAttempts}`)
    expect(rows.some((r) => r.target.includes('@'))).toBe(false)
    const off = new PasswordBackoff({ freeFailures: 0 })
    for (let i = 0; i < 10; i++) await off.failed(db, 'off@x', 0)
    expect(await off.wait(db, 'off@x', 0)).toBe(0)
    expect(await backoff.wait(db, 'x'.repeat(2000), 0)).toBe(0)
  })
})
