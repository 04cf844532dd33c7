import { inspect } from 'node:util'
import { FakeClock } from '@gatehouse/testing'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { argError } from '../test/support/expect.js'
import { FakeServer } from '../test/support/fake-server.js'
import { AccessToken } from './access-token.js'
import { Client } from './client.js'
import { configure } from './config.js'
import { OAuth2Error } from './error.js'
import { SnakyHash } from './snaky-hash.js'

const NOW = Date.UTC(2030, 0, 1)

function setup(options: ConstructorParameters<typeof Client>[2] = {}) {
  const clock = new FakeClock(NOW)
  const warnings: string[] = []
  const client = new Client('id', 'secret', {
    site: 'https://api.example',
    clock,
    logger: { debug: () => undefined, warn: (m) => warnings.push(m) },
    ...options,
  })
  return { clock, client, warnings }
}

describe('AccessToken expiry', () => {
  it('computes expiresAt from expires_in with the client clock; expiring exactly now is expired', () => {
    const { client, clock } = setup()
    const token = new AccessToken(client, 't', { expires_in: 60 })
    expect(token.expiresIn).toBe(60)
    expect(token.expiresAt).toBe(clock.nowSeconds() + 60)
    expect(token.expires()).toBe(true)
    clock.advance(59_999)
    expect(token.expired()).toBe(false)
    clock.advance(1)
    expect(token.expired()).toBe(true)
  })

  it('accepts numeric strings, the legacy "expires" key, epoch and ISO-8601 expires_at', () => {
    const { client, clock } = setup()
    expect(new AccessToken(client, 't', { expires_in: '120' }).expiresAt).toBe(
      clock.nowSeconds() + 120,
    )
    expect(new AccessToken(client, 't', { expires: '30' }).expiresIn).toBe(30)
    expect(new AccessToken(client, 't', { expires_at: 1_900_000_000 }).expiresAt).toBe(
      1_900_000_000,
    )
    expect(new AccessToken(client, 't', { expires_at: '1900000000' }).expiresAt).toBe(1_900_000_000)
    expect(new AccessToken(client, 't', { expires_at: '2030-01-01T00:10:00Z' }).expiresAt).toBe(
      clock.nowSeconds() + 600,
    )
    // expires_at wins over expires_in.
    expect(
      new AccessToken(client, 't', { expires_in: 5, expires_at: 1_900_000_000 }).expiresAt,
    ).toBe(1_900_000_000)
  })

  it('subtracts expiresLatency', () => {
    const { client, clock } = setup()
    const token = new AccessToken(client, 't', { expires_in: 60, expiresLatency: 10 })
    expect(token.expiresAt).toBe(clock.nowSeconds() + 50)
    clock.advance(50_000)
    expect(token.expired()).toBe(true)
  })

  it('never expires without expiry or with expires_in 0', () => {
    const { client, clock } = setup()
    for (const token of [
      new AccessToken(client, 't'),
      new AccessToken(client, 't', { expires_in: 0 }),
    ]) {
      clock.advance(10 ** 12)
      expect(token.expires()).toBe(false)
      expect(token.expired()).toBe(false)
    }
  })
})

describe('AccessToken construction', () => {
  it('puts extra fields in params', () => {
    const { client } = setup()
    const token = new AccessToken(client, 't', {
      refresh_token: 'r',
      scope: 'a',
      token_type: 'Bearer',
    })
    expect(token.params).toEqual({ scope: 'a', token_type: 'Bearer' })
    expect(token.refreshToken).toBe('r')
  })

  it('throws no_token when there is neither token nor refresh token, or warns when raiseErrors is off', () => {
    const { client } = setup()
    expect(() => new AccessToken(client, '', {})).toThrow(OAuth2Error)
    expect(() => new AccessToken(client, null)).toThrow(
      expect.objectContaining({ code: 'no_token' }),
    )
    expect(new AccessToken(client, '', { refresh_token: 'r' }).token).toBe('')
    const lenient = setup({ raiseErrors: false })
    const previous = configure({ silenceNoTokensWarning: false })
    try {
      const quiet = setup({ raiseErrors: false })
      expect(new AccessToken(quiet.client, '').token).toBe('')
      expect(quiet.warnings).toEqual(['AccessToken has no token and no refresh token'])
    } finally {
      configure(previous)
    }
    new AccessToken(lenient.client, '')
    expect(lenient.warnings).toEqual([])
  })

  it('rejects bad arguments', () => {
    const { client } = setup()
    expect(() => new AccessToken({} as never, 't')).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }),
    )
    expect(() => new AccessToken(client, 5 as never)).toThrow(argError(undefined, '"token"'))
    expect(() => new AccessToken(client, 't', { mode: 'cookie' as never })).toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"opts.mode"'),
    )
    expect(() => new AccessToken(client, 't', { expiresLatency: 'x' as never })).toThrow(TypeError)
  })

  it('never shows token, refresh token or filtered params through inspect or JSON', () => {
    const { client } = setup()
    const token = new AccessToken(client, 'AT-SECRET', {
      refresh_token: 'RT-SECRET',
      id_token: 'ID-SECRET',
      scope: 'api',
    })
    for (const text of [inspect(token, { depth: 5 }), JSON.stringify(token), inspect({ token })]) {
      expect(text).toContain('api')
      expect(text).toContain('[FILTERED]')
      expect(text).not.toMatch(/AT-SECRET|RT-SECRET|ID-SECRET|secret/)
    }
  })
})

