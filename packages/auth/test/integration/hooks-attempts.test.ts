import { systemClock } from '@gatehouse/auth'
import { totpCode } from '#internal/crypto/totp.js'
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
const email = (): string => `attempt-${String(++counter)}@example.com`
const PASSWORD = 'a long enough password'

describe('HOOK_PASSWORD_VERIFICATION_ATTEMPT', () => {
  let hook: FakeHook
  let server: TestServer

  beforeAll(async () => {
    hook = await startFakeHook()
    server = await startTestServer(
      'hook_password_attempt',
      {
        AUTHSVC_RATE_LIMIT_PASSWORD_FAILURES: '2',
        ...hookEnv('PASSWORD_VERIFICATION_ATTEMPT', hook.url),
      },
      systemClock,
    )
    await server.listen()
  })
  afterAll(async () => {
    await server.close()
    await hook.close()
  })
  beforeEach(() => {
    hook.payloads.length = 0
    hook.respond = () => ({ decision: 'continue' })
  })

  it('is told of each check, and a rejection refuses even the right password', async () => {
    const auth = authJsClient(server.url)
    const address = email()
    const user = (await auth.signUp({ email: address, password: PASSWORD })).data.user
    expect((await auth.signInWithPassword({ email: address, password: PASSWORD })).error).toBeNull()
    hook.respond = () => ({ decision: 'reject', message: 'Sign-ins are paused for you' })
    const rejected = await auth.signInWithPassword({ email: address, password: PASSWORD })
    expect(rejected.error).toMatchObject({
      status: 400,
      code: 'invalid_credentials',
      message: 'Sign-ins are paused for you',
    })
    hook.respond = () => ({ decision: 'reject' })
    const plain = await auth.signInWithPassword({ email: address, password: PASSWORD })
    expect(plain.error?.message).toBe('Further password verification attempts will be rejected.')
    expect(hook.payloads.map((p) => [p.user_id, p.valid, p.metadata.name])).toEqual([
      [user?.id, true, 'password-verification'],
      [user?.id, true, 'password-verification'],
      [user?.id, true, 'password-verification'],
    ])
  })

  it('ends every session of the user when should_logout_user is set', async () => {
    const auth = authJsClient(server.url)
    const address = email()
    await auth.signUp({ email: address, password: PASSWORD })
    const signedIn = await auth.signInWithPassword({ email: address, password: PASSWORD })
    const refreshToken = signedIn.data.session?.refresh_token ?? ''
    hook.respond = () => ({ decision: 'reject', should_logout_user: true })
    const other = authJsClient(server.url)
    const rejected = await other.signInWithPassword({ email: address, password: 'a wrong guess' })
    expect(rejected.error?.code).toBe('invalid_credentials')
    const refreshed = await server.request('POST', '/token?grant_type=refresh_token', {
      body: { refresh_token: refreshToken },
    })
    expect(refreshed.statusCode).toBe(400)
    expect(refreshed.json().error_code).toBe('refresh_token_not_found')
  })

  it('wrong passwords back off whatever the hook says, and unknown users never reach it', async () => {
    const auth = authJsClient(server.url)
    const address = email()
    await auth.signUp({ email: address, password: PASSWORD })
    hook.payloads.length = 0
    const codes = []
    // RATE_LIMIT_PASSWORD_FAILURES (2) free failures, then the third starts the back-off.
    for (let i = 0; i < 4; i++) {
      codes.push((await auth.signInWithPassword({ email: address, password: 'wrong' })).error?.code)
    }
    expect(codes).toEqual([
      ...Array<string>(3).fill('invalid_credentials'),
      'over_request_rate_limit',
    ])
    expect(hook.payloads.map((p) => p.valid)).toEqual([false, false, false])
    const unknown = await auth.signInWithPassword({ email: email(), password: 'wrong' })
    expect(unknown.error?.code).toBe('invalid_credentials')
    expect(hook.payloads).toHaveLength(3)
  })

  it('fails the sign-in with 500 when the hook answers something else than an object', async () => {
    const auth = authJsClient(server.url)
    const address = email()
    await auth.signUp({ email: address, password: PASSWORD })
    hook.respond = () => ['continue']
    const res = await server.request('POST', '/token?grant_type=password', {
      body: { email: address, password: PASSWORD },
    })
    expect(res.statusCode).toBe(500)
    expect(res.json()).toMatchObject({
      error_code: 'unexpected_failure',
      msg: 'Error unmarshaling JSON output.',
    })
  })
})

describe('HOOK_MFA_VERIFICATION_ATTEMPT as a PostgreSQL function', () => {
  let functions: HookSchema
  let server: TestServer

  beforeAll(async () => {
    functions = await createHookSchema(
      'hook_mfa',
      (schema) => `
        CREATE FUNCTION "${schema}".mfa_attempt(event jsonb) RETURNS jsonb
        LANGUAGE sql AS $$
          SELECT CASE WHEN (event->>'valid')::boolean
            THEN '{"decision":"continue"}'::jsonb
            ELSE '{"decision":"reject","message":"One wrong code is one too many"}'::jsonb END
        $$`,
    )
    server = await startTestServer(
      'hook_mfa_attempt',
      hookEnv('MFA_VERIFICATION_ATTEMPT', functions.uri('mfa_attempt')),
      systemClock,
    )
    await server.listen()
  })
  afterAll(async () => {
    await server.close()
    await functions.close()
  })

  it('lets a right code through and rejects a wrong one, ending every session', async () => {
    const auth = authJsClient(server.url)
    await auth.signUp({ email: email(), password: PASSWORD })
    const enrolled = await auth.mfa.enroll({ factorType: 'totp' })
    expect(enrolled.error).toBeNull()
    const factorId = enrolled.data?.id ?? ''
    const secret = enrolled.data?.totp.secret ?? ''
    const raised = await auth.mfa.challengeAndVerify({
      factorId,
      code: totpCode(secret, Date.now()),
    })
    expect(raised.error).toBeNull()
    const refreshToken = (await auth.getSession()).data.session?.refresh_token ?? ''

    const wrong = String((Number(totpCode(secret, Date.now())) + 500_000) % 1_000_000).padStart(
      6,
      '0',
    )
    const rejected = await auth.mfa.challengeAndVerify({ factorId, code: wrong })
    expect(rejected.error).toMatchObject({
      status: 403,
      code: 'mfa_verification_rejected',
      message: 'One wrong code is one too many',
    })
    const refreshed = await server.request('POST', '/token?grant_type=refresh_token', {
      body: { refresh_token: refreshToken },
    })
    expect(refreshed.statusCode).toBe(400)
  })
})
