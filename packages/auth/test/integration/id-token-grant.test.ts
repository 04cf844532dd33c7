/**
 * `POST /token?grant_type=id_token` through the unchanged auth-js (`signInWithIdToken`,
 * `linkIdentity({ provider, token })`), with genuine ID tokens from real `oidc-provider`
 * instances playing Google, Apple, Azure and Keycloak, and hand-signed hostile tokens from a
 * fake issuer playing Google.
 */
import { createHash } from 'node:crypto'
import { FakeClock, startHttpServer, type TestHttpServer } from '@gatehouse/testing'
import { SignJWT, UnsecuredJWT, exportSPKI } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'
import {
  startFakeIssuer,
  startIdTokenIssuer,
  type FakeIssuer,
  type IssuerAccount,
  type TestIdTokenIssuer,
} from '../support/id-token-issuer.js'

const sha256hex = (value: string) => createHash('sha256').update(value).digest('hex')

/** The settings of a provider played by `issuer`. */
function providerEnv(name: string, clientId: string, url: string): Record<string, string> {
  const p = `AUTHSVC_EXTERNAL_${name.toUpperCase()}`
  return {
    [`${p}_ENABLED`]: 'true',
    [`${p}_CLIENT_ID`]: clientId,
    [`${p}_SECRET`]: 'unused-by-the-id-token-grant',
    [`${p}_REDIRECT_URI`]: 'http://127.0.0.1:9999/callback',
    [`${p}_URL`]: url,
  }
}

const account = (sub: string, email: string): IssuerAccount => ({
  sub,
  email,
  emailVerified: true,
  name: 'Ada Lovelace',
})