describe('AccessToken.fromHash / fromKvform / toHash', () => {
  it('picks access_token first, leaves the other token-like fields in params, warns when asked', () => {
    const previous = configure({ silenceExtraTokensWarning: false })
    try {
      const { client, warnings } = setup()
      const token = AccessToken.fromHash(client, {
        id_token: 'id',
        access_token: 'at',
        token: 'tk',
      })
      expect(token.token).toBe('at')
      expect(token.params).toEqual({ id_token: 'id', token: 'tk' })
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain('access_token, id_token, token')
    } finally {
      configure(previous)
    }
  })

  it.each([
    [{ id_token: 'x' }, 'x'],
    [{ token: 'x' }, 'x'],
    [{ accessToken: 'x' }, 'x'],
    [{ idToken: 'x', refresh_token: 'r' }, 'x'],
  ])('reads the token from %j', (hash, expected) => {
    expect(AccessToken.fromHash(setup().client, hash).token).toBe(expected)
  })

  it('uses tokenName, also in snake_case against SnakyHash responses', () => {
    const { client } = setup()
    const hash = new SnakyHash({ accessToken: 'a', customToken: 'c' })
    const token = AccessToken.fromHash(client, Object.assign(hash, { tokenName: 'customToken' }))
    expect(token.token).toBe('c')
    expect(token.tokenName).toBe('customToken')
    expect(token.params).toEqual({ access_token: 'a' })
  })

  it('round-trips through toHash/fromHash', () => {
    const { client } = setup()
    const token = new AccessToken(client, 'at', {
      refresh_token: 'rt',
      expires_in: 100,
      expiresLatency: 10,
      mode: { get: 'query', post: 'body' },
      headerFormat: 'Token %s',
      paramName: 'tok',
      tokenName: 'access_token',
      scope: 'a b',
    })
    const hash = token.toHash()
    expect(hash).toEqual({
      scope: 'a b',
      access_token: 'at',
      refresh_token: 'rt',
      expires_at: Math.floor(NOW / 1000) + 90,
      mode: { get: 'query', post: 'body' },
      headerFormat: 'Token %s',
      paramName: 'tok',
      tokenName: 'access_token',
    })
    const restored = AccessToken.fromHash(
      client,
      JSON.parse(JSON.stringify(hash)) as Record<string, unknown>,
    )
    expect(restored.toHash()).toEqual(hash)
    expect(restored.expiresAt).toBe(token.expiresAt)
  })

  it('reads implicit-grant fragments with fromKvform', () => {
    const { client, clock } = setup()
    const token = AccessToken.fromKvform(
      client,
      '#access_token=a%20b&expires_in=3600&state=xyz&token_type=bearer',
    )
    expect(token.token).toBe('a b')
    expect(token.expiresAt).toBe(clock.nowSeconds() + 3600)
    expect(token.params).toEqual({ state: 'xyz', token_type: 'bearer' })
  })

  it('reads repeated keys as arrays and keys named like Object members as plain fields', () => {
    const { client } = setup()
    const token = AccessToken.fromKvform(client, 'access_token=a&scope=x&scope=y&constructor=c')
    expect(token.params).toEqual({ scope: ['x', 'y'], constructor: 'c' })
  })
})

