import { FakeClock } from '@gatehouse/testing'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { FakeServer } from '../test/support/fake-server.js'
import { AccessToken } from './access-token.js'
import { Client } from './client.js'
import { OAuth2Error } from './error.js'

const NOW = Date.UTC(2030, 0, 1)
const nowS = NOW / 1000

describe('OpenID Connect', () => {
  let server: FakeServer
  let issuer: string
  let key: { privateKey: CryptoKey; publicKey: CryptoKey }
  let clock: FakeClock

  const metadata = () => ({
    issuer,
    authorization_endpoint: `${issuer}/auth`,
    token_endpoint: `${issuer}/token`,
    revocation_endpoint: `${issuer}/token/revocation`,
    introspection_endpoint: `${issuer}/token/introspection`,
    userinfo_endpoint: `${issuer}/me`,
    jwks_uri: `${issuer}/jwks`,
  })

  const sign = (
    claims: JWTPayload,
    kid = 'k1',
    signingKey: CryptoKey | Uint8Array = key.privateKey,
    alg = 'RS256',
  ) =>
    new SignJWT({
      iss: issuer,
      aud: 'client-1',
      sub: 'alice',
      iat: nowS,
      exp: nowS + 300,
      ...claims,
    })
      .setProtectedHeader({ alg, kid })
      .sign(signingKey)

  const jwks = async (kid = 'k1') => ({
    keys: [{ ...(await exportJWK(key.publicKey)), kid, alg: 'RS256', use: 'sig' }],
  })

  const discovered = async () => {
    server.on('GET', '/.well-known/openid-configuration', { body: metadata() })
    return Client.discover(issuer, 'client-1', 'client-secret-client-secret-1234', { clock })
  }

  beforeEach(async () => {
    server = await FakeServer.start()
    issuer = server.url
    key = await generateKeyPair('RS256', { extractable: true })
    clock = new FakeClock(NOW)
  })

  afterEach(async () => {
    await server.close()
    server.assertDone()
  })

  it('discovers endpoints from /.well-known/openid-configuration', async () => {
    const client = await discovered()
    expect(client.options.metadata?.issuer).toBe(issuer)
    expect(client.tokenUrl()).toBe(`${issuer}/token`)
    expect(client.revokeUrl()).toBe(`${issuer}/token/revocation`)
    expect(client.options.userinfoUrl).toBe(`${issuer}/me`)
    expect(client.authCode.authorizeUrl({ scope: 'openid', nonce: 'n' })).toBe(
      `${issuer}/auth?client_id=client-1&nonce=n&response_type=code&scope=openid`,
    )
  })

  it('falls back to RFC 8414 metadata, with the issuer path after the well-known segment', async () => {
    issuer = `${server.url}/tenant`
    server.on('GET', '/tenant/.well-known/openid-configuration', { status: 404, body: 'no' })
    server.on('GET', '/.well-known/oauth-authorization-server/tenant', {
      body: { issuer, token_endpoint: `${issuer}/t` },
    })
    const client = await Client.discover(issuer, 'c', undefined)
    expect(client.tokenUrl()).toBe(`${issuer}/t`)
  })

  it('refuses metadata for another issuer, non-JSON metadata, and no metadata at all', async () => {
    server.on('GET', '/.well-known/openid-configuration', {
      body: { issuer: 'https://evil.example' },
    })
    await expect(Client.discover(issuer, 'c')).rejects.toMatchObject({ code: 'invalid_metadata' })
    server.on('GET', '/.well-known/openid-configuration', {
      body: '[1]',
      headers: { 'content-type': 'application/json' },
    })
    await expect(Client.discover(issuer, 'c')).rejects.toMatchObject({ code: 'invalid_metadata' })
    server.on('GET', '/.well-known/openid-configuration', { status: 404 })
    server.on('GET', '/.well-known/oauth-authorization-server', { status: 404 })
    await expect(Client.discover(issuer, 'c')).rejects.toThrow(/no discovery document/)
    await expect(Client.discover('nope', 'c')).rejects.toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }),
    )
  })

  it('verifies an ID token and caches the JWKS', async () => {
    const client = await discovered()
    server.on('GET', '/jwks', { body: await jwks() })
    const claims = await client.verifyIdToken(await sign({ nonce: 'n1' }), { nonce: 'n1' })
    expect(claims).toMatchObject({ sub: 'alice', iss: issuer, aud: 'client-1' })
    await client.verifyIdToken(await sign({}))
    expect(server.requests.filter((r) => r.path === '/jwks')).toHaveLength(1)
  })

  it('refetches the JWKS for an unknown kid (key rotation), after a cooldown', async () => {
    const client = await discovered()
    server.on('GET', '/jwks', { body: await jwks('old') })
    await expect(client.verifyIdToken(await sign({}, 'new'))).rejects.toMatchObject({
      code: 'invalid_id_token',
    })
    clock.advance(31_000)
    server.on('GET', '/jwks', { body: await jwks('new') })
    await expect(
      client.verifyIdToken(await sign({ exp: nowS + 600 }, 'new')),
    ).resolves.toMatchObject({ sub: 'alice' })
  })

  it.each<[string, JWTPayload, object]>([
    ['a wrong issuer', { iss: 'https://evil.example' }, {}],
    ['a wrong audience', { aud: 'other' }, {}],
    ['several audiences without azp', { aud: ['client-1', 'other'] }, {}],
    ['an azp of another client', { azp: 'other' }, {}],
    ['an expired token', { exp: nowS - 1 }, {}],
    ['a missing iat', { iat: undefined }, {}],
    ['a nonce mismatch', { nonce: 'a' }, { nonce: 'b' }],
    ['a missing nonce', {}, { nonce: 'b' }],
    ['an old auth_time', { auth_time: nowS - 3601 }, { maxAge: 3600 }],
    ['a missing auth_time with maxAge', {}, { maxAge: 3600 }],
  ])('rejects %s', async (_name, claims, options) => {
    const client = await discovered()
    server.on('GET', '/jwks', { body: await jwks() })
    const error = await client.verifyIdToken(await sign(claims), options).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OAuth2Error)
    expect(error).toMatchObject({ code: 'invalid_id_token' })
  })

  it('accepts several audiences with azp, a fresh auth_time, and HS256 tokens signed with the client secret', async () => {
    const client = await discovered()
    server.on('GET', '/jwks', { body: await jwks() })
    await expect(
      client.verifyIdToken(
        await sign({ aud: ['client-1', 'x'], azp: 'client-1', auth_time: nowS - 10 }),
        { maxAge: 60 },
      ),
    ).resolves.toMatchObject({ azp: 'client-1' })
    const secret = new TextEncoder().encode('client-secret-client-secret-1234')
    await expect(client.verifyIdToken(await sign({}, 'x', secret, 'HS256'))).resolves.toMatchObject(
      { sub: 'alice' },
    )
  })

  it('verifies the id_token of a token response through token.idToken()', async () => {
    const client = await discovered()
    server.on('GET', '/jwks', { body: await jwks() })
    const token = new AccessToken(client, 'at', { id_token: await sign({ nonce: 'n' }) })
    await expect(token.idToken({ nonce: 'n' })).resolves.toMatchObject({ sub: 'alice' })
    await expect(new AccessToken(client, 'at').idToken()).rejects.toMatchObject({
      code: 'invalid_id_token',
    })
  })

  it('needs metadata to verify', async () => {
    await expect(new Client('c', 's').verifyIdToken('x.y.z')).rejects.toMatchObject({
      code: 'invalid_metadata',
    })
  })

  it('fetches UserInfo with an AccessToken or a token string, checking the subject', async () => {
    const client = await discovered()
    server.on('GET', '/me', { body: { sub: 'alice', email: 'a@example.com' } }, 3)
    const claims = await client.userinfo(new AccessToken(client, 'at'), {
      expectedSubject: 'alice',
    })
    expect(claims).toMatchObject({ sub: 'alice', email: 'a@example.com' })
    expect(server.last().headers.authorization).toBe('Bearer at')
    await client.userinfo('raw')
    expect(server.last().headers.authorization).toBe('Bearer raw')
    await expect(client.userinfo('raw', { expectedSubject: 'bob' })).rejects.toMatchObject({
      code: 'invalid_userinfo',
    })
  })
})
