import { readFileSync } from 'node:fs'
import {
  exportJWK,
  generateKeyPair,
  createLocalJWKSet,
  jwtVerify,
  decodeProtectedHeader,
} from 'jose'
import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAuthApp } from '@gatehouse/auth'
import { createLogger } from '#internal/logger.js'
import { signUp, startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'

async function privateJwk(alg: 'RS256' | 'ES256' | 'EdDSA', kid: string, sign: boolean) {
  const { privateKey } = await generateKeyPair(alg, { extractable: true })
  return {
    ...(await exportJWK(privateKey)),
    kid,
    alg,
    key_ops: sign ? ['sign', 'verify'] : ['verify'],
  }
}

describe('health, settings, JWKS, CORS and request ids', () => {
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer('server', {
      AUTHSVC_REQUEST_ID_HEADER: 'X-Request-Id',
      AUTHSVC_EXTERNAL_GITHUB_ENABLED: 'true',
      // An enabled provider needs its client (checked at start).
      AUTHSVC_EXTERNAL_GITHUB_CLIENT_ID: 'github-client',
      AUTHSVC_EXTERNAL_GITHUB_SECRET: 'github-secret',
      AUTHSVC_EXTERNAL_GITHUB_REDIRECT_URI: 'http://127.0.0.1:9999/callback',
      AUTHSVC_DISABLE_SIGNUP: 'false',
    })
  })
  afterAll(async () => {
    await server.close()
  })

  it("GET /health reports the package.json's version", async () => {
    const res = await server.request('GET', '/health')
    expect(res.statusCode).toBe(200)
    const { version } = JSON.parse(
      readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as { version: string }
    expect(res.json()).toEqual({
      version,
      name: 'GoTrue',
      description: 'GoTrue is a user registration and authentication API',
    })
  })

  it('GET /settings lists providers and switches', async () => {
    const body = (await server.request('GET', '/settings')).json()
    expect(body).toMatchObject({
      disable_signup: false,
      mailer_autoconfirm: true,
      phone_autoconfirm: false,
      autoconfirm: true,
    })
    expect(body.external).toMatchObject({
      email: true,
      phone: false,
      github: true,
      google: false,
      anonymous_users: false,
    })
  })

  it('publishes no symmetric key in the JWKS', async () => {
    const res = await server.request('GET', '/.well-known/jwks.json')
    expect(res.headers['cache-control']).toBe('public, max-age=600')
    expect(res.json()).toEqual({ keys: [] })
  })

  it('answers unknown routes with a 404 error body', async () => {
    const res = await server.request('GET', '/nope')
    expect(res.json()).toEqual({ code: 404, error_code: 'not_found', msg: 'Not Found' })
  })

  it('logs JSON lines with the request id from REQUEST_ID_HEADER and never a secret', async () => {
    const lines: string[] = []
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString('utf8').trim().split('\n'))
        done()
      },
    })
    const logger = createLogger({ level: 'debug', file: '' }, stream)
    const app = await createAuthApp(server.settings, { logger })
    try {
      const res = await app.server.inject({
        method: 'POST',
        url: '/token?grant_type=password',
        headers: { 'x-request-id': 'abc-123', authorization: 'Basic c2VjcmV0OnNlY3JldA==' },
        payload: { email: 'logme@example.com', password: 'hunter2-secret' },
      })
      expect(res.statusCode).toBe(400)
    } finally {
      await app.close()
    }
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(entries.filter((e) => e.request_id === 'abc-123').length).toBeGreaterThanOrEqual(2)
    const all = lines.join('\n')
    expect(all).not.toContain('hunter2-secret')
    expect(all).not.toContain('c2VjcmV0OnNlY3JldA==')
  })

  it('answers CORS preflights like upstream and exposes pagination headers', async () => {
    const preflight = await server.app.server.inject({
      method: 'OPTIONS',
      url: '/token',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, x-supabase-api-version',
      },
    })
    expect(preflight.statusCode).toBe(204)
    expect(preflight.headers['access-control-allow-origin']).toBe('https://app.example')
    expect(preflight.headers['access-control-allow-credentials']).toBe('true')
    expect(preflight.headers['access-control-allow-methods']).toBe('POST')
    expect(preflight.headers['access-control-allow-headers']).toBe(
      'authorization, content-type, x-supabase-api-version',
    )
    const refused = await server.app.server.inject({
      method: 'OPTIONS',
      url: '/token',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'x-evil',
      },
    })
    expect(refused.headers['access-control-allow-origin']).toBeUndefined()
    const actual = await server.request('GET', '/settings', {
      headers: { origin: 'https://app.example' },
    })
    expect(actual.headers['access-control-allow-origin']).toBe('https://app.example')
    expect(actual.headers['access-control-expose-headers']).toBe(
      'X-Total-Count, Link, X-Supabase-Api-Version',
    )
  })
})