describe('AccessToken requests, refresh and revoke', () => {
  let server: FakeServer
  let client: Client
  let clock: FakeClock

  beforeEach(async () => {
    server = await FakeServer.start()
    ;({ client, clock } = setup({ site: server.url }))
  })

  afterEach(async () => {
    await server.close()
    server.assertDone()
  })

  it('sends the token as a Bearer header by default, replacing a caller Authorization', async () => {
    server.on('GET', '/me', { body: { name: 'ann' } })
    const token = new AccessToken(client, 'at')
    const response = await token.get('/me', { headers: { authorization: 'x' }, params: { a: '1' } })
    expect(response.parsed).toEqual(new SnakyHash({ name: 'ann' }))
    expect(server.last().headers.authorization).toBe('Bearer at')
    expect(server.last().url).toBe('/me?a=1')
    expect(token.headers()).toEqual({ Authorization: 'Bearer at' })
  })

  it('uses headerFormat', async () => {
    server.on('DELETE', '/x', { status: 204 })
    await new AccessToken(client, 'at', { headerFormat: 'OAuth %s' }).delete('/x')
    expect(server.last().headers.authorization).toBe('OAuth at')
  })

  it('sends the token in the query or the body', async () => {
    server.on('GET', '/q', { body: '' }).on('POST', '/b', { body: '' }, 3)
    await new AccessToken(client, 'at', { mode: 'query', paramName: 'tok' }).get('/q')
    expect(server.last().url).toBe('/q?tok=at')
    expect(server.last().headers.authorization).toBeUndefined()
    const body = new AccessToken(client, 'at', { mode: 'body' })
    await body.post('/b', { body: { x: '1' } })
    expect(server.last().body).toBe('access_token=at&x=1')
    await body.post('/b', { body: 'raw=1' })
    expect(server.last().body).toBe('raw=1&access_token=at')
    await body.post('/b')
    expect(server.last().body).toBe('access_token=at')
  })

  it('chooses the mode per verb with a function or a map (missing verbs use the header)', async () => {
    server.on('GET', '/v', { body: '' }, 2).on('PUT', '/v', { body: '' }, 2)
    const fn = new AccessToken(client, 'at', {
      mode: (verb) => (verb === 'get' ? 'query' : 'header'),
    })
    await fn.get('/v')
    expect(server.last().url).toBe('/v?access_token=at')
    await fn.put('/v')
    expect(server.last().headers.authorization).toBe('Bearer at')
    const map = new AccessToken(client, 'at', { mode: { get: 'query' } })
    await map.get('/v')
    expect(server.last().url).toBe('/v?access_token=at')
    await map.put('/v')
    expect(server.last().headers.authorization).toBe('Bearer at')
  })

  it('rejects a mode function returning an invalid mode at request time', async () => {
    const token = new AccessToken(client, 'at', { mode: () => 'cookie' as never })
    await expect(token.get('/v')).rejects.toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }),
    )
  })

  it('refreshes with grant_type=refresh_token, keeping options and the old refresh token when none comes back', async () => {
    server.on('POST', '/oauth/token', { body: { access_token: 'new', expires_in: 60 } })
    const old = new AccessToken(client, 'old', {
      refresh_token: 'rt',
      mode: 'query',
      expiresLatency: 5,
    })
    const fresh = await old.refresh({ scope: 'narrow' })
    expect(server.last().form).toEqual({
      grant_type: 'refresh_token',
      refresh_token: 'rt',
      scope: 'narrow',
    })
    expect(fresh.token).toBe('new')
    expect(fresh.refreshToken).toBe('rt')
    expect(fresh.mode).toBe('query')
    expect(fresh.expiresAt).toBe(clock.nowSeconds() + 55)
    expect(old.token).toBe('old')
  })

  it('refresh takes the new refresh token when the server rotates it', async () => {
    server.on('POST', '/oauth/token', { body: { access_token: 'new', refresh_token: 'rt2' } })
    const fresh = await new AccessToken(client, 'old', { refresh_token: 'rt' }).refresh()
    expect(fresh.refreshToken).toBe('rt2')
  })

  it('with raiseErrors false, refresh returns the error token (the gem) and throws only when there is no token to return', async () => {
    const lenient = setup({ site: server.url, raiseErrors: false }).client
    server.on('POST', '/oauth/token', { status: 400, body: { error: 'invalid_grant' } })
    const errored = await new AccessToken(lenient, 'old', { refresh_token: 'rt' }).refresh()
    expect(errored.token).toBe('')
    expect(errored.refreshToken).toBe('rt')
    expect(errored.response?.error?.code).toBe('invalid_grant')
    server.on('POST', '/oauth/token', {
      status: 502,
      body: '<h1>bad gateway</h1>',
      headers: { 'content-type': 'text/html' },
    })
    const error = await new AccessToken(lenient, 'old', { refresh_token: 'rt' })
      .refresh()
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OAuth2Error)
    expect(error).toMatchObject({
      code: 'invalid_token_response',
      response: { status: 502 },
      body: '<h1>bad gateway</h1>',
    })
  })

  it('refresh without a refresh token throws no_refresh_token', async () => {
    await expect(new AccessToken(client, 'at').refresh()).rejects.toMatchObject({
      code: 'no_refresh_token',
      description: 'A refresh_token is not available',
    })
  })

  it('revokes the access token by default, or the refresh token by hint', async () => {
    server.on('POST', '/oauth/revoke', { status: 200 }, 3)
    const token = new AccessToken(client, 'at', { refresh_token: 'rt' })
    await token.revoke()
    expect(server.last().form).toEqual({ token: 'at', token_type_hint: 'access_token' })
    await token.revoke({ token_type_hint: 'refresh_token' })
    expect(server.last().form).toEqual({ token: 'rt', token_type_hint: 'refresh_token' })
    await new AccessToken(client, '', { refresh_token: 'only' }).revoke()
    expect(server.last().form).toEqual({ token: 'only', token_type_hint: 'refresh_token' })
  })

  it('refuses to revoke a missing token or with a bad hint', async () => {
    const token = new AccessToken(client, 'at')
    await expect(token.revoke({ token_type_hint: 'refresh_token' })).rejects.toMatchObject({
      code: 'unrevocable_token',
      description: 'refresh_token is not available for revoking',
    })
    await expect(token.revoke({ token_type_hint: 'id_token' })).rejects.toMatchObject({
      code: 'unrevocable_token',
    })
  })
})
