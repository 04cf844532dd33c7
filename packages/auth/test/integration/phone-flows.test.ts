import { FakeClock } from '@gatehouse/testing'
import { decodeJwt } from 'jose'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { startFakeApi, type FakeApi, type SeenRequest } from '../support/fake-form-api.js'
import {
  startFakeTwilioVerify,
  TWILIO_VERIFY,
  type FakeTwilioVerify,
} from '../support/fake-twilio-verify.js'
import {
  RecordingMailer,
  signUp,
  startTestServer,
  type TestResponse,
  type TestServer,
} from '../helpers.js'

const PASSWORD = 'password123'

/** The `message_id` of a body that must be exactly `{"message_id": …}`. */
function messageIdOf(res: TestResponse): string {
  const body = res.json() as unknown as Record<string, unknown>
  expect(Object.keys(body)).toEqual(['message_id'])
  return String(body.message_id)
}

const INVALID_CHANNEL =
  "Invalid channel, supported values are 'sms' or 'whatsapp'. 'whatsapp' is only supported if Twilio or Twilio Verify is used as the provider."

/** Twilio Programmable Messaging as the fake speaks it, each message with its own sid. */
async function startFakeTwilio(): Promise<FakeApi> {
  let counter = 0
  return startFakeApi({
    path: '/2010-04-01/Accounts/AC0123/Messages.json',
    authorized: (r) =>
      r.headers.authorization === `Basic ${Buffer.from('AC0123:twilio-token').toString('base64')}`,
    unauthorized: [401, { code: 20003, message: 'Authenticate', more_info: '', status: 401 }],
    success: (r) => [
      201,
      { sid: `SM${String(++counter).padStart(32, '0')}`, status: 'queued', to: r.form.To },
    ],
    failure: [400, { code: 21211, message: 'bad number', more_info: '', status: 400 }],
  })
}

/** Settings of the Twilio provider at the fake's URL, with phone factors enabled. */
function twilioSettings(fake: FakeApi): Record<string, string> {
  return {
    AUTHSVC_SMS_PROVIDER: 'twilio',
    AUTHSVC_SMS_TWILIO_ACCOUNT_SID: 'AC0123',
    AUTHSVC_SMS_TWILIO_AUTH_TOKEN: 'twilio-token',
    AUTHSVC_SMS_TWILIO_MESSAGE_SERVICE_SID: 'MG0456',
    AUTHSVC_SMS_TWILIO_API_URL: fake.url,
    AUTHSVC_MFA_PHONE_ENROLL_ENABLED: 'true',
    AUTHSVC_MFA_PHONE_VERIFY_ENABLED: 'true',
  }
}

/**
 * Phone flows as upstream answers them, through the Twilio provider against a local fake of its
 * API (the codes are read from the messages the fake received).
 */
