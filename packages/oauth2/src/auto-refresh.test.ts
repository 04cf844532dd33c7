import { createHash } from 'node:crypto'
import { FakeClock } from '@gatehouse/testing'
import { EmbeddedJWK, jwtVerify } from 'jose'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { argError } from '../test/support/expect.js'
import { FakeServer, type FakeReply, type RecordedRequest } from '../test/support/fake-server.js'
import { AccessToken, type AccessTokenOptions } from './access-token.js'
import { Client } from './client.js'
import { OAuth2Error } from './error.js'

const NOW = Date.UTC(2030, 0, 1)
const invalidToken: FakeReply = {
  status: 401,
  headers: { 'WWW-Authenticate': 'Bearer realm="api", error="invalid_token"' },
  body: { error: 'invalid_token' },
}
const refreshed = (n: number): FakeReply => ({
  body: { access_token: `at-${String(n)}`, refresh_token: `rt-${String(n)}`, expires_in: 600 },
})
const ok: FakeReply = { body: { ok: true } }

/** Answers 200 for `Bearer <valid>`, the invalid_token 401 otherwise. */
const onlyFor =
  (valid: string) =>
  (request: RecordedRequest): FakeReply =>
    request.headers.authorization === `Bearer ${valid}` ? ok : invalidToken

