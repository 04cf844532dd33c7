import { systemClock } from '@gatehouse/auth'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'
import {
  createHookSchema,
  hookEnv,
  startFakeHook,
  type FakeHook,
  type HookSchema,
} from '../support/fake-hook.js'

let counter = 0
const email = (domain = 'example.com'): string => `created-${String(++counter)}@${domain}`
const PASSWORD = 'a long enough password'

describe('HOOK_BEFORE_USER_CREATED (HTTP) and HOOK_AFTER_USER_CREATED (PostgreSQL)', () => {
  let hook: FakeHook
  let functions: HookSchema
  let server: TestServer

  const told = async (): Promise<{ id: string; email: string }[]> =>
    (
      await functions.client.query<{ payload: { user: { id: string; email: string } } }>(
        `SELECT payload FROM "${functions.name}".created ORDER BY at`,
      )
    ).rows.map((r) => ({ id: r.payload.user.id, email: r.payload.user.email }))

  beforeAll(async () => {
    hook = await startFakeHook()
    functions = await createHookSchema(
      'hook_user_created',
      (schema) => `
        CREATE TABLE "${schema}".created (payload jsonb, at timestamptz DEFAULT clock_timestamp());
        CREATE FUNCTION "${schema}".after_user_created(event jsonb) RETURNS jsonb
        LANGUAGE plpgsql AS $$
          BEGIN
            INSERT INTO "${schema}".created (payload) VALUES (event);
            RETURN NULL;
          END $$`,
    )
    server = await startTestServer(
      'hook_user_created',
      {
        AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: 'true',
        AUTHSVC_EXTERNAL_PHONE_ENABLED: 'true',
        AUTHSVC_SMS_PROVIDER: 'twilio',
        AUTHSVC_SMS_TWILIO_ACCOUNT_SID: 'AC0123',
        AUTHSVC_SMS_TWILIO_AUTH_TOKEN: 'secret',
        AUTHSVC_SMS_TWILIO_MESSAGE_SERVICE_SID: 'MG0456',
        // The number signed up below has a fixed code: no message is sent.
        AUTHSVC_SMS_TEST_OTP: '15550009999:123456',
        ...hookEnv('BEFORE_USER_CREATED', hook.url),
        ...hookEnv('AFTER_USER_CREATED', functions.uri('after_user_created')),
      },
      systemClock,
    )
    await server.listen()
  })
  afterAll(async () => {
    await server.close()
    await functions.close()
    await hook.close()
  })
  beforeEach(async () => {
    hook.payloads.length = 0
    await functions.client.query(`DELETE FROM "${functions.name}".created`)
    hook.respond = (payload) => {
      const user = payload.user as { email: string }
      return user.email.endsWith('@blocked.example')
        ? { error: { http_code: 403, message: 'Sign-ups from this domain are closed' } }
        : {}
    }
  })

  it('lets a sign-up through, then tells the after hook of the committed user', async () => {
    const auth = authJsClient(server.url)
    const address = email()
    const { data, error } = await auth.signUp({
      email: address,
      password: PASSWORD,
      options: { data: { plan: 'pro' } },
    })
    expect(error).toBeNull()
    expect(hook.payloads).toHaveLength(1)
    expect(hook.payloads[0]).toMatchObject({
      metadata: { name: 'before-user-created' },
      user: { id: data.user?.id, email: address, user_metadata: { plan: 'pro' } },
    })
    expect(await told()).toEqual([{ id: data.user?.id, email: address }])
  })

  it("refuses the sign-up with the hook's error, creating nothing", async () => {
    const auth = authJsClient(server.url)
    const address = email('blocked.example')
    const { error } = await auth.signUp({ email: address, password: PASSWORD })
    expect(error).toMatchObject({ status: 403, message: 'Sign-ups from this domain are closed' })
    expect(await told()).toEqual([])
    const listed = await server.request('GET', '/admin/users?per_page=1000', {
      token: server.serviceKey,
    })
    expect(listed.json().users.map((u) => u.email)).not.toContain(address)
  })

  it('hooks anonymous sign-ups and invites, not users the admin API creates', async () => {
    const anonymous = await authJsClient(server.url).signInAnonymously()
    expect(anonymous.error).toBeNull()
    const invited = email()
    const invite = await server.request('POST', '/invite', {
      token: server.serviceKey,
      body: { email: invited },
    })
    expect(invite.statusCode).toBe(200)
    const created = await server.request('POST', '/admin/users', {
      token: server.serviceKey,
      body: { email: email(), password: PASSWORD },
    })
    expect(created.statusCode).toBe(200)
    expect(hook.payloads).toHaveLength(2)
    expect(await told()).toEqual([
      { id: anonymous.data.user?.id, email: '' },
      { id: invite.json().id, email: invited },
    ])
  })

  it('hooks a sign-up by phone code', async () => {
    const auth = authJsClient(server.url)
    expect((await auth.signInWithOtp({ phone: '+15550009999' })).error).toBeNull()
    expect(hook.payloads[0]).toMatchObject({ user: { phone: '15550009999' } })
    const [told1] = await told()
    const verified = await auth.verifyOtp({ phone: '+15550009999', token: '123456', type: 'sms' })
    expect(verified.error).toBeNull()
    expect(told1?.id).toBe(verified.data.user?.id)
  })

  it("answers an email code sign-up with the before hook's refusal, creating nothing", async () => {
    const address = email('blocked.example')
    const { data, error } = await authJsClient(server.url).signInWithOtp({ email: address })
    expect(data).toEqual({ user: null, session: null })
    expect(error).toMatchObject({
      status: 403,
      code: 'unknown',
      message: 'Sign-ups from this domain are closed',
    })
    expect(hook.payloads).toHaveLength(1)
    expect(hook.payloads[0]).toMatchObject({ user: { email: address } })
    expect(await told()).toEqual([])
    const listed = await server.request('GET', '/admin/users?per_page=1000', {
      token: server.serviceKey,
    })
    expect(listed.json().users.map((u) => u.email)).not.toContain(address)
  })

  it('hooks a sign-up by magic link in the request, and not again for a known address', async () => {
    const auth = authJsClient(server.url)
    const address = email()
    const sent = await auth.signInWithOtp({ email: address, options: { data: { plan: 'pro' } } })
    expect(sent.error).toBeNull()
    const listed = await server.request('GET', '/admin/users?per_page=1000', {
      token: server.serviceKey,
    })
    const user = listed.json().users.find((u) => u.email === address)
    expect(user).toMatchObject({ user_metadata: { plan: 'pro' } })
    expect(hook.payloads).toHaveLength(1)
    expect(hook.payloads[0]).toMatchObject({
      metadata: { name: 'before-user-created' },
      user: { id: user?.id, email: address, user_metadata: { plan: 'pro' } },
    })
    expect(await told()).toEqual([{ id: user?.id, email: address }])
    expect((await auth.signInWithOtp({ email: address })).error).toBeNull()
    expect(hook.payloads).toHaveLength(1)
    expect(await told()).toHaveLength(1)
  })

  it('hooks users that admin generate_link creates, and answers its refusal', async () => {
    const address = email()
    const generated = await server.request('POST', '/admin/generate_link', {
      token: server.serviceKey,
      body: { type: 'magiclink', email: address },
    })
    expect(generated.statusCode).toBe(200)
    expect(generated.json()).toMatchObject({ email: address, verification_type: 'signup' })
    expect(hook.payloads).toHaveLength(1)
    expect(hook.payloads[0]).toMatchObject({ user: { id: generated.json().id, email: address } })
    expect(await told()).toEqual([{ id: generated.json().id, email: address }])
    const refused = await server.request('POST', '/admin/generate_link', {
      token: server.serviceKey,
      body: { type: 'invite', email: email('blocked.example') },
    })
    expect(refused.statusCode).toBe(403)
    expect(refused.json()).toMatchObject({
      error_code: 'unknown',
      msg: 'Sign-ups from this domain are closed',
    })
    expect(await told()).toHaveLength(1)
  })
})