describe('grant_type=id_token with tokens minted by real issuers', () => {
  let server: TestServer
  let url: string
  let google: TestIdTokenIssuer
  let apple: TestIdTokenIssuer
  let azure: TestIdTokenIssuer
  let keycloak: TestIdTokenIssuer

  beforeAll(async () => {
    google = await startIdTokenIssuer(['google-web', 'google-ios'])
    apple = await startIdTokenIssuer(['com.example.web', 'com.example.app'], {
      is_private_email: true,
    })
    azure = await startIdTokenIssuer(['azure-app'], { xms_edov: '1', tid: 'tenant-1' })
    keycloak = await startIdTokenIssuer(['kc-app'])
    server = await startTestServer('id_token_real', {
      ...providerEnv('google', 'google-web, google-ios', google.issuer),
      ...providerEnv('apple', 'com.example.web', apple.issuer),
      AUTHSVC_EXTERNAL_IOS_BUNDLE_ID: 'com.example.app',
      ...providerEnv('azure', 'azure-app', azure.issuer),
      ...providerEnv('keycloak', 'kc-app', keycloak.issuer),
      AUTHSVC_SECURITY_MANUAL_LINKING_ENABLED: 'true',
    })
    url = await server.listen()
  })
  afterAll(async () => {
    await server.close()
    await Promise.all([google, apple, azure, keycloak].map((i) => i.stop()))
  })

  it('signs in with Google (nonce hashed as upstream, any of the listed client ids)', async () => {
    const nonce = 'raw-nonce-0123456789'
    const minted = await google.mint(account('g-1', 'ada@gmail.example'), {
      clientId: 'google-ios',
      nonce: sha256hex(nonce),
    })
    const auth = authJsClient(url)
    const { data, error } = await auth.signInWithIdToken({
      provider: 'google',
      token: minted.idToken,
      access_token: minted.accessToken,
      nonce,
    })
    expect(error).toBeNull()
    expect(data.user?.email).toBe('ada@gmail.example')
    expect(data.user?.app_metadata).toMatchObject({ provider: 'google', providers: ['google'] })
    expect(data.user?.identities?.[0]).toMatchObject({
      provider: 'google',
      id: 'g-1',
      identity_data: {
        iss: google.issuer,
        sub: 'g-1',
        name: 'Ada Lovelace',
        picture: 'https://pictures.example/g-1.png',
        email_verified: true,
      },
    })
    // The same identity signs in again: the same user.
    const again = await authJsClient(url).signInWithIdToken({
      provider: 'google',
      token: (await google.mint(account('g-1', 'ada@gmail.example'))).idToken,
    })
    expect(again.data.user?.id).toBe(data.user?.id)
  })

  it('signs in with Apple by the iOS bundle id, keeping is_private_email', async () => {
    const minted = await apple.mint(account('a-1', 'relay@privaterelay.example'), {
      clientId: 'com.example.app',
    })
    const { data, error } = await authJsClient(url).signInWithIdToken({
      provider: 'apple',
      token: minted.idToken,
    })
    expect(error).toBeNull()
    expect(data.user?.identities?.[0]).toMatchObject({
      provider: 'apple',
      identity_data: { custom_claims: { is_private_email: true }, email_verified: true },
    })
  })

  it('signs in with Azure (issuer detected in the token, xms_edov read, custom claims kept)', async () => {
    const minted = await azure.mint(account('z-1', 'ada@contoso.example'))
    const { data, error } = await authJsClient(url).signInWithIdToken({
      provider: 'azure',
      token: minted.idToken,
    })
    expect(error).toBeNull()
    expect(data.user?.identities?.[0]).toMatchObject({
      provider: 'azure',
      identity_data: {
        iss: azure.issuer,
        full_name: 'Ada Lovelace',
        preferred_username: 'ada',
        email_verified: true,
        custom_claims: { tid: 'tenant-1' },
      },
    })
    expect(data.user?.identities?.[0]?.identity_data?.custom_claims).not.toHaveProperty('aud')
  })

  it('signs in with Keycloak, also when the request names the realm by issuer', async () => {
    const minted = await keycloak.mint(account('k-1', 'ada@kc.example'))
    const res = await server.request('POST', '/token?grant_type=id_token', {
      body: { issuer: keycloak.issuer, client_id: 'kc-app', id_token: minted.idToken },
    })
    expect(res.statusCode).toBe(200)
    expect(res.json().user.identities[0]).toMatchObject({ provider: 'keycloak' })
    const viaAuthJs = await authJsClient(url).signInWithIdToken({
      provider: 'keycloak',
      token: (await keycloak.mint(account('k-1', 'ada@kc.example'))).idToken,
    })
    expect(viaAuthJs.error).toBeNull()
    expect(viaAuthJs.data.user?.id).toBe(res.json().user.id)
  })

  it('links a Google identity to the signed-in user with linkIdentity({ provider, token })', async () => {
    const auth = authJsClient(url)
    const signUp = await auth.signUp({ email: 'linker@example.com', password: 'password123' })
    expect(signUp.error).toBeNull()
    const minted = await google.mint(account('g-link', 'other-address@gmail.example'))
    const { data, error } = await auth.linkIdentity({ provider: 'google', token: minted.idToken })
    expect(error).toBeNull()
    expect(data.user?.id).toBe(signUp.data.user?.id)
    expect(data.user?.email).toBe('linker@example.com')
    expect(data.user?.identities?.map((i) => i.provider).sort()).toEqual(['email', 'google'])
    // Linking the same identity again to someone else is refused.
    const other = authJsClient(url)
    await other.signUp({ email: 'second@example.com', password: 'password123' })
    const twice = await other.linkIdentity({
      provider: 'google',
      token: (await google.mint(account('g-link', 'other-address@gmail.example'))).idToken,
    })
    expect(twice.error).toMatchObject({ status: 422, code: 'identity_already_exists' })
  })

  it('refuses a token of one issuer sent as another provider', async () => {
    const minted = await keycloak.mint(account('k-2', 'ada2@kc.example'))
    const { error } = await authJsClient(url).signInWithIdToken({
      provider: 'google',
      token: minted.idToken,
    })
    expect(error).toMatchObject({ status: 400, message: 'Bad ID token' })
  })
})