describe('self-refreshing AccessToken (fetch, autoRefresh)', () => {
  let server: FakeServer
  let clock: FakeClock
  let client: Client
  let saved: Record<string, unknown>[]

  const token = (opts: AccessTokenOptions = {}) =>
    new AccessToken(client, 'at-0', {
      refresh_token: 'rt-0',
      expires_in: 600,
      onRefresh: (t: AccessToken) => {
        saved.push(t.toHash())
      },
      ...opts,
    })

  beforeEach(async () => {
    server = await FakeServer.start()
    clock = new FakeClock(NOW)
    client = new Client('id', 'secret', { site: server.url, clock })
    saved = []
  })

  afterEach(async () => {
    await server.close()
    server.assertDone()
  })

  it('refreshes in place before sending once expired (expiresLatency counted), then persists through onRefresh', async () => {
    server.on('GET', '/r', onlyFor('at-0'), 2)
    server.on('POST', '/oauth/token', refreshed(1))
    server.on('GET', '/r', onlyFor('at-1'))
    const t = token({ expiresLatency: 30 })
    await t.fetch('/r')
    expect(saved).toEqual([])
    clock.advance(569_000)
    await t.fetch('/r')
    expect(saved).toEqual([])
    clock.advance(1_000) // 570 s: 600 - 30 of latency
    const response = await t.fetch('/r')
    expect(response.parsed).toEqual({ ok: true })
    expect(server.requests[2]!.form).toMatchObject({
      grant_type: 'refresh_token',
      refresh_token: 'rt-0',
    })
    expect(t.token).toBe('at-1')
    expect(t.refreshToken).toBe('rt-1')
    expect(t.expiresAt).toBe(NOW / 1000 + 570 + 600 - 30)
    expect(t.response?.parsed).toMatchObject({ access_token: 'at-1' })
    expect(saved).toEqual([
      expect.objectContaining({ access_token: 'at-1', refresh_token: 'rt-1' }),
    ])
  })

  it('refreshes once on a 401 with WWW-Authenticate error="invalid_token" and resends, body included', async () => {
    server.on(
      'POST',
      '/items',
      (request) => {
        expect(request.form).toEqual({ name: 'n' })
        return onlyFor('at-1')(request)
      },
      2,
    )
    server.on('POST', '/oauth/token', refreshed(1))
    const t = token()
    const response = await t.fetch('/items', { method: 'POST', body: { name: 'n' } })
    expect(response.status).toBe(200)
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /items',
      'POST /oauth/token',
      'POST /items',
    ])
    expect(saved).toHaveLength(1)
  })

  it('coalesces 100 requests with an expired token into one refresh', async () => {
    server.on('POST', '/oauth/token', refreshed(1))
    server.on('GET', '/r', onlyFor('at-1'), 100)
    const t = token()
    clock.advance(600_000)
    const responses = await Promise.all(Array.from({ length: 100 }, () => t.fetch('/r')))
    expect(responses.every((r) => r.status === 200)).toBe(true)
    expect(server.requests.filter((r) => r.path === '/oauth/token')).toHaveLength(1)
    expect(saved).toHaveLength(1)
  })

  it('coalesces 100 requests refused with invalid_token into one refresh, and resends each once', async () => {
    let stale = 0
    let allStale: () => void = () => undefined
    const arrived = new Promise<void>((resolve) => (allStale = resolve))
    server.on(
      'GET',
      '/r',
      (request) => {
        if (request.headers.authorization === 'Bearer at-0' && ++stale === 100) allStale()
        return onlyFor('at-1')(request)
      },
      200,
    )
    // The refresh answers only once every stale request has reached the server.
    server.on('POST', '/oauth/token', async () => {
      await arrived
      return refreshed(1)
    })
    const t = token()
    const responses = await Promise.all(Array.from({ length: 100 }, () => t.fetch('/r')))
    expect(responses.every((r) => r.status === 200)).toBe(true)
    expect(stale).toBe(100)
    expect(server.requests.filter((r) => r.path === '/oauth/token')).toHaveLength(1)
    expect(saved).toHaveLength(1)
  })

  it('does not refresh for another 401, without a refresh token, or without autoRefresh', async () => {
    server.on('GET', '/scope', {
      status: 401,
      headers: { 'WWW-Authenticate': 'Bearer error="insufficient_scope"' },
    })
    server.on('GET', '/plain', { status: 401 })
    server.on('GET', '/r', invalidToken, 2)
    const t = token()
    await expect(t.fetch('/scope')).rejects.toMatchObject({ response: { status: 401 } })
    expect((await t.fetch('/plain', { raiseErrors: false })).status).toBe(401)
    await expect(t.get('/r')).rejects.toBeInstanceOf(OAuth2Error)
    const bare = new AccessToken(client, 'at-0', { expires_in: 1 })
    clock.advance(5_000)
    expect(bare.expired()).toBe(true)
    await expect(bare.fetch('/r')).rejects.toMatchObject({ code: 'invalid_token' })
    expect(server.requests.some((r) => r.path === '/oauth/token')).toBe(false)
  })

  it('is an option of the request helpers: get(url, { autoRefresh: true })', async () => {
    server.on('GET', '/r', onlyFor('at-1'), 2)
    server.on('POST', '/oauth/token', refreshed(1))
    const t = token()
    expect((await t.get('/r', { autoRefresh: true })).status).toBe(200)
    await expect(t.get('/r', { autoRefresh: 'yes' as never })).rejects.toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"opts.autoRefresh" must be a boolean'),
    )
  })

  it('refreshes only once per request: a 401 after the refresh is the answer', async () => {
    server.on('GET', '/r', invalidToken, 2)
    server.on('POST', '/oauth/token', refreshed(1))
    const t = token()
    await expect(t.fetch('/r')).rejects.toMatchObject({ code: 'invalid_token' })
    expect(t.token).toBe('at-1')
  })

  it('rejects every waiting request when the refresh fails, keeps the token, and tries again later', async () => {
    server.on('POST', '/oauth/token', {
      status: 400,
      body: { error: 'invalid_grant', error_description: 'refresh token revoked' },
    })
    const t = token()
    clock.advance(600_000)
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => t.fetch('/r')))
    expect(results.every((r) => r.status === 'rejected')).toBe(true)
    expect((results[0] as PromiseRejectedResult).reason).toMatchObject({ code: 'invalid_grant' })
    expect(t.token).toBe('at-0')
    expect(saved).toEqual([])
    server.on('POST', '/oauth/token', refreshed(1))
    server.on('GET', '/r', onlyFor('at-1'))
    expect((await t.fetch('/r')).status).toBe(200)
  })

  it('keeps the token when the refresh fails on a client with raiseErrors false', async () => {
    const lenient = new Client('id', 'secret', { site: server.url, clock, raiseErrors: false })
    server.on('POST', '/oauth/token', { status: 400, body: { error: 'invalid_grant' } })
    const t = new AccessToken(lenient, 'at-0', { refresh_token: 'rt-0', expires_in: 1 })
    clock.advance(1_000)
    await expect(t.fetch('/r')).rejects.toMatchObject({ code: 'invalid_grant' })
    expect(t.token).toBe('at-0')
    expect(t.refreshToken).toBe('rt-0')
  })

  it('rejects the waiting requests with what onRefresh throws, and keeps the new credentials', async () => {
    server.on('POST', '/oauth/token', refreshed(1))
    server.on('GET', '/r', onlyFor('at-1'))
    const t = token({
      onRefresh: () => {
        throw new Error('database down')
      },
    })
    clock.advance(600_000)
    await expect(t.fetch('/r')).rejects.toThrow('database down')
    expect(t.token).toBe('at-1')
    expect((await t.fetch('/r')).status).toBe(200)
  })

  it('refreshes a DPoP-bound token with a proof and resends with the new ath', async () => {
    const dpopClient = new Client('id', 'secret', { site: server.url, clock, dpop: true })
    server.on('GET', '/r', {
      status: 401,
      headers: { 'WWW-Authenticate': 'DPoP algs="ES256", error="invalid_token"' },
    })
    server.on('POST', '/oauth/token', {
      body: { access_token: 'at-1', token_type: 'DPoP', refresh_token: 'rt-1' },
    })
    server.on('GET', '/r', ok)
    const t = new AccessToken(dpopClient, 'at-0', { token_type: 'DPoP', refresh_token: 'rt-0' })
    await t.fetch('/r')
    const [, refresh, retry] = server.requests
    expect(typeof refresh!.headers.dpop).toBe('string')
    expect(retry!.headers.authorization).toBe('DPoP at-1')
    const { payload } = await jwtVerify(String(retry!.headers.dpop), EmbeddedJWK)
    expect(payload.ath).toBe(createHash('sha256').update('at-1').digest('base64url'))
  })

  it('refuses bad arguments', async () => {
    const t = token()
    await expect(t.fetch('/r', 'GET' as never)).rejects.toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"init" must be an object'),
    )
    await expect(t.fetch('/r', { method: 'TRACE' as never })).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"verb" must be one of'),
    )
    expect(() => token({ onRefresh: 'save' as never })).toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"opts.onRefresh" must be a function'),
    )
  })
})
