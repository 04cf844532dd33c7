import { FakeClock } from '@gatehouse/testing'
import type { GoTrueClient } from '@supabase/auth-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startFakeApi, type FakeApi } from '../support/fake-form-api.js'
import { RecordingMailer, startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'

/**
 * Black-box journeys of the phone flows and of anonymous conversion through the unchanged
 * `@supabase/auth-js`, over real HTTP, typing the codes the fake Twilio API received and the
 * recorded mails carry.
 */
describe('@supabase/auth-js phone and anonymous journeys', () => {
  const clock = new FakeClock(Date.now())
  const mailer = new RecordingMailer()
  let fake: FakeApi
  let server: TestServer
  let counter = 0
  const nextPhone = (): string => `1555040${String(1000 + ++counter)}`

  beforeAll(async () => {
    let sid = 0
    fake = await startFakeApi({
      path: '/2010-04-01/Accounts/AC0123/Messages.json',
      authorized: (r) =>
        r.headers.authorization === `Basic ${Buffer.from('AC0123:secret').toString('base64')}`,
      unauthorized: [401, { code: 20003, message: 'Authenticate', more_info: '', status: 401 }],
      success: (r) => [201, { sid: `SM${String(++sid)}`, status: 'queued', to: r.form.To }],
      failure: [400, { code: 21211, message: 'bad number', more_info: '', status: 400 }],
    })
    server = await startTestServer(
      'authjs_phone',
      {
        AUTHSVC_MAILER_AUTOCONFIRM: 'false',
        AUTHSVC_EXTERNAL_PHONE_ENABLED: 'true',
        AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: 'true',
        AUTHSVC_SMS_PROVIDER: 'twilio',
        AUTHSVC_SMS_TWILIO_ACCOUNT_SID: 'AC0123',
        AUTHSVC_SMS_TWILIO_AUTH_TOKEN: 'secret',
        AUTHSVC_SMS_TWILIO_MESSAGE_SERVICE_SID: 'MG0456',
        AUTHSVC_SMS_TWILIO_API_URL: fake.url,
      },
      clock,
      { deps: { mailer } },
    )
    await server.listen()
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
  })

  function client(): GoTrueClient {
    return authJsClient(server.url)
  }

  /** The code of the newest SMS to `+<phone>`. */
  function codeSentTo(phone: string): string {
    const body = fake.requests.filter((r) => r.form.To === `+${phone}`).at(-1)?.form.Body ?? ''
    const code = /Your code is (\d{6})/.exec(body)?.[1]
    if (code === undefined) throw new Error(`no code to ${phone}`)
    return code
  }

  it('signUp({ phone }) → verifyOtp({ type: "sms" }) → session', async () => {
    const auth = client()
    const phone = nextPhone()
    const signUp = await auth.signUp({ phone: `+${phone}`, password: 'secret123' })
    expect(signUp.error).toBeNull()
    expect(signUp.data.session).toBeNull()
    expect(signUp.data.user?.phone).toBe(phone)
    const verified = await auth.verifyOtp({ phone, token: codeSentTo(phone), type: 'sms' })
    expect(verified.error).toBeNull()
    expect(verified.data.session?.access_token).toEqual(expect.any(String))
    expect(verified.data.user?.phone_confirmed_at).toEqual(expect.any(String))
    const signIn = await client().signInWithPassword({ phone, password: 'secret123' })
    expect(signIn.error).toBeNull()
  })

  it('signInWithOtp({ phone }) signs up, then signs in with a messageId', async () => {
    const auth = client()
    const phone = nextPhone()
    const first = await auth.signInWithOtp({ phone })
    expect(first.error).toBeNull()
    expect(first.data.messageId).toBeUndefined()
    expect(
      (await auth.verifyOtp({ phone, token: codeSentTo(phone), type: 'sms' })).error,
    ).toBeNull()
    await auth.signOut()
    clock.advance(61_000)
    const again = await auth.signInWithOtp({ phone, options: { shouldCreateUser: false } })
    expect(again.error).toBeNull()
    expect(again.data.messageId).toMatch(/^SM\d+$/)
    const verified = await auth.verifyOtp({ phone, token: codeSentTo(phone), type: 'sms' })
    expect(verified.error).toBeNull()
    expect(verified.data.user?.phone).toBe(phone)

    const unknown = await client().signInWithOtp({
      phone: nextPhone(),
      options: { shouldCreateUser: false },
    })
    expect(unknown.error).toMatchObject({ status: 422, code: 'otp_disabled' })
  })

  it('updateUser({ phone }) → verifyOtp({ type: "phone_change" }) moves the user to the new number', async () => {
    const auth = client()
    const phone = nextPhone()
    await auth.signUp({ phone, password: 'secret123' })
    expect(
      (await auth.verifyOtp({ phone, token: codeSentTo(phone), type: 'sms' })).error,
    ).toBeNull()
    const newPhone = nextPhone()
    const updated = await auth.updateUser({ phone: `+${newPhone}` })
    expect(updated.error).toBeNull()
    expect(updated.data.user?.new_phone).toBe(newPhone)
    expect(updated.data.user?.phone).toBe(phone)
    const verified = await auth.verifyOtp({
      phone: newPhone,
      token: codeSentTo(newPhone),
      type: 'phone_change',
    })
    expect(verified.error).toBeNull()
    const { data } = await auth.getUser()
    expect(data.user?.phone).toBe(newPhone)
    expect(data.user?.new_phone).toBeUndefined()
    const old = await client().signInWithPassword({ phone, password: 'secret123' })
    expect(old.error).toMatchObject({ status: 400, code: 'invalid_credentials' })
  })

  it('signInAnonymously → updateUser({ email }) → the mailed code makes a permanent user', async () => {
    const auth = client()
    const anonymous = await auth.signInAnonymously()
    expect(anonymous.error).toBeNull()
    expect(anonymous.data.user?.is_anonymous).toBe(true)
    const email = 'js-anonymous@example.com'
    const updated = await auth.updateUser({ email })
    expect(updated.error).toBeNull()
    expect(updated.data.user?.new_email).toBe(email)
    expect(updated.data.user?.is_anonymous).toBe(true)
    const mail = mailer.last(email, 'email_change')
    const verified = await auth.verifyOtp({ email, token: mail.token, type: 'email_change' })
    expect(verified.error).toBeNull()
    expect(verified.data.user).toMatchObject({ email, is_anonymous: false })
    const claims = await auth.getClaims()
    expect(claims.data?.claims.is_anonymous).toBe(false)
  })

  it('signInAnonymously → updateUser({ phone }) → verifyOtp({ type: "phone_change" }) makes a permanent phone user', async () => {
    const auth = client()
    expect((await auth.signInAnonymously()).error).toBeNull()
    const phone = nextPhone()
    expect((await auth.updateUser({ phone })).error).toBeNull()
    const verified = await auth.verifyOtp({
      phone,
      token: codeSentTo(phone),
      type: 'phone_change',
    })
    expect(verified.error).toBeNull()
    expect(verified.data.user).toMatchObject({ phone, is_anonymous: false })
  })
})
