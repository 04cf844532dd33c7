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
})
