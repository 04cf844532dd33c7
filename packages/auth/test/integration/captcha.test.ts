import { AuthApiError } from '@supabase/auth-js'
import { getFreePort } from '@gatehouse/testing'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { systemClock, type CaptchaProviderName } from '@gatehouse/auth'
import { SiteverifyCaptcha } from '#internal/security/captcha.js'
import { startFakeApi, type ApiDescription, type FakeApi } from '../support/fake-form-api.js'
import { startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'

const SECRET = 'captcha-secret-key'
const GOOD = 'good-token'

/** A siteverify endpoint as hCaptcha and Turnstile answer it. */
function siteverify(path: string): ApiDescription {
  return {
    path,
    authorized: (r) => r.form.secret === SECRET,
    unauthorized: [200, { success: false, 'error-codes': ['invalid-input-secret'] }],
    success: (r) =>
      r.form.response === GOOD
        ? [200, { success: true, challenge_ts: '2026-11-24T01:00:00Z', hostname: 'localhost' }]
        : [200, { success: false, 'error-codes': ['invalid-input-response', 'bad-request'] }],
    failure: [200, { success: false, 'error-codes': ['timeout-or-duplicate'] }],
  }
}

const PROVIDERS: readonly { name: CaptchaProviderName; path: string }[] = [
  { name: 'hcaptcha', path: '/siteverify' },
  { name: 'turnstile', path: '/turnstile/v0/siteverify' },
]

describe.each(PROVIDERS)('captcha protection with $name', ({ name, path }) => {
  let fake: FakeApi
  let server: TestServer
  let counter = 0
  const email = (): string => `captcha-${name}-${String(++counter)}@example.com`

  beforeAll(async () => {
    fake = await startFakeApi(siteverify(path))
    server = await startTestServer(
      `captcha_${name}`,
      {
        AUTHSVC_SECURITY_CAPTCHA_ENABLED: 'true',
        AUTHSVC_SECURITY_CAPTCHA_PROVIDER: name,
        AUTHSVC_SECURITY_CAPTCHA_SECRET: SECRET,
        AUTHSVC_SECURITY_CAPTCHA_TIMEOUT: '500ms',
        AUTHSVC_SECURITY_CAPTCHA_VERIFY_URL: `${fake.url}${path}`,
        AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: 'true',
      },
      systemClock,
    )
    await server.listen()
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
  })
  beforeEach(() => {
    fake.mode = 'success'
    fake.requests.length = 0
  })

  it('refuses a request without a token, before asking the provider', async () => {
    const res = await server.request('POST', '/signup', {
      body: { email: email(), password: 'password123' },
    })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toEqual({
      code: 400,
      error_code: 'captcha_failed',
      msg: 'captcha protection: request disallowed (no captcha_token found)',
    })
    expect(fake.requests).toHaveLength(0)
  })

  it("refuses a rejected token with the provider's error codes", async () => {
    const res = await server.request('POST', '/signup', {
      body: {
        email: email(),
        password: 'password123',
        gotrue_meta_security: { captcha_token: 'forged' },
      },
    })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({
      error_code: 'captcha_failed',
      msg: 'captcha protection: request disallowed (invalid-input-response, bad-request)',
    })
  })

  it('accepts a good token from gotrue_meta_security or captcha_token, sent as siteverify wants', async () => {
    const nested = await server.request('POST', '/signup', {
      body: {
        email: email(),
        password: 'password123',
        gotrue_meta_security: { captcha_token: GOOD },
      },
    })
    expect(nested.statusCode).toBe(200)
    expect(fake.requests).toHaveLength(1)
    expect(fake.requests[0]).toMatchObject({
      method: 'POST',
      path,
      form: { secret: SECRET, response: GOOD, remoteip: '127.0.0.1' },
    })
    expect(fake.requests[0]?.headers['content-type']).toBe('application/x-www-form-urlencoded')
    const direct = await server.request('POST', '/signup', {
      body: { email: email(), password: 'password123', captcha_token: GOOD },
    })
    expect(direct.statusCode).toBe(200)
  })

  it('guards password sign-in, /otp, /magiclink, /recover, /resend and anonymous sign-in, not refresh', async () => {
    const guarded: [string, Record<string, unknown>][] = [
      ['/token?grant_type=password', { email: 'a@example.com', password: 'password123' }],
      ['/otp', { email: 'a@example.com' }],
      ['/magiclink', { email: 'a@example.com' }],
      ['/recover', { email: 'a@example.com' }],
      ['/resend', { type: 'signup', email: 'a@example.com' }],
      ['/signup', {}],
    ]
    for (const [url, body] of guarded) {
      const res = await server.request('POST', url, { body })
      expect([url, res.statusCode, res.json().error_code]).toEqual([url, 400, 'captcha_failed'])
    }
    const anonymous = await server.request('POST', '/signup', {
      body: { gotrue_meta_security: { captcha_token: GOOD } },
    })
    expect(anonymous.statusCode).toBe(200)
    expect(anonymous.json().user.is_anonymous).toBe(true)
    const refresh = await server.request('POST', '/token?grant_type=refresh_token', {
      body: { refresh_token: anonymous.json().refresh_token },
    })
    expect(refresh.statusCode).toBe(200)
  })

  it('lets requests with a service_role token through without a token', async () => {
    const res = await server.request('POST', '/signup', {
      body: { email: email(), password: 'password123' },
      token: server.serviceKey,
    })
    expect(res.statusCode).toBe(200)
    expect(fake.requests).toHaveLength(0)
    const user = await server.request('POST', '/signup', {
      body: { email: email(), password: 'password123' },
      token: 'not-a-jwt',
    })
    expect(user.json().error_code).toBe('captcha_failed')
  })

  it('answers 500 when the provider does not answer within SECURITY_CAPTCHA_TIMEOUT', async () => {
    fake.mode = 'hang'
    const res = await server.request('POST', '/signup', {
      body: { email: email(), password: 'password123', captcha_token: GOOD },
    })
    expect(res.statusCode).toBe(500)
    expect(res.json()).toMatchObject({ code: 500, msg: 'captcha verification process failed' })
  })

  it('works through unchanged @supabase/auth-js (signUp with options.captchaToken)', async () => {
    const auth = authJsClient(server.url)
    const refused = await auth.signUp({ email: email(), password: 'password123' })
    expect(refused.error).toBeInstanceOf(AuthApiError)
    expect(refused.error).toMatchObject({ status: 400, code: 'captcha_failed' })
    const accepted = await auth.signUp({
      email: email(),
      password: 'password123',
      options: { captchaToken: GOOD },
    })
    expect(accepted.error).toBeNull()
    expect(accepted.data.user?.email).toMatch(/^captcha-/)
    expect(fake.requests.at(-1)?.form.response).toBe(GOOD)
    const signIn = await auth.signInWithPassword({
      email: accepted.data.user!.email!,
      password: 'password123',
      options: { captchaToken: GOOD },
    })
    expect(signIn.error).toBeNull()
  })
})

describe('SiteverifyCaptcha', () => {
  it('fails with a clear error when the endpoint cannot be reached', async () => {
    const port = await getFreePort()
    const captcha = new SiteverifyCaptcha({
      enabled: true,
      provider: 'turnstile',
      secret: SECRET,
      timeoutMs: 1000,
      verifyUrl: `http://127.0.0.1:${String(port)}/siteverify`,
    })
    await expect(captcha.verify(GOOD, '127.0.0.1')).rejects.toThrow(
      /^turnstile could not be reached: /,
    )
  })
})