describe('phone flows (Twilio fake)', () => {
  const clock = new FakeClock(Date.now())
  const mailer = new RecordingMailer()
  let fake: FakeApi
  let server: TestServer
  let counter = 0
  const nextPhone = (): string => `1555020${String(1000 + ++counter)}`

  beforeAll(async () => {
    fake = await startFakeTwilio()
    server = await startTestServer(
      'phone_flows',
      {
        AUTHSVC_EXTERNAL_PHONE_ENABLED: 'true',
        AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: 'true',
        ...twilioSettings(fake),
        AUTHSVC_RATE_LIMIT_SMS_SENT: '1000',
        AUTHSVC_MAILER_NOTIFICATIONS_PHONE_CHANGED_ENABLED: 'true',
        AUTHSVC_SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION: 'true',
        // Long-lived access tokens: a session is aged past 24 hours below.
        AUTHSVC_JWT_EXP: '200000',
        AUTHSVC_RATE_LIMIT_HEADER: 'X-Real-IP',
        AUTHSVC_RATE_LIMIT_ANONYMOUS_USERS: '2',
      },
      clock,
      { deps: { mailer } },
    )
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
  })
  beforeEach(() => {
    fake.mode = 'success'
  })

  /** The newest message the fake received for `+<phone>` (SMS or WhatsApp). */
  function lastTo(phone: string): SeenRequest {
    const seen = fake.requests.filter((r) => r.form.To?.endsWith(`+${phone}`)).at(-1)
    if (!seen) throw new Error(`no message to ${phone}`)
    return seen
  }

  /** The code of the newest message to `+<phone>`. */
  function codeSentTo(phone: string): string {
    const code = /Your code is (\d{6})/.exec(lastTo(phone).form.Body ?? '')?.[1]
    if (code === undefined) throw new Error(`no code to ${phone}`)
    return code
  }

  /** Signs a phone user up by `/otp` and verifies it: its token response. */
  async function phoneUser(phone: string) {
    expect((await server.request('POST', '/otp', { body: { phone } })).statusCode).toBe(200)
    const verified = await server.request('POST', '/verify', {
      body: { type: 'sms', phone, token: codeSentTo(phone) },
    })
    expect(verified.statusCode).toBe(200)
    return verified.json()
  }

  it('POST /otp signs an unknown number up (E.164 from any international form), then signs it in with the message id', async () => {
    const phone = nextPhone()
    const formatted = `+${phone.slice(0, 1)} (${phone.slice(1, 4)}) ${phone.slice(4, 7)}-${phone.slice(7)}`
    const first = await server.request('POST', '/otp', { body: { phone: formatted } })
    expect(first.statusCode).toBe(200)
    expect(first.json()).toEqual({})
    expect(lastTo(phone).form).toMatchObject({ To: `+${phone}`, Channel: 'sms', From: 'MG0456' })
    const signedUp = await server.request('POST', '/verify', {
      body: { type: 'sms', phone: formatted, token: codeSentTo(phone) },
    })
    expect(signedUp.statusCode).toBe(200)
    expect(signedUp.json().user).toMatchObject({ phone, app_metadata: { provider: 'phone' } })
    expect(signedUp.json().user.phone_confirmed_at).toEqual(expect.any(String))

    const tooSoon = await server.request('POST', '/otp', { body: { phone } })
    expect(tooSoon.statusCode).toBe(429)
    expect(tooSoon.json().error_code).toBe('over_sms_send_rate_limit')
    clock.advance(61_000)
    const again = await server.request('POST', '/otp', { body: { phone } })
    expect(again.statusCode).toBe(200)
    expect(messageIdOf(again)).toMatch(/^SM\d{32}$/)
    const code = codeSentTo(phone)
    const signedIn = await server.request('POST', '/verify', {
      body: { type: 'sms', phone, token: code },
    })
    expect(signedIn.statusCode).toBe(200)
    const amr = decodeJwt(signedIn.json().access_token).amr as { method: string }[]
    expect(amr.map((entry) => entry.method)).toEqual(['otp'])
    const reused = await server.request('POST', '/verify', {
      body: { type: 'sms', phone, token: code },
    })
    expect(reused.statusCode).toBe(403)
    expect(reused.json()).toMatchObject({
      error_code: 'otp_expired',
      msg: 'Token has expired or is invalid',
    })
  })

  it('POST /otp: create_user false, channels, and a provider failure', async () => {
    const unknown = await server.request('POST', '/otp', {
      body: { phone: nextPhone(), create_user: false },
    })
    expect(unknown.statusCode).toBe(422)
    expect(unknown.json()).toMatchObject({
      error_code: 'otp_disabled',
      msg: 'Signups not allowed for otp',
    })
    const pigeon = await server.request('POST', '/otp', {
      body: { phone: nextPhone(), channel: 'pigeon' },
    })
    expect(pigeon.statusCode).toBe(400)
    expect(pigeon.json()).toMatchObject({ error_code: 'validation_failed', msg: INVALID_CHANNEL })
    const badNumber = await server.request('POST', '/otp', {
      body: { phone: '+1 555 0100 ext. 5' },
    })
    expect(badNumber.statusCode).toBe(400)
    expect(badNumber.json().msg).toBe('Invalid phone number format (E.164 required)')

    const whatsapp = nextPhone()
    const sent = await server.request('POST', '/otp', {
      body: { phone: whatsapp, channel: 'whatsapp' },
    })
    expect(sent.statusCode).toBe(200)
    expect(lastTo(whatsapp).form).toMatchObject({
      To: `whatsapp:+${whatsapp}`,
      Channel: 'whatsapp',
    })

    fake.mode = 'failure'
    const failed = await server.request('POST', '/otp', { body: { phone: nextPhone() } })
    expect(failed.statusCode).toBe(422)
    expect(failed.json()).toMatchObject({
      error_code: 'sms_send_failed',
      msg: 'Error sending confirmation OTP to provider: bad number',
    })
  })

  it('PUT /user with phone: a code to the new number, resend, verify phone_change, the notification, phone_exists', async () => {
    const email = 'phone-change@example.com'
    const { access_token: token } = await signUp(server, email)
    const phone = nextPhone()
    const pending = await server.request('PUT', '/user', { token, body: { phone: `+${phone}` } })
    expect(pending.statusCode).toBe(200)
    expect(pending.json()).toMatchObject({ email, phone: '', new_phone: phone })
    expect(pending.json().phone_change_sent_at).toEqual(expect.any(String))
    const first = codeSentTo(phone)

    const tooSoon = await server.request('POST', '/resend', {
      body: { type: 'phone_change', phone },
    })
    expect(tooSoon.statusCode).toBe(429)
    expect(tooSoon.json()).toMatchObject({
      error_code: 'over_sms_send_rate_limit',
      msg: 'For security purposes, you can only request this after 60 seconds.',
    })
    clock.advance(61_000)
    const resent = await server.request('POST', '/resend', {
      body: { type: 'phone_change', phone },
    })
    expect(resent.statusCode).toBe(200)
    expect(messageIdOf(resent)).toMatch(/^SM\d{32}$/)
    const second = codeSentTo(phone)
    const stale = await server.request('POST', '/verify', {
      body: { type: 'phone_change', phone, token: first === second ? '000000' : first },
    })
    expect(stale.statusCode).toBe(403)

    const changed = await server.request('POST', '/verify', {
      body: { type: 'phone_change', phone, token: second },
    })
    expect(changed.statusCode).toBe(200)
    const user = changed.json().user
    expect(user).toMatchObject({
      email,
      phone,
      app_metadata: { provider: 'email', providers: ['email', 'phone'] },
    })
    expect(user.phone_confirmed_at).toEqual(expect.any(String))
    expect(user.new_phone).toBeUndefined()
    expect(user.identities.map((i) => [i.provider, i.identity_data])).toContainEqual([
      'phone',
      expect.objectContaining({ phone, phone_verified: true }),
    ])
    expect(mailer.last(email, 'phone_changed_notification')).toMatchObject({
      phone,
      oldPhone: '',
    })

    const other = await signUp(server, 'phone-taker@example.com')
    const taken = await server.request('PUT', '/user', {
      token: other.access_token,
      body: { phone },
    })
    expect(taken.statusCode).toBe(422)
    expect(taken.json()).toMatchObject({
      error_code: 'phone_exists',
      msg: 'A user with this phone number has already been registered',
    })
    const channel = await server.request('PUT', '/user', {
      token: other.access_token,
      body: { phone: nextPhone(), channel: 'carrier-pigeon' },
    })
    expect(channel.statusCode).toBe(400)
    expect(channel.json().msg).toBe(INVALID_CHANNEL)
  })

  it('an anonymous user adds a phone and becomes permanent once it is verified', async () => {
    const anonymous = await server.request('POST', '/signup', { body: {} })
    expect(anonymous.json().user.is_anonymous).toBe(true)
    const token = anonymous.json().access_token
    const phone = nextPhone()
    const pending = await server.request('PUT', '/user', { token, body: { phone } })
    expect(pending.statusCode).toBe(200)
    expect(pending.json()).toMatchObject({ is_anonymous: true, new_phone: phone })
    const verified = await server.request('POST', '/verify', {
      body: { type: 'phone_change', phone, token: codeSentTo(phone) },
    })
    expect(verified.statusCode).toBe(200)
    expect(verified.json().user).toMatchObject({
      phone,
      is_anonymous: false,
      app_metadata: { provider: 'phone', providers: ['phone'] },
    })
    expect(decodeJwt(verified.json().access_token).is_anonymous).toBe(false)
  })

  it('GET /reauthenticate sends a user without an email its nonce by SMS, which an aged session needs for a password change', async () => {
    const phone = nextPhone()
    const { access_token: token } = await phoneUser(phone)
    clock.advance(25 * 3_600_000)
    const sent = await server.request('GET', '/reauthenticate', { token })
    expect(sent.statusCode).toBe(200)
    expect(messageIdOf(sent)).toMatch(/^SM\d{32}$/)
    const nonce = codeSentTo(phone)
    const again = await server.request('GET', '/reauthenticate', { token })
    expect(again.statusCode).toBe(429)
    expect(again.json().error_code).toBe('over_sms_send_rate_limit')

    const password = 'a-new-password-1'
    const missing = await server.request('PUT', '/user', { token, body: { password } })
    expect(missing.statusCode).toBe(400)
    expect(missing.json().error_code).toBe('reauthentication_needed')
    const wrong = await server.request('PUT', '/user', {
      token,
      body: { password, nonce: nonce === '000000' ? '111111' : '000000' },
    })
    expect(wrong.statusCode).toBe(422)
    expect(wrong.json().error_code).toBe('reauthentication_not_valid')
    const changed = await server.request('PUT', '/user', { token, body: { password, nonce } })
    expect(changed.statusCode).toBe(200)
    const signIn = await server.request('POST', '/token?grant_type=password', {
      body: { phone, password },
    })
    expect(signIn.statusCode).toBe(200)
  })

  it('RATE_LIMIT_ANONYMOUS_USERS: anonymous sign-ins per client and hour, apart from other sign-ups', async () => {
    const from = (ip: string) => ({ 'x-real-ip': ip })
    const anonymous = (ip: string) =>
      server.request('POST', '/signup', { body: {}, headers: from(ip) })
    expect((await anonymous('198.51.100.7')).statusCode).toBe(200)
    expect((await anonymous('198.51.100.7')).statusCode).toBe(200)
    const limited = await anonymous('198.51.100.7')
    expect(limited.statusCode).toBe(429)
    expect(limited.json()).toMatchObject({
      error_code: 'over_request_rate_limit',
      msg: 'Request rate limit reached',
    })
    // 2 an hour: one more after half an hour.
    expect(limited.headers['retry-after']).toBe('1800')
    expect((await anonymous('198.51.100.8')).statusCode).toBe(200)
    const withEmail = await server.request('POST', '/signup', {
      body: { email: 'not-anonymous@example.com', password: PASSWORD },
      headers: from('198.51.100.7'),
    })
    expect(withEmail.statusCode).toBe(200)
    clock.advance(1_800_000)
    expect((await anonymous('198.51.100.7')).statusCode).toBe(200)
  })
  /** Enrolls a phone factor for `+<phone>` in the session of `token`: the answer. */
  function enrollPhoneFactor(token: string, phone: string): Promise<TestResponse> {
    return server.request('POST', '/factors', {
      token,
      body: { factor_type: 'phone', phone: `+${phone}`, friendly_name: phone },
    })
  }

  /** The id of an enrolment or challenge answer. */
  const idOf = (res: TestResponse): string => (res.json() as unknown as { id: string }).id

  /** @see issue 24, item 3 */
  it('a burst of 100 concurrent MFA challenges on 10 phone factors sends one SMS per factor, answers 429 to the others and never 500', async () => {
    const factors: { token: string; id: string; phone: string }[] = []
    for (let i = 0; i < 10; i++) {
      const { access_token: token } = await phoneUser(nextPhone())
      const phone = nextPhone()
      const enrolled = await enrollPhoneFactor(token, phone)
      expect(enrolled.statusCode).toBe(200)
      factors.push({ token, id: idOf(enrolled), phone })
    }
    const before = fake.requests.length
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => {
        const factor = factors[i % factors.length]!
        return server.request('POST', `/factors/${factor.id}/challenge`, {
          token: factor.token,
          body: {},
        })
      }),
    )
    const statuses = results.map((r) => r.statusCode).sort()
    expect(statuses).toEqual([...Array<number>(10).fill(200), ...Array<number>(90).fill(429)])
    for (const refused of results.filter((r) => r.statusCode === 429)) {
      expect(refused.json().error_code).toBe('over_sms_send_rate_limit')
    }
    const sent = fake.requests.slice(before)
    expect(sent.map((r) => r.form.To).sort()).toEqual(factors.map((f) => `+${f.phone}`).sort())

    // Each factor's one challenge verifies with the code its number got.
    for (const [i, factor] of factors.entries()) {
      const challenge = results.find((r, j) => j % factors.length === i && r.statusCode === 200)!
      const verified = await server.request('POST', `/factors/${factor.id}/verify`, {
        token: factor.token,
        body: { challenge_id: idOf(challenge), code: codeSentTo(factor.phone) },
      })
      expect(verified.statusCode).toBe(200)
    }
  })

  /** @see issue 24, item 3 */
  it('MFA_PHONE_MAX_UNVERIFIED_FACTORS caps pending phone factors; enrolling a number again keeps its interval', async () => {
    const { access_token: token } = await phoneUser(nextPhone())
    const [a, b, c] = [nextPhone(), nextPhone(), nextPhone()]
    const first = await enrollPhoneFactor(token, a)
    expect(first.statusCode).toBe(200)
    const challenge = (id: string) =>
      server.request('POST', `/factors/${id}/challenge`, { token, body: {} })
    expect((await challenge(idOf(first))).statusCode).toBe(200)
    const again = await enrollPhoneFactor(token, a)
    expect(again.statusCode).toBe(200)
    expect(idOf(again)).not.toBe(idOf(first))
    const tooSoon = await challenge(idOf(again))
    expect(tooSoon.statusCode).toBe(429)
    expect(tooSoon.json().error_code).toBe('over_sms_send_rate_limit')

    expect((await enrollPhoneFactor(token, b)).statusCode).toBe(200)
    const third = await enrollPhoneFactor(token, c)
    expect(third.statusCode).toBe(422)
    expect(third.json()).toMatchObject({
      error_code: 'too_many_enrolled_mfa_factors',
      msg: 'Maximum number of unverified phone factors reached, verify or unenroll one to continue',
    })
  })
})

