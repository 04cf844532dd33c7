import { systemClock } from '@gatehouse/auth'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { RecordingMailer, startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'
import {
  createHookSchema,
  hookEnv,
  startFakeHook,
  type FakeHook,
  type HookSchema,
} from '../support/fake-hook.js'

let counter = 0
const email = (): string => `send-${String(++counter)}@example.com`
const PASSWORD = 'a long enough password'

describe('HOOK_SEND_EMAIL', () => {
  let hook: FakeHook
  let server: TestServer
  const mailer = new RecordingMailer()

  beforeAll(async () => {
    hook = await startFakeHook()
    server = await startTestServer(
      'hook_send_email',
      {
        AUTHSVC_MAILER_AUTOCONFIRM: 'false',
        AUTHSVC_MAILER_NOTIFICATIONS_PASSWORD_CHANGED_ENABLED: 'true',
        ...hookEnv('SEND_EMAIL', hook.url),
      },
      systemClock,
      { deps: { mailer } },
    )
    await server.listen()
  })
  afterAll(async () => {
    await server.close()
    await hook.close()
  })
  beforeEach(() => {
    hook.payloads.length = 0
    hook.respond = () => ({})
  })

  it('gets the sign-up code instead of SMTP, and the code confirms the user', async () => {
    const auth = authJsClient(server.url)
    const address = email()
    const signUp = await auth.signUp({
      email: address,
      password: PASSWORD,
      options: { emailRedirectTo: 'http://localhost:3000/welcome' },
    })
    expect(signUp.error).toBeNull()
    const payload = await hook.payload(1)
    expect(payload).toMatchObject({
      metadata: { name: 'send-email' },
      user: { id: signUp.data.user?.id, email: address },
      email_data: {
        email_action_type: 'signup',
        redirect_to: 'http://localhost:3000/welcome',
        site_url: server.settings.apiExternalUrl,
        token_new: '',
        token_hash_new: '',
      },
    })
    const data = payload.email_data as { token: string; token_hash: string }
    expect(data.token).toMatch(/^\d{6}$/)
    expect(data.token_hash).toMatch(/^[0-9a-f]{56}$/)
    expect(mailer.messages).toEqual([])
    const verified = await auth.verifyOtp({ email: address, token: data.token, type: 'signup' })
    expect(verified.error).toBeNull()
    expect(verified.data.session?.user.email).toBe(address)
  })

  it('gets the magic-link code, which signs the user in', async () => {
    const auth = authJsClient(server.url)
    const address = email()
    expect((await auth.signInWithOtp({ email: address })).error).toBeNull()
    const payload = await hook.payload(1)
    const data = payload.email_data as { token: string; email_action_type: string }
    expect(data.email_action_type).toBe('signup')
    await auth.verifyOtp({ email: address, token: data.token, type: 'email' })
    expect((await auth.signInWithOtp({ email: address })).error).toBeNull()
    const second = (await hook.payload(2)).email_data as {
      token: string
      email_action_type: string
    }
    expect(second.email_action_type).toBe('magiclink')
    const { data: session, error } = await auth.verifyOtp({
      email: address,
      token: second.token,
      type: 'email',
    })
    expect(error).toBeNull()
    expect(session.user?.email).toBe(address)
    expect(mailer.messages).toEqual([])
  })

  it('gets notifications too', async () => {
    const auth = authJsClient(server.url)
    const address = email()
    await auth.signUp({ email: address, password: PASSWORD })
    const token = ((await hook.payload(1)).email_data as { token: string }).token
    expect((await auth.verifyOtp({ email: address, token, type: 'signup' })).error).toBeNull()
    expect((await auth.updateUser({ password: 'another long password' })).error).toBeNull()
    const notice = await hook.payload(2)
    expect(notice).toMatchObject({
      user: { email: address },
      email_data: { email_action_type: 'password_changed_notification', token: '' },
    })
    expect(mailer.messages).toEqual([])
  })

  it("fails the request with the hook's error, and records no user", async () => {
    hook.respond = () => ({ error: { http_code: 422, message: 'Mail is closed today' } })
    const address = email()
    const res = await server.request('POST', '/signup', {
      body: { email: address, password: PASSWORD },
    })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toMatchObject({ error_code: 'unknown', msg: 'Mail is closed today' })
    hook.respond = () => ({})
    // The sign-up rolled back: the address is still free.
    const again = await server.request('POST', '/signup', {
      body: { email: address, password: PASSWORD },
    })
    expect(again.statusCode).toBe(200)
  })
})

describe('HOOK_SEND_SMS as a PostgreSQL function', () => {
  let functions: HookSchema
  let server: TestServer

  beforeAll(async () => {
    functions = await createHookSchema(
      'hook_sms',
      (schema) => `
        CREATE TABLE "${schema}".outbox (payload jsonb);
        CREATE FUNCTION "${schema}".send_sms(event jsonb) RETURNS jsonb
        LANGUAGE plpgsql AS $$
          BEGIN
            INSERT INTO "${schema}".outbox VALUES (event);
            RETURN '{}'::jsonb;
          END $$`,
    )
    server = await startTestServer(
      'hook_send_sms',
      {
        AUTHSVC_EXTERNAL_PHONE_ENABLED: 'true',
        // A provider nobody answers at: with the hook on it is never asked.
        AUTHSVC_SMS_PROVIDER: 'twilio',
        AUTHSVC_SMS_TWILIO_ACCOUNT_SID: 'AC0123',
        AUTHSVC_SMS_TWILIO_AUTH_TOKEN: 'secret',
        AUTHSVC_SMS_TWILIO_MESSAGE_SERVICE_SID: 'MG0456',
        AUTHSVC_SMS_TWILIO_API_URL: 'http://127.0.0.1:9',
        ...hookEnv('SEND_SMS', functions.uri('send_sms')),
      },
      systemClock,
    )
    await server.listen()
  })
  afterAll(async () => {
    await server.close()
    await functions.close()
  })

  it('gets the code in the request transaction, and the code signs the user in', async () => {
    const auth = authJsClient(server.url)
    expect((await auth.signInWithOtp({ phone: '+15550001234' })).error).toBeNull()
    const { rows } = await functions.client.query<{
      payload: { sms: { otp: string; phone: string } }
    }>(`SELECT payload FROM "${functions.name}".outbox`)
    expect(rows).toHaveLength(1)
    const sms = rows[0]?.payload.sms
    expect(sms).toMatchObject({ phone: '15550001234' })
    expect(rows[0]?.payload).toMatchObject({
      metadata: { name: 'send-sms' },
      user: { phone: '15550001234' },
    })
    const { data, error } = await auth.verifyOtp({
      phone: '+15550001234',
      token: sms?.otp ?? '',
      type: 'sms',
    })
    expect(error).toBeNull()
    expect(data.session?.user.phone).toBe('15550001234')
  })
})
