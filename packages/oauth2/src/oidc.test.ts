import { FakeClock } from '@gatehouse/testing'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { FakeServer } from '../test/support/fake-server.js'
import { AccessToken } from './access-token.js'
import { Client } from './client.js'
import { OAuth2Error } from './error.js'
import { pkceChallenge } from './pkce.js'
import { argError } from '../test/support/expect.js'

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

  const secretText = 'client-secret-client-secret-1234'
  const secret = new TextEncoder().encode(secretText)

  const discovered = async (extra: Record<string, unknown> = {}) => {
    server.on('GET', '/.well-known/openid-configuration', { body: { ...metadata(), ...extra } })
    return Client.discover(issuer, 'client-1', secretText, { clock })
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

  it('wires the RFC 8414 fields of PAR, device authorization and DPoP from the metadata', async () => {
    server.on('GET', '/.well-known/openid-configuration', {
      body: {
        ...metadata(),
        pushed_authorization_request_endpoint: `${issuer}/par`,
        require_pushed_authorization_requests: true,
        device_authorization_endpoint: `${issuer}/device/auth`,
        dpop_signing_alg_values_supported: ['PS256', 'EdDSA'],
        grant_types_supported: ['urn:ietf:params:oauth:grant-type:token-exchange'],
      },
    })
    const client = await Client.discover(issuer, 'client-1', secretText, { clock, dpop: true })
    expect(client.options).toMatchObject({
      pushedAuthorizationRequestUrl: `${issuer}/par`,
      deviceAuthorizationUrl: `${issuer}/device/auth`,
      requirePar: true,
      dpop: { algorithm: 'PS256' },
    })
    expect(() => client.authCode.authorizeUrl()).toThrow(
      expect.objectContaining({ code: 'par_required' }),
    )
    server.on('POST', '/par', { status: 201, body: { request_uri: 'urn:r', expires_in: 60 } })
    await expect(client.authCode.pushAuthorizationRequest()).resolves.toBe(
      `${issuer}/auth?client_id=client-1&request_uri=urn%3Ar`,
    )
    server.on('POST', '/device/auth', {
      body: {
        device_code: 'd',
        user_code: 'u',
        verification_uri: `${issuer}/device`,
        expires_in: 60,
      },
    })
    await expect(client.deviceCode.start()).resolves.toMatchObject({ user_code: 'u' })
  })

  it('refuses metadata whose PAR or DPoP fields have the wrong type, and a DPoP key the server does not accept', async () => {
    for (const extra of [
      { dpop_signing_alg_values_supported: 'ES256' },
      { require_pushed_authorization_requests: 'yes' },
      { device_authorization_endpoint: 'not a url' },
    ]) {
      server.on('GET', '/.well-known/openid-configuration', { body: { ...metadata(), ...extra } })
      await expect(Client.discover(issuer, 'client-1')).rejects.toMatchObject({
        code: 'invalid_metadata',
        description: expect.stringContaining(Object.keys(extra)[0]!) as unknown,
      })
    }
    server.on('GET', '/.well-known/openid-configuration', {
      body: { ...metadata(), dpop_signing_alg_values_supported: ['EdDSA'] },
    })
    await expect(
      Client.discover(issuer, 'client-1', secretText, { dpop: { algorithm: 'ES256' } }),
    ).rejects.toThrow(
      expect.objectContaining({
        code: 'ERR_INVALID_ARG_VALUE',
        message: expect.stringContaining('"options.dpop.algorithm" is ES256') as unknown,
      }),
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

  it('reads the metadata at discoveryUrl only, when given, and still requires its issuer', async () => {
    server.on('GET', '/config/discovery.json', { body: metadata() })
    const client = await Client.discover(issuer, 'c', undefined, {
      discoveryUrl: `${server.url}/config/discovery.json`,
    })
    expect(client.tokenUrl()).toBe(`${issuer}/token`)
    expect(client.options.metadata?.jwks_uri).toBe(`${issuer}/jwks`)
    // Not found there: the well-known location is not read instead (the fake server fails on
    // any request it does not expect).
    server.on('GET', '/missing.json', { status: 404 })
    await expect(
      Client.discover(issuer, 'c', undefined, { discoveryUrl: `${server.url}/missing.json` }),
    ).rejects.toThrow(/no discovery document/)
    server.on('GET', '/config/other.json', {
      body: { ...metadata(), issuer: 'https://evil.example' },
    })
    await expect(
      Client.discover(issuer, 'c', undefined, { discoveryUrl: `${server.url}/config/other.json` }),
    ).rejects.toMatchObject({ code: 'invalid_metadata' })
    await expect(
      Client.discover(issuer, 'c', undefined, { discoveryUrl: 'http://idp.example/d.json' }),
    ).rejects.toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
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

  /** @see issue 24, item 11 */
  it('refuses discovered endpoints that are not https (loopback excepted), naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ token_endpoint: 'http://169.254.169.254/token' }, 'token_endpoint'],
      [{ authorization_endpoint: 'http://auth.example/auth' }, 'authorization_endpoint'],
      [{ revocation_endpoint: 'http://10.0.0.1/revoke' }, 'revocation_endpoint'],
      [{ introspection_endpoint: 'http://auth.example/i' }, 'introspection_endpoint'],
      [{ userinfo_endpoint: 'http://auth.example/me' }, 'userinfo_endpoint'],
      [{ jwks_uri: 'http://auth.example/jwks' }, 'jwks_uri'],
      [{ pushed_authorization_request_endpoint: 'http://a.example/par' }, 'pushed_authorization'],
      [{ device_authorization_endpoint: 'http://a.example/device' }, 'device_authorization'],
      [{ end_session_endpoint: 'http://a.example/logout' }, 'end_session_endpoint'],
      [{ registration_endpoint: 'ftp://a.example/register' }, 'registration_endpoint'],
      [
        { mtls_endpoint_aliases: { token_endpoint: 'http://mtls.example/token' } },
        'mtls_endpoint_aliases.token_endpoint',
      ],
      [{ token_endpoint: 'http://localhost.evil.example/token' }, 'token_endpoint'],
      [{ token_endpoint: 'http://[::ffff:7f00:1]/token' }, 'token_endpoint'],
    ]
    for (const [extra, field] of cases) {
      server.on('GET', '/.well-known/openid-configuration', { body: { ...metadata(), ...extra } })
      const error = await Client.discover(issuer, 'client-1', secretText).catch((e: unknown) => e)
      expect(error, field).toBeInstanceOf(OAuth2Error)
      expect(error, field).toMatchObject({
        code: 'invalid_metadata',
        description: expect.stringContaining(field) as unknown,
      })
      expect((error as OAuth2Error).description, field).toContain(
        'discovered endpoints must be https (http only on a loopback host',
      )
    }
    server.on('GET', '/.well-known/openid-configuration', {
      body: { ...metadata(), mtls_endpoint_aliases: 'https://mtls.example' },
    })
    await expect(Client.discover(issuer, 'client-1')).rejects.toMatchObject({
      code: 'invalid_metadata',
      description: expect.stringContaining('mtls_endpoint_aliases of') as unknown,
    })
    // https anywhere, and http on loopback hosts, are accepted.
    server.on('GET', '/.well-known/openid-configuration', {
      body: {
        ...metadata(),
        token_endpoint: 'https://auth.example/token',
        userinfo_endpoint: 'http://localhost:1/me',
        revocation_endpoint: 'http://127.0.0.2:1/revoke',
        introspection_endpoint: 'http://[::1]:1/introspect',
        mtls_endpoint_aliases: { token_endpoint: 'https://mtls.auth.example/token' },
      },
    })
    const client = await Client.discover(issuer, 'client-1', secretText)
    expect(client.tokenUrl()).toBe('https://auth.example/token')
    // Only the discovery documents were requested.
    expect(server.requests.every((r) => r.path === '/.well-known/openid-configuration')).toBe(true)
  })

  /** @see issue 24, item 11 */
  it('fetches discovery documents only from the URLs the issuer gives: no redirect is followed', async () => {
    server.on('GET', '/.well-known/openid-configuration', {
      status: 302,
      headers: { location: `${issuer}/moved` },
    })
    server.on('GET', '/.well-known/oauth-authorization-server', {
      status: 301,
      headers: { location: `${issuer}/moved` },
    })
    const error = await Client.discover(issuer, 'client-1').catch((e: unknown) => e)
    expect(error).toMatchObject({
      code: 'invalid_metadata',
      description: expect.stringContaining('redirect') as unknown,
    })
    expect(server.requests.map((r) => r.path)).toEqual([
      '/.well-known/openid-configuration',
      '/.well-known/oauth-authorization-server',
    ])
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

  it('accepts several audiences with azp, a fresh auth_time, and HS256 tokens signed with the client secret when the provider advertises HS256', async () => {
    const client = await discovered({ id_token_signing_alg_values_supported: ['RS256', 'HS256'] })
    server.on('GET', '/jwks', { body: await jwks() })
    await expect(
      client.verifyIdToken(
        await sign({ aud: ['client-1', 'x'], azp: 'client-1', auth_time: nowS - 10 }),
        { maxAge: 60 },
      ),
    ).resolves.toMatchObject({ azp: 'client-1' })
    await expect(client.verifyIdToken(await sign({}, 'x', secret, 'HS256'))).resolves.toMatchObject(
      { sub: 'alice' },
    )
  })

  it('refuses an ID token issued in the future, beyond the clock tolerance', async () => {
    const client = await discovered()
    server.on('GET', '/jwks', { body: await jwks() })
    await expect(
      client.verifyIdToken(await sign({ iat: nowS + 120, exp: nowS + 600 }), {
        clockTolerance: 60,
      }),
    ).rejects.toMatchObject({ code: 'invalid_id_token', description: 'iat is in the future' })
    await expect(
      client.verifyIdToken(await sign({ iat: nowS + 30 }), { clockTolerance: 60 }),
    ).resolves.toMatchObject({ sub: 'alice' })
  })

  it('pins alg to the advertised algorithms (RS256 when none are advertised)', async () => {
    const rs256Only = await discovered()
    const hs = await rs256Only
      .verifyIdToken(await sign({}, 'x', secret, 'HS256'))
      .catch((e: unknown) => e)
    expect(hs).toBeInstanceOf(OAuth2Error)
    expect(hs).toMatchObject({ code: 'invalid_id_token' })
    expect((hs as OAuth2Error).description).toContain('HS256')
    const es256Only = await discovered({ id_token_signing_alg_values_supported: ['ES256'] })
    await expect(es256Only.verifyIdToken(await sign({}))).rejects.toMatchObject({
      code: 'invalid_id_token',
    })
    server.on('GET', '/.well-known/openid-configuration', {
      body: { ...metadata(), id_token_signing_alg_values_supported: 'RS256' },
    })
    const malformed = await Client.discover(issuer, 'client-1', 's', { clock })
    await expect(malformed.verifyIdToken(await sign({}))).rejects.toMatchObject({
      code: 'invalid_metadata',
    })
  })

  it('refuses an ID token with a nonce when no nonce is expected (the authorization request carried one)', async () => {
    const client = await discovered()
    server.on('GET', '/jwks', { body: await jwks() })
    const error = await client.verifyIdToken(await sign({ nonce: 'n1' })).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'invalid_id_token' })
    expect((error as OAuth2Error).description).toContain('nonce')
    await expect(
      client.verifyIdToken(await sign({ nonce: 'n1' }), { nonce: 'n1' }),
    ).resolves.toMatchObject({ nonce: 'n1' })
  })

  it('accepts tokens of any of `audiences`, whoever the azp, and refuses the others', async () => {
    const client = await discovered()
    server.on('GET', '/jwks', { body: await jwks() })
    const audiences = ['web-app', 'ios-app']
    // Google's Android SDK: aud is the web client, azp the Android app.
    await expect(
      client.verifyIdToken(await sign({ aud: 'web-app', azp: 'android-app' }), { audiences }),
    ).resolves.toMatchObject({ aud: 'web-app' })
    await expect(
      client.verifyIdToken(await sign({ aud: ['other', 'ios-app'] }), { audiences }),
    ).resolves.toMatchObject({ sub: 'alice' })
    for (const aud of ['client-1', 'other', ['a', 'b']]) {
      await expect(client.verifyIdToken(await sign({ aud }), { audiences })).rejects.toMatchObject({
        code: 'invalid_id_token',
      })
    }
    for (const bad of [[], [''], 'web-app', [5]]) {
      await expect(
        client.verifyIdToken(await sign({}), { audiences: bad as never }),
      ).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
    }
  })

  it("checks at_hash only against a given access token with accessTokenHash: 'when-given'", async () => {
    const client = await discovered()
    server.on('GET', '/jwks', { body: await jwks() })
    const digest = new Uint8Array(
      await crypto.subtle.digest('SHA-256', new TextEncoder().encode('AT-1')),
    )
    const atHash = Buffer.from(digest.subarray(0, 16)).toString('base64url')
    const token = await sign({ at_hash: atHash })
    const whenGiven = { accessTokenHash: 'when-given' } as const
    await expect(client.verifyIdToken(token, whenGiven)).resolves.toMatchObject({ sub: 'alice' })
    await expect(
      client.verifyIdToken(token, { ...whenGiven, accessToken: 'AT-1' }),
    ).resolves.toMatchObject({ sub: 'alice' })
    await expect(
      client.verifyIdToken(token, { ...whenGiven, accessToken: 'AT-2' }),
    ).rejects.toMatchObject({ code: 'invalid_id_token' })
    await expect(client.verifyIdToken(token)).rejects.toMatchObject({ code: 'invalid_id_token' })
  })

  it('checks at_hash and c_hash (left half of the alg hash, base64url) when present', async () => {
    const client = await discovered({ id_token_signing_alg_values_supported: ['RS256', 'HS512'] })
    server.on('GET', '/jwks', { body: await jwks() })
    const half = async (hash: string, value: string) => {
      const digest = new Uint8Array(
        await crypto.subtle.digest(hash, new TextEncoder().encode(value)),
      )
      return Buffer.from(digest.subarray(0, digest.length / 2)).toString('base64url')
    }
    const atHash = await half('SHA-256', 'AT-1')
    const cHash = await half('SHA-256', 'CODE-1')
    const good = await sign({ at_hash: atHash, c_hash: cHash })
    await expect(
      client.verifyIdToken(good, { accessToken: 'AT-1', code: 'CODE-1' }),
    ).resolves.toMatchObject({ at_hash: atHash })
    for (const options of [
      { accessToken: 'AT-2', code: 'CODE-1' },
      { accessToken: 'AT-1', code: 'CODE-2' },
      { code: 'CODE-1' },
      { accessToken: 'AT-1' },
    ]) {
      await expect(client.verifyIdToken(good, options)).rejects.toMatchObject({
        code: 'invalid_id_token',
      })
    }
    await expect(
      client.verifyIdToken(await sign({ at_hash: 5 }), { accessToken: 'AT-1' }),
    ).rejects.toMatchObject({ code: 'invalid_id_token' })
    const hs512 = await sign({ at_hash: await half('SHA-512', 'AT-1') }, 'x', secret, 'HS512')
    await expect(client.verifyIdToken(hs512, { accessToken: 'AT-1' })).resolves.toMatchObject({
      sub: 'alice',
    })
    await expect(
      client.verifyIdToken(
        await sign({ at_hash: await half('SHA-256', 'AT-1') }, 'x', secret, 'HS512'),
        { accessToken: 'AT-1' },
      ),
    ).rejects.toMatchObject({ code: 'invalid_id_token' })
    // token.idToken() checks at_hash against its own access token.
    const token = new AccessToken(client, 'AT-1', { id_token: await sign({ at_hash: atHash }) })
    await expect(token.idToken()).resolves.toMatchObject({ sub: 'alice' })
    const swapped = new AccessToken(client, 'OTHER', { id_token: await sign({ at_hash: atHash }) })
    await expect(swapped.idToken()).rejects.toMatchObject({ code: 'invalid_id_token' })
  })

  it('requires an https issuer (and jwks_uri) except on loopback hosts', async () => {
    await expect(Client.discover('http://auth.example', 'c')).rejects.toThrow(
      expect.objectContaining({
        code: 'ERR_INVALID_ARG_VALUE',
        message: expect.stringContaining('https') as unknown,
      }),
    )
    const remote = new Client('client-1', secretText, {
      metadata: { issuer: 'http://auth.example', jwks_uri: 'https://auth.example/jwks' },
    })
    await expect(remote.verifyIdToken(await sign({}))).rejects.toMatchObject({
      code: 'invalid_metadata',
    })
    const plainJwks = new Client('client-1', secretText, {
      metadata: { issuer: 'https://auth.example', jwks_uri: 'http://auth.example/jwks' },
    })
    await expect(plainJwks.verifyIdToken(await sign({}))).rejects.toMatchObject({
      code: 'invalid_metadata',
    })
    for (const loopback of ['http://localhost:1', 'http://[::1]:1', 'http://127.0.0.2:1']) {
      const client = new Client('client-1', secretText, {
        clock,
        metadata: { issuer: loopback, id_token_signing_alg_values_supported: ['HS256'] },
      })
      await expect(
        client.verifyIdToken(await sign({ iss: loopback }, 'x', secret, 'HS256')),
      ).resolves.toMatchObject({ iss: loopback })
    }
  })

  /** @see issue 24, item 12 */
  it('remembers the nonce of the last 1000 authorization requests per PKCE challenge (S256, plain, pushed) until their exchange', async () => {
    const client = await discovered({ pushed_authorization_request_endpoint: `${issuer}/par` })
    server.on('GET', '/jwks', { body: await jwks() })
    const exchange = async (verifier: string, idToken: string) => {
      server.on('POST', '/token', {
        body: { access_token: 'AT', token_type: 'Bearer', id_token: idToken, refresh_token: 'RT' },
      })
      return client.authCode.getToken('code', { code_verifier: verifier })
    }
    const verifiers = Array.from(
      { length: 1001 },
      (_, i) => `${'v'.repeat(40)}${String(i).padStart(4, '0')}`,
    )
    for (const [i, verifier] of verifiers.entries()) {
      client.authCode.authorizeUrl({
        nonce: `n${String(i)}`,
        code_challenge: pkceChallenge(verifier),
        code_challenge_method: 'S256',
      })
    }
    // The latest request is known: its nonce is expected, a token without it refused.
    const last = await exchange(verifiers[1000]!, await sign({}))
    await expect(last.idToken()).rejects.toMatchObject({
      code: 'invalid_id_token',
      description: expect.stringContaining('carries no nonce') as unknown,
    })
    const good = await exchange(verifiers[999]!, await sign({ nonce: 'n999' }))
    await expect(good.idToken()).resolves.toMatchObject({ nonce: 'n999' })
    // Each request gives one code: a second exchange with the same verifier knows nothing.
    const again = await exchange(verifiers[999]!, await sign({ nonce: 'n999' }))
    await expect(again.idToken()).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"options.nonce" is required'),
    )
    // The oldest of 1001 requests was forgotten.
    const oldest = await exchange(verifiers[0]!, await sign({ nonce: 'n0' }))
    await expect(oldest.idToken()).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"options.nonce"'),
    )
    await expect(oldest.idToken({ nonce: 'n0' })).resolves.toMatchObject({ nonce: 'n0' })

    // A plain challenge, a pushed request, and a request that sent no nonce.
    const plain = 'p'.repeat(43)
    client.authCode.authorizeUrl({ nonce: 'p', code_challenge: plain })
    await expect(
      (await exchange(plain, await sign({ nonce: 'p' }))).idToken(),
    ).resolves.toMatchObject({ nonce: 'p' })
    const pushed = 'q'.repeat(43)
    server.on('POST', '/par', { status: 201, body: { request_uri: 'urn:r', expires_in: 60 } })
    await client.authCode.pushAuthorizationRequest({
      nonce: 'pushed',
      code_challenge: pkceChallenge(pushed),
      code_challenge_method: 'S256',
    })
    const viaPar = await exchange(pushed, await sign({ nonce: 'other' }))
    await expect(viaPar.idToken()).rejects.toMatchObject({ description: 'nonce mismatch' })
    const none = 'r'.repeat(43)
    client.authCode.authorizeUrl({
      code_challenge: pkceChallenge(none),
      code_challenge_method: 'S256',
    })
    const withoutNonce = await exchange(none, await sign({}))
    await expect(withoutNonce.idToken()).resolves.toMatchObject({ sub: 'alice' })

    // A token refreshed in place carries a new ID token, which is not checked against the old nonce.
    server.on('POST', '/token', {
      body: { access_token: 'AT2', token_type: 'Bearer', id_token: await sign({}) },
    })
    server.on('GET', '/api', {
      status: 401,
      headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
    })
    server.on('GET', '/api', { body: {} })
    await good.fetch(`${issuer}/api`)
    await expect(good.idToken()).resolves.toMatchObject({ sub: 'alice' })
  })

  it('rejects bad verification options with coded TypeErrors', async () => {
    const client = await discovered()
    for (const [options, name] of [
      [{ nonce: 5 }, 'options.nonce'],
      [{ maxAge: -1 }, 'options.maxAge'],
      [{ clockTolerance: 'x' }, 'options.clockTolerance'],
      [{ accessToken: {} }, 'options.accessToken'],
      [{ code: 1 }, 'options.code'],
    ] as const) {
      await expect(client.verifyIdToken('a.b.c', options as never)).rejects.toThrow(
        expect.objectContaining({
          name: 'TypeError',
          message: expect.stringContaining(`"${name}"`) as unknown,
        }),
      )
    }
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

  it("reads a provider's own profile endpoint with extra headers and query parameters", async () => {
    const client = await discovered()
    server.on('GET', '/api/v1/users/me', { body: { id: 7, name: 'Ann', displayName: 'ann' } })
    server.on('GET', '/broken', { body: '[1,2]', headers: { 'content-type': 'application/json' } })
    const profile = await client.userinfo(new AccessToken(client, 'at'), {
      url: '/api/v1/users/me',
      headers: { 'Notion-Version': '2021-08-16' },
      params: { fields: 'id,name' },
      snaky: false,
    })
    expect(profile).toEqual({ id: 7, name: 'Ann', displayName: 'ann' })
    const sent = server.last()
    expect(sent.headers['notion-version']).toBe('2021-08-16')
    expect(sent.headers.authorization).toBe('Bearer at')
    expect(sent.query.get('fields')).toBe('id,name')
    await expect(client.userinfo('raw', { url: '/broken' })).rejects.toMatchObject({
      code: 'invalid_userinfo',
    })
    await expect(client.userinfo('raw', { url: 7 as unknown as string })).rejects.toMatchObject({
      code: 'ERR_INVALID_ARG_TYPE',
    })
  })
})