/** MFA phone challenges spend the server-wide SMS budget like every other SMS. */
describe('RATE_LIMIT_SMS_SENT and MFA phone challenges', () => {
  let fake: FakeApi
  let server: TestServer

  beforeAll(async () => {
    fake = await startFakeTwilio()
    server = await startTestServer(
      'phone_mfa_budget',
      { ...twilioSettings(fake), AUTHSVC_RATE_LIMIT_SMS_SENT: '3' },
      new FakeClock(Date.now()),
    )
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
  })

  /** @see issue 24, item 3 */
  it('sends as many challenge codes as the budget allows, then answers 429 and sends nothing', async () => {
    const answers: TestResponse[] = []
    for (let i = 0; i < 4; i++) {
      const { access_token: token } = await signUp(server, `mfa-budget-${String(i)}@example.com`)
      const enrolled = await server.request('POST', '/factors', {
        token,
        body: { factor_type: 'phone', phone: `+1555080${String(1000 + i)}` },
      })
      const { id } = enrolled.json() as unknown as { id: string }
      answers.push(await server.request('POST', `/factors/${id}/challenge`, { token, body: {} }))
    }
    expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 200, 429])
    expect(answers[3]!.json()).toMatchObject({
      error_code: 'over_sms_send_rate_limit',
      msg: 'SMS rate limit exceeded',
    })
    expect(fake.requests).toHaveLength(3)
  })
})

