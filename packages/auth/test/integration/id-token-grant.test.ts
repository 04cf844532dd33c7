import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPair, importJWK, SignJWT, type JWTPayload } from 'jose'
import { startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'
import {
  startIdTokenIssuer,
  type IssuerAccount,
  type TestIdTokenIssuer,
} from '../support/id-token-issuer.js'

/**
 * `POST /token?grant_type=id_token` (issue 27 item 1): ID tokens minted by real issuers
 * (`oidc-provider` playing Google, Apple and an Azure tenant) through unchanged
 * `@supabase/auth-js`, and hand-signed hostile tokens refused with upstream's answers.
 */

const sha256hex = (text: string) => createHash('sha256').update(text).digest('hex')

let counter = 0
function account(verified = true): IssuerAccount {
  counter++
  return {
    sub: `sub-${String(counter)}`,
    email: `native-${String(counter)}@example.com`,
    emailVerified: verified,
    name: `Native ${String(counter)}`,
  }
}

describe('the id_token grant', () => {
  let google: TestIdTokenIssuer
  let apple: TestIdTokenIssuer
  let azure: TestIdTokenIssuer
  let vercel: TestIdTokenIssuer
  let server: TestServer

  beforeAll(async () => {
    google = await startIdTokenIssuer({ clientId: 'google-ios' })
    apple = await startIdTokenIssuer({ clientId: 'com.example.app' })
    azure = await startIdTokenIssuer({ clientId: 'azure-app', pathPrefix: '/tenant-1/v2.0' })
    vercel = await startIdTokenIssuer({ clientId: 'oac_vercel' })
    const provider = (name: string, clientId: string, url: string) => ({
      [`AUTHSVC_EXTERNAL_${name}_ENABLED`]: 'true',
      [`AUTHSVC_EXTERNAL_${name}_CLIENT_ID`]: clientId,
      [`AUTHSVC_EXTERNAL_${name}_SECRET`]: `${name.toLowerCase()}-secret`,
      [`AUTHSVC_EXTERNAL_${name}_REDIRECT_URI`]: 'http://127.0.0.1:9999/callback',
      [`AUTHSVC_EXTERNAL_${name}_URL`]: url,
    })
    server = await startTestServer('id_token_grant', {
      // Several client ids, as upstream reads them: the web client and the iOS app.
      ...provider('GOOGLE', 'google-web, google-ios', google.issuer),
      ...provider('APPLE', 'com.example.app', apple.issuer),
      ...provider('AZURE', 'azure-app', `${new URL(azure.issuer).origin}/common`),
      ...provider('VERCEL_MARKETPLACE', 'oac_vercel', vercel.issuer),
    })
    await server.listen()
  })
  afterAll(async () => {
    await server.close()
    await Promise.all([google.stop(), apple.stop(), azure.stop(), vercel.stop()])
  })

  /** `POST /token?grant_type=id_token` with `body`; status and JSON. */
  async function grant(body: Record<string, unknown>, token?: string) {
    const res = await server.request('POST', '/token?grant_type=id_token', {
      body,
      ...(token === undefined ? {} : { token }),
    })
    return { status: res.statusCode, json: res.json() as Record<string, unknown> }
  }

  /** A token signed with `issuer`'s own key (or `key`), over `claims`. */
  async function signed(
    issuer: TestIdTokenIssuer,
    claims: JWTPayload,
    header: { alg?: string; kid?: string } = {},
    key?: Parameters<SignJWT['sign']>[0],
  ): Promise<string> {
    const now = Math.floor(Date.now() / 1000)
    return new SignJWT({
      iss: issuer.issuer,
      sub: 'hostile-sub',
      aud: issuer.clientId,
      iat: now,
      exp: now + 600,
      email: 'hostile@example.com',
      email_verified: true,
      ...claims,
    })
      .setProtectedHeader({ alg: header.alg ?? 'RS256', kid: header.kid ?? 'issuer-key' })
      .sign(key ?? (await importJWK(issuer.privateJwk, 'RS256')))
  }

  it('signs a Google user in through auth-js signInWithIdToken, nonce and access token checked', async () => {
    const who = account()
    const { idToken, accessToken } = await google.signIn(who, sha256hex('raw-nonce-1'))
    const auth = authJsClient(server.url)
    const { data, error } = await auth.signInWithIdToken({
      provider: 'google',
      token: idToken,
      access_token: accessToken,
      nonce: 'raw-nonce-1',
    })
    expect(error).toBeNull()
    expect(data.user).toMatchObject({
      email: who.email,
      app_metadata: { provider: 'google', providers: ['google'] },
    })
    expect(data.user?.identities?.[0]).toMatchObject({
      provider: 'google',
      id: who.sub,
      identity_data: { sub: who.sub, email: who.email, email_verified: true, name: who.name },
    })
    expect(data.session?.access_token).toEqual(expect.any(String))
    // The same identity signs the same user in again.
    const again = await google.signIn(who, sha256hex('raw-nonce-2'))
    const second = await authJsClient(server.url).signInWithIdToken({
      provider: 'google',
      token: again.idToken,
      nonce: 'raw-nonce-2',
    })
    expect(second.data.user?.id).toBe(data.user?.id)
  })

  it('signs Apple and Azure users in (issuers detected in the token), without a nonce', async () => {
    for (const [name, issuer] of [
      ['apple', apple],
      ['azure', azure],
    ] as const) {
      const who = account()
      const { idToken } = await issuer.signIn(who)
      const { data, error } = await authJsClient(server.url).signInWithIdToken({
        provider: name,
        token: idToken,
      })
      expect(error).toBeNull()
      expect(data.user?.identities?.[0]).toMatchObject({ provider: name, id: who.sub })
    }
  })

  it('signs a Vercel Marketplace user in, mapped from its own claims', async () => {
    const token = await signed(vercel, {
      sub: 'account:team_1:user_1',
      global_user_id: 'gu_7',
      user_email: 'vee@example.com',
      user_name: 'Vee',
      user_avatar_url: 'https://vercel.example/vee.png',
    })
    const { data, error } = await authJsClient(server.url).signInWithIdToken({
      provider: 'vercel_marketplace',
      token,
    })
    expect(error).toBeNull()
    expect(data.user).toMatchObject({
      email: 'vee@example.com',
      app_metadata: { provider: 'vercel_marketplace' },
    })
    expect(data.user?.identities?.[0]).toMatchObject({
      provider: 'vercel_marketplace',
      id: 'global_user_id:gu_7',
      identity_data: {
        sub: 'global_user_id:gu_7',
        name: 'Vee',
        picture: 'https://vercel.example/vee.png',
        email_verified: true,
      },
    })
    // By issuer too, as upstream accepts it.
    const byIssuer = await server.request('POST', '/token?grant_type=id_token', {
      body: { issuer: vercel.issuer, client_id: 'oac_vercel', id_token: token },
    })
    expect(byIssuer.json()).toMatchObject({ user: { email: 'vee@example.com' } })
  })

  it('links a Google identity to the signed-in user through auth-js linkIdentity({ token })', async () => {
    const auth = authJsClient(server.url)
    const email = 'linker@example.com'
    expect((await auth.signUp({ email, password: 'password123' })).error).toBeNull()
    const who = { ...account(), email: 'someone-else@example.com' }
    const { idToken } = await google.signIn(who)
    const { data, error } = await auth.linkIdentity({ provider: 'google', token: idToken })
    expect(error).toBeNull()
    expect(data.user?.email).toBe(email)
    expect(data.user?.identities?.map((i) => i.provider).sort()).toEqual(['email', 'google'])
    // The identity now belongs to that user: another user cannot link it.
    const other = authJsClient(server.url)
    expect(
      (await other.signUp({ email: 'other@example.com', password: 'password123' })).error,
    ).toBeNull()
    const taken = await other.linkIdentity({ provider: 'google', token: idToken })
    expect(taken.error?.code).toBe('identity_already_exists')
  })

  it.each<[string, (issuer: TestIdTokenIssuer) => Promise<string>, string]>([
    [
      'a wrong audience',
      (i) => signed(i, { aud: 'someone-else' }),
      'Unacceptable audience in id_token: [someone-else]',
    ],
    [
      'an expired token',
      (i) => signed(i, { exp: Math.floor(Date.now() / 1000) - 120 }),
      'Bad ID token',
    ],
    [
      'a token of another issuer',
      (i) => signed(i, { iss: 'https://evil.example' }),
      'Bad ID token',
    ],
    [
      'alg none',
      (i) => {
        const body = Buffer.from(
          JSON.stringify({ iss: i.issuer, sub: 'x', aud: i.clientId, iat: 1, exp: 4e9 }),
        ).toString('base64url')
        return Promise.resolve(`${Buffer.from('{"alg":"none"}').toString('base64url')}.${body}.`)
      },
      'Bad ID token',
    ],
    [
      'HS256 signed with the public key',
      async (i) => {
        const { n, e, kty } = i.privateJwk
        return signed(
          i,
          {},
          { alg: 'HS256' },
          new TextEncoder().encode(JSON.stringify({ kty, n, e })),
        )
      },
      'Bad ID token',
    ],
    [
      'a key the issuer does not publish',
      async (i) => signed(i, {}, { kid: 'rogue' }, (await generateKeyPair('RS256')).privateKey),
      'Bad ID token',
    ],
    ['a token without sub', (i) => signed(i, { sub: undefined }), 'Bad ID token'],
  ])('refuses %s', async (_name, make, description) => {
    const { status, json } = await grant({ provider: 'google', id_token: await make(google) })
    expect(status).toBe(400)
    expect(json).toEqual({ error: 'invalid request', error_description: description })
  })

  it('compares the nonce as upstream: both or neither, the token holding its SHA-256', async () => {
    const who = account()
    const { idToken } = await google.signIn(who, sha256hex('the-nonce'))
    expect(await grant({ provider: 'google', id_token: idToken })).toEqual({
      status: 400,
      json: {
        error: 'invalid request',
        error_description: 'Passed nonce and nonce in id_token should either both exist or not.',
      },
    })
    expect(await grant({ provider: 'google', id_token: idToken, nonce: 'another' })).toEqual({
      status: 400,
      json: { error: 'invalid nonce', error_description: 'Nonces mismatch' },
    })
    const plain = (await google.signIn(account())).idToken
    expect((await grant({ provider: 'google', id_token: plain, nonce: 'x' })).json).toMatchObject({
      error_description: 'Passed nonce and nonce in id_token should either both exist or not.',
    })
    expect(
      (await grant({ provider: 'google', id_token: idToken, nonce: 'the-nonce' })).status,
    ).toBe(200)
  })

  it('checks at_hash against the access token when one is given', async () => {
    const digest = createHash('sha256').update('AT-1').digest()
    const atHash = digest.subarray(0, 16).toString('base64url')
    const token = (sub: string) => signed(google, { sub, at_hash: atHash })
    expect(
      await grant({ provider: 'google', id_token: await token('hash-1'), access_token: 'not-it' }),
    ).toEqual({
      status: 400,
      json: { error: 'invalid request', error_description: 'Bad ID token' },
    })
    const right = await grant({
      provider: 'google',
      id_token: await token('hash-1'),
      access_token: 'AT-1',
    })
    expect(right.status).toBe(200)
    // Without the access token (a native SDK hands over the ID token alone), as upstream.
    expect((await grant({ provider: 'google', id_token: await token('hash-2') })).status).toBe(200)
  })

  it('answers requests it cannot serve as upstream does', async () => {
    const token = await signed(google, {})
    expect(await grant({ provider: 'google' })).toEqual({
      status: 400,
      json: { error: 'invalid request', error_description: 'id_token required' },
    })
    expect(await grant({ id_token: token })).toEqual({
      status: 400,
      json: {
        error: 'invalid request',
        error_description: 'provider or client_id and issuer required',
      },
    })
    expect(await grant({ provider: 'google', id_token: token, link_identity: true })).toEqual({
      status: 400,
      json: {
        error: 'invalid request',
        error_description: 'Linking requires a valid user access token in Authorization',
      },
    })
    expect((await grant({ provider: 'facebook', id_token: token })).json).toMatchObject({
      error_code: 'provider_disabled',
      msg: 'Provider (issuer "https://www.facebook.com") is not enabled',
    })
    expect((await grant({ provider: 'kakao', id_token: token })).json).toMatchObject({
      error_code: 'provider_disabled',
      msg: 'Provider (issuer "https://kauth.kakao.com") is not enabled',
    })
    // No such custom provider (they are tested in custom-providers.test.ts).
    expect((await grant({ provider: 'custom:acme', id_token: token })).json).toMatchObject({
      error_code: 'validation_failed',
      msg: 'Custom provider "custom:acme" not found',
    })
    expect((await grant({ provider: 'myspace', id_token: token })).json).toMatchObject({
      error_code: 'validation_failed',
      msg: 'Custom OIDC provider "myspace" not allowed',
    })
    // Apple's issuer is read from the token: Google's is refused.
    expect((await grant({ provider: 'apple', id_token: token })).json).toMatchObject({
      error_code: 'validation_failed',
      msg: 'Detected ID token issuer is not an Apple ID token issuer',
    })
    expect((await grant({ provider: 'azure', id_token: token })).json).toMatchObject({
      error_code: 'validation_failed',
      msg: 'Detected ID token issuer is not an Azure ID token issuer',
    })
    expect((await grant({ provider: 'azure', id_token: 'not a jwt' })).json).toMatchObject({
      error_code: 'validation_failed',
      msg: 'Unable to detect issuer in ID token for Azure provider',
    })
  })
})
