import {
  AuthApiError,
  AuthWeakPasswordError,
  GoTrueAdminApi,
  type GoTrueClient,
} from '@supabase/auth-js'
import bcrypt from 'bcrypt'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { systemClock } from '@gatehouse/auth'
import { startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'
import { sha1Hex, startFakeRangeApi, type FakeRangeApi } from '../support/fake-range-api.js'

const PWNED = 'P@ssw0rd-from-a-breach'
const ALSO_PWNED = 'letmein-from-a-breach'
const SAFE = 'a quiet owl under nine bridges'
const PWNED_MESSAGE =
  'Password is known to be weak and easy to guess, please choose a different one.'

let fake: FakeRangeApi
let counter = 0
const email = (): string => `leaked-${String(++counter)}@example.com`

beforeAll(async () => {
  fake = await startFakeRangeApi()
  fake.addPwned(PWNED)
  fake.addPwned(ALSO_PWNED)
  // A padding line for the safe password's own suffix: count 0 is no match.
  fake.addPwned(SAFE, 0)
})
afterAll(async () => {
  await fake.close()
})
beforeEach(() => {
  fake.mode = 'ok'
  fake.requests.length = 0
})

async function startServer(label: string, env: Record<string, string>): Promise<TestServer> {
  const server = await startTestServer(
    label,
    {
      AUTHSVC_PASSWORD_HIBP_ENABLED: 'true',
      AUTHSVC_PASSWORD_HIBP_API_URL: fake.url,
      AUTHSVC_PASSWORD_HIBP_TIMEOUT: '300ms',
      ...env,
    },
    systemClock,
  )
  await server.listen()
  return server
}

function expectPwned(error: unknown): void {
  expect(error).toBeInstanceOf(AuthWeakPasswordError)
  const weak = error as AuthWeakPasswordError
  expect(weak.status).toBe(422)
  expect(weak.code).toBe('weak_password')
  expect(weak.reasons).toEqual(['pwned'])
  expect(weak.message).toBe(PWNED_MESSAGE)
}

describe('leaked-password protection, fail-open with the bloom cache', () => {
  let server: TestServer
  let client: GoTrueClient
  let admin: GoTrueAdminApi

  beforeAll(async () => {
    server = await startServer('hibp_open', {
      AUTHSVC_PASSWORD_HIBP_BLOOM_ENABLED: 'true',
      AUTHSVC_PASSWORD_HIBP_USER_AGENT: 'gatehouse-tests',
    })
    client = authJsClient(server.url)
    admin = new GoTrueAdminApi({
      url: server.url,
      headers: { Authorization: `Bearer ${server.serviceKey}` },
    })
  })
  afterAll(async () => {
    await server.close()
  })

  it('refuses a pwned password on sign-up, sending only the hash prefix', async () => {
    const { error } = await client.signUp({ email: email(), password: PWNED })
    expectPwned(error)
    expect(fake.requests).toHaveLength(1)
    expect(fake.requests[0]?.prefix).toBe(sha1Hex(PWNED).slice(0, 5))
    expect(fake.requests[0]?.headers['add-padding']).toBe('true')
    expect(fake.requests[0]?.headers['user-agent']).toBe('gatehouse-tests')
  })

  it('accepts a safe password (padding lines with count 0 are not matches)', async () => {
    const { data, error } = await client.signUp({ email: email(), password: SAFE })
    expect(error).toBeNull()
    expect(data.session?.access_token).toEqual(expect.any(String))
    expect(fake.requests).toHaveLength(1)
  })

  it('reports both reasons when the password is also too short', async () => {
    fake.addPwned('12345')
    const { error } = await client.signUp({ email: email(), password: '12345' })
    expect(error).toBeInstanceOf(AuthWeakPasswordError)
    expect((error as AuthWeakPasswordError).reasons).toEqual(['length', 'pwned'])
    expect(error?.message).toBe(`Password should be at least 6 characters. ${PWNED_MESSAGE}`)
  })

  it('refuses a pwned password on a password change', async () => {
    const { error: signUpError } = await client.signUp({ email: email(), password: SAFE })
    expect(signUpError).toBeNull()
    const { error } = await client.updateUser({ password: PWNED })
    expectPwned(error)
  })

  it('refuses a pwned password on admin create (beyond upstream) and update (as upstream)', async () => {
    const address = email()
    expectPwned((await admin.createUser({ email: address, password: ALSO_PWNED })).error)
    const { data, error: createError } = await admin.createUser({
      email: address,
      password: SAFE,
      email_confirm: true,
    })
    expect(createError).toBeNull()
    const id = data.user?.id ?? ''
    const { error } = await admin.updateUserById(id, { password: PWNED })
    expectPwned(error)
    const { error: safeError } = await admin.updateUserById(id, { password: SAFE })
    expect(safeError).toBeNull()
  })

  it('signs in with a pwned password but reports it in weakPassword', async () => {
    const address = email()
    // A password set before it leaked: imported as its hash, which is never looked up.
    const { error: createError } = await admin.createUser({
      email: address,
      password_hash: await bcrypt.hash(ALSO_PWNED, 4),
      email_confirm: true,
    })
    expect(createError).toBeNull()
    const { data, error } = await client.signInWithPassword({
      email: address,
      password: ALSO_PWNED,
    })
    expect(error).toBeNull()
    expect(data.session?.access_token).toEqual(expect.any(String))
    expect(data.weakPassword).toEqual({ message: PWNED_MESSAGE, reasons: ['pwned'] })
  })

  it('answers a known-pwned password from the bloom cache without a second request', async () => {
    const cached = 'hunter2-from-a-breach'
    fake.addPwned(cached)
    expectPwned((await client.signUp({ email: email(), password: cached })).error)
    expectPwned((await client.signUp({ email: email(), password: cached })).error)
    expect(fake.requests).toHaveLength(1)
    // Were it asked again, the hanging API would let the password through (fail-open).
    fake.mode = 'hang'
    expectPwned((await client.signUp({ email: email(), password: cached })).error)
    expect(fake.requests).toHaveLength(1)
  })

  it.each(['hang', 'garbage', 'huge', 'unavailable'] as const)(
    'allows the password when the range API fails (%s): fail-open',
    async (mode) => {
      fake.mode = mode
      const { data, error } = await client.signUp({ email: email(), password: SAFE })
      expect(error).toBeNull()
      expect(data.user?.email).toMatch(/^leaked-/)
      expect(fake.requests).toHaveLength(1)
    },
  )
})

describe('leaked-password protection, fail-closed without the bloom cache', () => {
  let server: TestServer
  let client: GoTrueClient

  beforeAll(async () => {
    server = await startServer('hibp_closed', { AUTHSVC_PASSWORD_HIBP_FAIL_CLOSED: 'true' })
    client = authJsClient(server.url)
  })
  afterAll(async () => {
    await server.close()
  })

  it('asks the range API for every check when the cache is off', async () => {
    expectPwned((await client.signUp({ email: email(), password: PWNED })).error)
    expectPwned((await client.signUp({ email: email(), password: PWNED })).error)
    expect(fake.requests).toHaveLength(2)
  })

  it.each(['hang', 'garbage', 'huge', 'unavailable'] as const)(
    "refuses with upstream's 500 when the range API fails (%s)",
    async (mode) => {
      fake.mode = mode
      const { data, error } = await client.signUp({ email: email(), password: SAFE })
      expect(data.user).toBeNull()
      expect(error).toBeInstanceOf(AuthApiError)
      expect(error?.status).toBe(500)
      expect(error?.code).toBe('unexpected_failure')
      expect(error?.message).toBe(
        'Unable to perform password strength check with HaveIBeenPwned.org.',
      )
    },
  )

  it('still signs in when the range API fails, reporting nothing (as upstream)', async () => {
    const address = email()
    expect((await client.signUp({ email: address, password: SAFE })).error).toBeNull()
    fake.mode = 'hang'
    const { data, error } = await client.signInWithPassword({ email: address, password: SAFE })
    expect(error).toBeNull()
    expect(data.session?.access_token).toEqual(expect.any(String))
    expect(data.weakPassword).toBeUndefined()
  })
})