/**
 * `SMS_PROVIDER=twilio_verify`: Twilio draws, sends and checks the codes; the fake speaks Verify's
 * `Verifications` and `VerificationCheck` endpoints.
 */
describe('Twilio Verify (fake)', () => {
  const clock = new FakeClock(Date.now())
  let fake: FakeTwilioVerify
  let server: TestServer
  let counter = 0
  const nextPhone = (): string => `1555030${String(1000 + ++counter)}`

  beforeAll(async () => {
    fake = await startFakeTwilioVerify()
    server = await startTestServer(
      'twilio_verify',
      {
        AUTHSVC_EXTERNAL_PHONE_ENABLED: 'true',
        AUTHSVC_SMS_PROVIDER: 'twilio_verify',
        AUTHSVC_SMS_TWILIO_VERIFY_ACCOUNT_SID: TWILIO_VERIFY.accountSid,
        AUTHSVC_SMS_TWILIO_VERIFY_AUTH_TOKEN: TWILIO_VERIFY.authToken,
        AUTHSVC_SMS_TWILIO_VERIFY_MESSAGE_SERVICE_SID: TWILIO_VERIFY.serviceSid,
        AUTHSVC_SMS_TWILIO_VERIFY_API_URL: fake.url,
        AUTHSVC_SMS_TEST_OTP: '15559990001:123456',
        AUTHSVC_MFA_PHONE_ENROLL_ENABLED: 'true',
        AUTHSVC_MFA_PHONE_VERIFY_ENABLED: 'true',
      },
      clock,
    )
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
  })
  beforeEach(() => {
    fake.mode = 'success'
  })

  const checks = (): SeenRequest[] =>
    fake.requests.filter((r) => r.path.endsWith('/VerificationCheck'))

  it('starts a verification on sign-up and confirms the code Twilio approves', async () => {
    const phone = nextPhone()
    const res = await server.request('POST', '/signup', { body: { phone, password: PASSWORD } })
    expect(res.statusCode).toBe(200)
    const started = fake.requests.at(-1)!
    expect(started.path).toBe(`/v2/Services/${TWILIO_VERIFY.serviceSid}/Verifications`)
    expect(started.form).toEqual({ To: `+${phone}`, Channel: 'sms' })
    const code = fake.codeFor(phone)!
    const wrong = await server.request('POST', '/verify', {
      body: { type: 'sms', phone, token: code === '000000' ? '111111' : '000000' },
    })
    expect(wrong.statusCode).toBe(403)
    expect(wrong.json().msg).toBe('Token has expired or is invalid')
    const verified = await server.request('POST', '/verify', {
      body: { type: 'sms', phone, token: code },
    })
    expect(verified.statusCode).toBe(200)
    expect(verified.json().user.phone_confirmed_at).toEqual(expect.any(String))
    expect(checks().at(-1)!.form).toEqual({ To: `+${phone}`, Code: code })

    // Approved verifications are gone at Twilio (404): the code works once.
    const reused = await server.request('POST', '/verify', {
      body: { type: 'sms', phone, token: code },
    })
    expect(reused.statusCode).toBe(403)
    expect(reused.json().error_code).toBe('otp_expired')
  })

  it('answers the verification sid as message_id, over WhatsApp without prefixes, and checks a phone change', async () => {
    const phone = nextPhone()
    expect((await server.request('POST', '/otp', { body: { phone } })).statusCode).toBe(200)
    const first = await server.request('POST', '/verify', {
      body: { type: 'sms', phone, token: fake.codeFor(phone) },
    })
    expect(first.statusCode).toBe(200)
    clock.advance(61_000)
    const otp = await server.request('POST', '/otp', { body: { phone, channel: 'whatsapp' } })
    expect(otp.statusCode).toBe(200)
    expect(messageIdOf(otp)).toMatch(/^VE\d{32}$/)
    expect(fake.requests.at(-1)!.form).toEqual({ To: `+${phone}`, Channel: 'whatsapp' })
    const signedIn = await server.request('POST', '/verify', {
      body: { type: 'sms', phone, token: fake.codeFor(phone) },
    })
    expect(signedIn.statusCode).toBe(200)

    const newPhone = nextPhone()
    const token = signedIn.json().access_token
    expect(
      (await server.request('PUT', '/user', { token, body: { phone: newPhone } })).statusCode,
    ).toBe(200)
    const changed = await server.request('POST', '/verify', {
      body: { type: 'phone_change', phone: newPhone, token: fake.codeFor(newPhone) },
    })
    expect(changed.statusCode).toBe(200)
    expect(changed.json().user.phone).toBe(newPhone)
  })

  it('checks the code of an MFA phone challenge with Twilio', async () => {
    const phone = nextPhone()
    expect((await server.request('POST', '/otp', { body: { phone } })).statusCode).toBe(200)
    const signedIn = await server.request('POST', '/verify', {
      body: { type: 'sms', phone, token: fake.codeFor(phone) },
    })
    const token = signedIn.json().access_token
    const mfaPhone = nextPhone()
    const enrolled = await server.request('POST', '/factors', {
      token,
      body: { factor_type: 'phone', phone: mfaPhone },
    })
    expect(enrolled.statusCode).toBe(200)
    const factorId = (enrolled.json() as unknown as { id: string }).id
    const challenge = await server.request('POST', `/factors/${factorId}/challenge`, {
      token,
      body: {},
    })
    expect(challenge.statusCode).toBe(200)
    const challengeId = (challenge.json() as unknown as { id: string }).id
    const code = fake.codeFor(mfaPhone)!
    const wrong = await server.request('POST', `/factors/${factorId}/verify`, {
      token,
      body: { challenge_id: challengeId, code: code === '000000' ? '111111' : '000000' },
    })
    expect(wrong.statusCode).toBe(422)
    expect(wrong.json().error_code).toBe('mfa_verification_failed')
    const verified = await server.request('POST', `/factors/${factorId}/verify`, {
      token,
      body: { challenge_id: challengeId, code },
    })
    expect(verified.statusCode).toBe(200)
    expect(decodeJwt(verified.json().access_token).aal).toBe('aal2')
    expect(checks().at(-1)!.form).toEqual({ To: `+${mfaPhone}`, Code: code })
  })

  it("uses SMS_TEST_OTP numbers' codes without calling Twilio, and reports Twilio's errors", async () => {
    const before = fake.requests.length
    const test = await server.request('POST', '/signup', {
      body: { phone: '15559990001', password: PASSWORD },
    })
    expect(test.statusCode).toBe(200)
    const verified = await server.request('POST', '/verify', {
      body: { type: 'sms', phone: '15559990001', token: '123456' },
    })
    expect(verified.statusCode).toBe(200)
    expect(fake.requests.length).toBe(before)

    fake.mode = 'failure'
    const failed = await server.request('POST', '/signup', {
      body: { phone: nextPhone(), password: PASSWORD },
    })
    expect(failed.statusCode).toBe(422)
    expect(failed.json()).toMatchObject({
      error_code: 'sms_send_failed',
      msg: 'Error sending confirmation OTP to provider: Invalid parameter `To`: +1555 More information: https://www.twilio.com/docs/errors/60200',
    })
  })
})