describe('grant_type=id_token refusals with hand-signed tokens', () => {
  let server: TestServer
  let fake: FakeIssuer
  let huge: TestHttpServer
  let clock: FakeClock
  const post = (body: Record<string, unknown>, token?: string) =>
    server.request('POST', '/token?grant_type=id_token', {
      body,
      ...(token === undefined ? {} : { token }),
    })

  beforeAll(async () => {
    fake = await startFakeIssuer('web-client')
    // An issuer whose discovery document is far over the response cap.
    huge = await startHttpServer((_req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ issuer: 'x', padding: 'x'.repeat(4 * 1024 * 1024) }))
    })
    clock = new FakeClock(Date.now())
    server = await startTestServer(
      'id_token_hostile',
      {
        ...providerEnv('google', 'web-client', fake.issuer),
        ...providerEnv('keycloak', 'kc', huge.url),
      },
      clock,
    )
  })
  afterAll(async () => {
    await server.close()
    await fake.stop()
    await huge.close()
  })

  it('answers 500 when the issuer metadata cannot be read (over the response cap), and goes on', async () => {
    const res = await post({ provider: 'keycloak', id_token: 'x.y.z' })
    expect(res.statusCode).toBe(500)
    expect(res.json()).toMatchObject({ error_code: 'unexpected_failure' })
    const token = await fake.sign(
      { sub: 'after-huge', email: 'after@example.com' },
      {
        now: clock.now(),
      },
    )
    expect((await post({ provider: 'google', id_token: token })).statusCode).toBe(200)
  })

  it('accepts a well-formed token, and checks at_hash when access_token is given', async () => {
    const accessToken = 'provider-access-token'
    const digest = createHash('sha256').update(accessToken).digest()
    const atHash = digest.subarray(0, 16).toString('base64url')
    const token = await fake.sign({ sub: 'h-1', at_hash: atHash }, { now: clock.now() })
    expect((await post({ provider: 'google', id_token: token })).statusCode).toBe(200)
    expect(
      (await post({ provider: 'google', id_token: token, access_token: accessToken })).statusCode,
    ).toBe(200)
    const mismatch = await post({ provider: 'google', id_token: token, access_token: 'other' })
    expect(mismatch.statusCode).toBe(400)
    expect(mismatch.json()).toMatchObject({
      error_code: 'validation_failed',
      msg: 'Bad ID token',
      error: 'invalid request',
      error_description: 'Bad ID token',
    })
  })

  it.each([
    ['expired', { exp: -60 }],
    ['issued in the future', { iat: 3600 }],
    ['from another issuer', { iss: 'https://evil.example' }],
  ])('refuses a token %s', async (_what, claims) => {
    const now = Math.floor(clock.now() / 1000)
    const shifted = Object.fromEntries(
      Object.entries(claims).map(([k, v]) => [k, typeof v === 'number' ? now + v : v]),
    )
    const res = await post({
      provider: 'google',
      id_token: await fake.sign(shifted, { now: clock.now() }),
    })
    expect(res.statusCode).toBe(400)
    expect(res.json().msg).toBe('Bad ID token')
  })

  it('refuses a token for another audience, naming it as upstream does', async () => {
    const res = await post({
      provider: 'google',
      id_token: await fake.sign({ aud: ['someone-else', 'x'] }, { now: clock.now() }),
    })
    expect(res.statusCode).toBe(400)
    expect(res.json().msg).toBe('Unacceptable audience in id_token: [someone-else x]')
  })

  it('refuses alg none, and HS256 signed with the issuer public key', async () => {
    const iat = Math.floor(clock.now() / 1000)
    const claims = { iss: fake.issuer, sub: 'x', aud: 'web-client', iat, exp: iat + 300 }
    const none = new UnsecuredJWT(claims).encode()
    expect((await post({ provider: 'google', id_token: none })).json().msg).toBe('Bad ID token')
    const key = fake.keys[0]
    if (key === undefined) throw new Error('no key')
    const pem = await exportSPKI(
      await crypto.subtle.importKey(
        'jwk',
        key.publicJwk,
        { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
        true,
        ['verify'],
      ),
    )
    const confused = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', kid: key.kid })
      .sign(new TextEncoder().encode(pem))
    const res = await post({ provider: 'google', id_token: confused })
    expect(res.statusCode).toBe(400)
    expect(res.json().msg).toBe('Bad ID token')
  })

  it('compares the nonce as upstream: SHA-256 hex of the raw nonce, both or neither', async () => {
    const token = await fake.sign({ nonce: sha256hex('right') }, { now: clock.now() })
    expect((await post({ provider: 'google', id_token: token, nonce: 'right' })).statusCode).toBe(
      200,
    )
    const wrong = await post({ provider: 'google', id_token: token, nonce: 'wrong' })
    expect(wrong.json()).toMatchObject({ msg: 'Nonces mismatch', error: 'invalid nonce' })
    // The raw nonce in the token is not its hash.
    const raw = await fake.sign({ nonce: 'right' }, { now: clock.now() })
    expect((await post({ provider: 'google', id_token: raw, nonce: 'right' })).json().msg).toBe(
      'Nonces mismatch',
    )
    expect((await post({ provider: 'google', id_token: token })).json().msg).toBe(
      'Passed nonce and nonce in id_token should either both exist or not.',
    )
  })

  it('follows a key rotation at the issuer, refetching the JWKS at most once per cooldown for unknown keys', async () => {
    const before = fake.jwksFetches
    const unknown = await fake.newKey('never-published')
    const stray = await fake.sign({}, { now: clock.now(), key: unknown })
    expect((await post({ provider: 'google', id_token: stray })).json().msg).toBe('Bad ID token')
    expect((await post({ provider: 'google', id_token: stray })).json().msg).toBe('Bad ID token')
    // Two unknown kids within the cooldown: at most one refetch.
    expect(fake.jwksFetches - before).toBeLessThanOrEqual(1)
    const rotated = await fake.newKey('second')
    fake.keys = [rotated]
    clock.advance(31_000)
    const token = await fake.sign(
      { sub: 'rotated', email: 'rotated@example.com' },
      { now: clock.now(), key: rotated },
    )
    const res = await post({ provider: 'google', id_token: token })
    expect(res.statusCode).toBe(200)
    expect(res.json().user.identities[0]).toMatchObject({ id: 'rotated' })
  })

  it('answers what upstream answers for missing fields, unknown or disabled providers and links without a token', async () => {
    expect((await post({ provider: 'google' })).json()).toMatchObject({
      msg: 'id_token required',
      error: 'invalid request',
    })
    expect((await post({ id_token: 'x' })).json().msg).toBe(
      'provider or client_id and issuer required',
    )
    expect((await post({ provider: 'facebook', id_token: 'x.y.z' })).json()).toMatchObject({
      error_code: 'provider_disabled',
      msg: 'Provider (issuer "https://www.facebook.com") is not enabled',
    })
    expect((await post({ provider: 'custom:acme', id_token: 'x.y.z' })).json()).toMatchObject({
      error_code: 'validation_failed',
      msg: 'Custom OAuth providers are disabled',
    })
    expect((await post({ provider: 'myspace', id_token: 'x.y.z' })).json().msg).toBe(
      'Custom OIDC provider "myspace" not allowed',
    )
    expect((await post({ provider: 'apple', id_token: 'not-a-jwt' })).json().msg).toBe(
      'Unable to detect issuer in ID token for Apple provider',
    )
    const link = await post({
      provider: 'google',
      id_token: await fake.sign({}, { now: clock.now() }),
      link_identity: true,
    })
    expect(link.json().msg).toBe('Linking requires a valid user access token in Authorization')
    const bad = await post({ provider: 'google', id_token: 'x.y.z', link_identity: true }, 'junk')
    expect(bad.statusCode).toBe(403)
    expect(bad.json().error_code).toBe('bad_jwt')
  })

  it('refuses hostile bodies with a schema error', async () => {
    const res = await post({ provider: 'google', id_token: 42 })
    expect(res.statusCode).toBe(400)
    expect(res.json().error_code).toBe('bad_json')
    const linkAsText = await post({ provider: 'google', id_token: 'x', link_identity: 'yes' })
    expect(linkAsText.statusCode).toBe(400)
  })
})