describe.each(['RS256', 'ES256', 'EdDSA'] as const)('asymmetric signing with %s', (alg) => {
  let server: TestServer

  beforeAll(async () => {
    const signing = await privateJwk(alg, `${alg}-current`, true)
    const previous = await privateJwk('RS256', 'rs-previous', false)
    server = await startTestServer(`jwks_${alg}`, {
      AUTHSVC_JWT_KEYS: JSON.stringify([signing, previous]),
      AUTHSVC_JWT_SECRET: '',
    })
  })
  afterAll(async () => {
    await server.close()
  })

  it('signs access tokens with the key and publishes the public halves', async () => {
    const session = await signUp(server, `${alg.toLowerCase()}@example.com`)
    expect(decodeProtectedHeader(session.access_token)).toMatchObject({
      alg,
      kid: `${alg}-current`,
    })
    const jwks = (await server.request('GET', '/.well-known/jwks.json')).json() as unknown as {
      keys: Record<string, unknown>[]
    }
    expect(jwks.keys.map((k) => k.kid)).toEqual([`${alg}-current`, 'rs-previous'])
    for (const key of jwks.keys) {
      expect(key).toMatchObject({ use: 'sig', key_ops: ['verify'] })
      expect(key).not.toHaveProperty('d')
    }
    const verified = await jwtVerify(session.access_token, createLocalJWKSet(jwks as never))
    expect(verified.payload.sub).toBe(session.user.id)
    const me = await server.request('GET', '/user', { token: session.access_token })
    expect(me.statusCode).toBe(200)
  })

  it('publishes an OpenID Connect discovery document naming the keys and their algorithms', async () => {
    const res = await server.request('GET', '/.well-known/openid-configuration')
    expect(res.statusCode).toBe(200)
    expect(res.headers['cache-control']).toBe('public, max-age=600')
    const issuer = 'http://127.0.0.1:9999'
    expect(res.json()).toMatchObject({
      issuer,
      jwks_uri: `${issuer}/.well-known/jwks.json`,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      response_types_supported: ['code'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: alg === 'RS256' ? ['RS256'] : [alg, 'RS256'],
      code_challenge_methods_supported: ['S256'],
    })
  })

  // auth-js verifies RS256 and ES256 with the JWKS; EdDSA it refuses, which the server says at
  // start (see start-warnings.ts).
  it(`auth-js getClaims() ${alg === 'EdDSA' ? 'refuses' : 'verifies'} its access token`, async () => {
    const url = await server.listen()
    const auth = authJsClient(url)
    const email = `claims-${alg.toLowerCase()}@example.com`
    expect((await auth.signUp({ email, password: 'password123' })).error).toBeNull()
    if (alg === 'EdDSA') {
      await expect(auth.getClaims()).rejects.toThrow('Invalid alg claim')
      return
    }
    const { data, error } = await auth.getClaims()
    expect(error).toBeNull()
    expect(data?.header).toMatchObject({ alg, kid: `${alg}-current` })
    expect(data?.claims.email).toBe(email)
  })
})

describe('OpenID Connect discovery with JWT_SECRET only', () => {
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer('discovery_hs256', {
      AUTHSVC_JWT_ISSUER: 'https://auth.example.com/auth/v1/',
    })
  })
  afterAll(async () => {
    await server.close()
  })

  it('names JWT_ISSUER, endpoints without a doubled slash, and HS256', async () => {
    expect((await server.request('GET', '/.well-known/openid-configuration')).json()).toMatchObject(
      {
        issuer: 'https://auth.example.com/auth/v1/',
        jwks_uri: 'https://auth.example.com/auth/v1/.well-known/jwks.json',
        id_token_signing_alg_values_supported: ['HS256'],
      },
    )
    const url = await server.listen()
    const auth = authJsClient(url)
    expect(
      (await auth.signUp({ email: 'hs@example.com', password: 'password123' })).error,
    ).toBeNull()
    const { data, error } = await auth.getClaims()
    expect(error).toBeNull()
    expect(data?.header.alg).toBe('HS256')
    expect(data?.claims.iss).toBe('https://auth.example.com/auth/v1/')
  })
})