/** `SMS_AUTOCONFIRM`: phone changes happen at once; `/otp` signs new numbers up confirmed. */
describe('phone flows under SMS_AUTOCONFIRM', () => {
  const mailer = new RecordingMailer()
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer(
      'phone_autoconfirm',
      {
        AUTHSVC_EXTERNAL_PHONE_ENABLED: 'true',
        AUTHSVC_SMS_AUTOCONFIRM: 'true',
        AUTHSVC_SMS_TEST_OTP: '15550509999:111222',
        AUTHSVC_MAILER_NOTIFICATIONS_PHONE_CHANGED_ENABLED: 'true',
      },
      new FakeClock(Date.now()),
      { deps: { mailer } },
    )
  })
  afterAll(async () => {
    await server.close()
  })

  it('PUT /user changes the phone at once and sends the notification', async () => {
    const email = 'autoconfirm-phone@example.com'
    const { access_token: token } = await signUp(server, email)
    const changed = await server.request('PUT', '/user', {
      token,
      body: { phone: '+15550500001' },
    })
    expect(changed.statusCode).toBe(200)
    expect(changed.json()).toMatchObject({ phone: '15550500001' })
    expect(changed.json().phone_confirmed_at).toEqual(expect.any(String))
    expect(changed.json().new_phone).toBeUndefined()
    expect(mailer.last(email, 'phone_changed_notification')).toMatchObject({
      phone: '15550500001',
      oldPhone: '',
    })
    const again = await server.request('PUT', '/user', {
      token,
      body: { phone: '+15550500002' },
    })
    expect(again.json()).toMatchObject({ phone: '15550500002' })
    expect(mailer.last(email, 'phone_changed_notification')).toMatchObject({
      phone: '15550500002',
      oldPhone: '15550500001',
    })
  })

  it('POST /otp signs an unknown number up confirmed and sends it a sign-in code', async () => {
    const sent = await server.request('POST', '/otp', { body: { phone: '15550509999' } })
    expect(sent.statusCode).toBe(200)
    expect(messageIdOf(sent)).toBe('test-otp')
    const verified = await server.request('POST', '/verify', {
      body: { type: 'sms', phone: '15550509999', token: '111222' },
    })
    expect(verified.statusCode).toBe(200)
    expect(verified.json().user.phone).toBe('15550509999')
  })
})
