import { systemClock } from '@gatehouse/auth'
import { AuthApiError } from '@supabase/auth-js'
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
const email = (): string => `claims-${String(++counter)}@example.com`
const PASSWORD = 'a long enough password'

describe('HOOK_CUSTOM_ACCESS_TOKEN over HTTP', () => {
  let hook: FakeHook
  let server: TestServer

  beforeAll(async () => {
    hook = await startFakeHook()
    server = await startTestServer(
      'hook_cat_http',
      hookEnv('CUSTOM_ACCESS_TOKEN', hook.url),
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
    hook.respond = (payload) => ({
      claims: { ...(payload.claims as object), user_role: 'editor' },
    })
  })

  it('puts the claims the hook adds in the access token auth-js reads', async () => {
    const auth = authJsClient(server.url)
    const address = email()
    const signUp = await auth.signUp({ email: address, password: PASSWORD })
    expect(signUp.error).toBeNull()
    const { data, error } = await auth.getClaims()
    expect(error).toBeNull()
    expect(data?.claims).toMatchObject({
      user_role: 'editor',
      email: address,
      role: 'authenticated',
    })
    const [payload] = hook.payloads
    expect(payload).toMatchObject({
      user_id: signUp.data.user?.id,
      authentication_method: 'password',
      claims: { sub: signUp.data.user?.id, aal: 'aal1', is_anonymous: false },
      metadata: { name: 'customize-access-token', ip_address: '127.0.0.1' },
    })
    expect(hook.unsigned).toHaveLength(0)
  })

  it('is called with password on sign-in and token_refresh on refresh', async () => {
    const auth = authJsClient(server.url)
    const address = email()
    await auth.signUp({ email: address, password: PASSWORD })
    await auth.signOut({ scope: 'local' })
    hook.payloads.length = 0
    expect((await auth.signInWithPassword({ email: address, password: PASSWORD })).error).toBeNull()
    const refreshed = await auth.refreshSession()
    expect(refreshed.error).toBeNull()
    expect(hook.payloads.map((p) => p.authentication_method)).toEqual(['password', 'token_refresh'])
    const claims = JSON.parse(
      Buffer.from(refreshed.data.session?.access_token.split('.')[1] ?? '', 'base64url').toString(),
    ) as Record<string, unknown>
    expect(claims.user_role).toBe('editor')
  })

  it('refuses claims that drop or retype a required claim', async () => {
    hook.respond = (payload) => {
      const { email: _dropped, ...claims } = payload.claims as Record<string, unknown>
      return { claims: { ...claims, exp: 'tomorrow' } }
    }
    const auth = authJsClient(server.url)
    const { error } = await auth.signUp({ email: email(), password: PASSWORD })
    expect(error).toBeInstanceOf(AuthApiError)
    expect(error).toMatchObject({ status: 500, code: 'unexpected_failure' })
    expect(error?.message).toContain('output claims do not conform to the expected schema')
    expect(error?.message).toContain('email is required')
    expect(error?.message).toContain('exp: Invalid type')
  })

  it('answers the error object the hook returns', async () => {
    hook.respond = () => ({ error: { http_code: 403, message: 'No tokens on Sundays' } })
    const res = await server.request('POST', '/signup', {
      body: { email: email(), password: PASSWORD },
    })
    expect(res.statusCode).toBe(403)
    expect(res.json()).toMatchObject({ error_code: 'unknown', msg: 'No tokens on Sundays' })
  })

  it('answers 500 "output claims field is missing" without claims', async () => {
    hook.respond = () => ({ role: 'admin' })
    const res = await server.request('POST', '/signup', {
      body: { email: email(), password: PASSWORD },
    })
    expect(res.statusCode).toBe(500)
    expect(res.json()).toMatchObject({
      error_code: 'unexpected_failure',
      msg: 'output claims field is missing',
    })
  })
})

describe('HOOK_CUSTOM_ACCESS_TOKEN as a PostgreSQL function', () => {
  let functions: HookSchema
  let server: TestServer

  beforeAll(async () => {
    functions = await createHookSchema(
      'hook_functions',
      (schema) => `
        CREATE FUNCTION "${schema}".custom_access_token_hook(event jsonb) RETURNS jsonb
        LANGUAGE sql AS $$
          SELECT jsonb_build_object('claims', (event->'claims') || jsonb_build_object(
            'user_role', 'auditor', 'method', event->'authentication_method'))
        $$`,
    )
    server = await startTestServer(
      'hook_cat_pg',
      hookEnv('CUSTOM_ACCESS_TOKEN', functions.uri('custom_access_token_hook')),
      systemClock,
    )
    await server.listen()
  })
  afterAll(async () => {
    await server.close()
    await functions.close()
  })

  it('signs the claims the function returns', async () => {
    const auth = authJsClient(server.url)
    const address = email()
    expect((await auth.signUp({ email: address, password: PASSWORD })).error).toBeNull()
    const { data, error } = await auth.getClaims()
    expect(error).toBeNull()
    expect(data?.claims).toMatchObject({
      user_role: 'auditor',
      method: 'password',
      email: address,
    })
  })
})
