import { decodeJwt, SignJWT } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  AccessToken,
  Client,
  OAuth2Error,
  pkce,
  SnakyHash,
  type ClientOptionsFor,
} from '@gatehouse/oauth2'
import {
  authorize,
  JWT_BEARER,
  REDIRECT_URI,
  startProvider,
  WEB_SECRET,
  type TestProvider,
} from '../support/oidc-provider.js'
import { argError } from '../support/expect.js'

describe('against a real oidc-provider', () => {
  let op: TestProvider

  beforeAll(async () => {
    op = await startProvider()
  })

  afterAll(async () => {
    await op.stop()
  })

  const webClient = (options: ClientOptionsFor<true> = {}) =>
    Client.discover(op.issuer, 'web-app', WEB_SECRET, {
      redirect_uri: REDIRECT_URI,
      requirePkce: true,
      ...options,
    })

  /**
   * Signs alice in through `client.authCode.authorizeUrl()`; `strip` removes parameters from the
   * URL on its way through the browser (as an attacker relaying it could).
   */
  async function signIn(
    client: Client,
    extra: Record<string, string | undefined> = {},
    strip: readonly string[] = [],
  ) {
    const scope = 'openid offline_access'
    const { code_verifier, code_challenge, code_challenge_method } = pkce()
    const state = crypto.randomUUID()
    const nonce = crypto.randomUUID()
    const url = new URL(
      client.authCode.authorizeUrl({
        scope,
        state,
        nonce,
        prompt: 'consent',
        code_challenge,
        code_challenge_method,
        ...extra,
      }),
    )
    for (const name of strip) url.searchParams.delete(name)
    const callback = await authorize(url.href)
    expect(callback.get('state')).toBe(state)
    expect(callback.get('iss')).toBe(op.issuer)
    const code = callback.get('code')
    if (code === null) throw new Error(`no code in callback: ${callback.toString()}`)
    return { code, code_verifier, nonce }
  }

  it('discovers the provider endpoints', async () => {
    const client = await webClient()
    expect(client.options.metadata?.issuer).toBe(op.issuer)
    expect(client.tokenUrl()).toBe(`${op.issuer}/token`)
    expect(client.revokeUrl()).toBe(`${op.issuer}/token/revocation`)
    expect(client.options.userinfoUrl).toBe(`${op.issuer}/me`)
  })

  it('completes authorization code + PKCE (client_secret_basic, form-encoded secret), validates the ID token and reads UserInfo', async () => {
    const client = await webClient()
    const { code, code_verifier, nonce } = await signIn(client, { max_age: '300' })
    const token = await client.authCode.getToken(code, { code_verifier })
    expect(token.token).not.toBe('')
    expect(token.refreshToken).toEqual(expect.any(String))
    expect(token.params.token_type).toBe('Bearer')
    expect(token.expiresIn).toBe(3600)
    const claims = await token.idToken({ nonce, maxAge: 300 })
    expect(claims.sub).toBe('alice')
    expect(claims.aud).toBe('web-app')
    await expect(token.idToken({ nonce: 'other' })).rejects.toMatchObject({
      code: 'invalid_id_token',
    })
    const info = await client.userinfo(token, { expectedSubject: claims.sub })
    expect(info).toBeInstanceOf(SnakyHash)
    expect(info.sub).toBe('alice')
  })

  it('pins the ID token alg to the advertised ones and requires the nonce the authorization request carried', async () => {
    const client = await webClient()
    expect(client.options.metadata?.id_token_signing_alg_values_supported).not.toContain('HS256')
    const { code, code_verifier, nonce } = await signIn(client)
    const token = await client.authCode.getToken(code, { code_verifier })
    const error = await token.idToken({ nonce: null }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OAuth2Error)
    expect(error).toMatchObject({ code: 'invalid_id_token' })
    expect((error as OAuth2Error).description).toContain('nonce')
    const now = Math.floor(Date.now() / 1000)
    const forged = await new SignJWT({ sub: 'mallory', nonce })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(op.issuer)
      .setAudience('web-app')
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign(new TextEncoder().encode(WEB_SECRET))
    await expect(client.verifyIdToken(forged, { nonce })).rejects.toMatchObject({
      code: 'invalid_id_token',
    })
  })

  /** @see issue 24, item 12 */
  it('refuses an ID token without the nonce its authorization request sent (nonce stripped from the URL), in this process and in another', async () => {
    const client = await webClient()
    const first = await signIn(client, {}, ['nonce'])
    const token = await client.authCode.getToken(first.code, { code_verifier: first.code_verifier })
    expect(decodeJwt(String(token.params.id_token)).nonce).toBeUndefined()
    const error = await token.idToken().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OAuth2Error)
    expect(error).toMatchObject({ code: 'invalid_id_token' })
    expect((error as OAuth2Error).description).toContain('nonce')

    // Another process (a client that did not build the URL) does not know the nonce: it must be
    // told, and then refuses the token too.
    const second = await signIn(client, {}, ['nonce'])
    const elsewhere = await webClient()
    const other = await elsewhere.authCode.getToken(second.code, {
      code_verifier: second.code_verifier,
    })
    await expect(other.idToken()).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"options.nonce" is required'),
    )
    await expect(other.idToken({ nonce: second.nonce })).rejects.toMatchObject({
      code: 'invalid_id_token',
      description: expect.stringContaining('carries no nonce') as unknown,
    })
  })

  /** @see issue 24, item 12 */
  it('checks the nonce it sent without being told in the same process; elsewhere takes the one kept with the state, or null for none', async () => {
    const client = await webClient()
    const first = await signIn(client)
    const token = await client.authCode.getToken(first.code, { code_verifier: first.code_verifier })
    await expect(token.idToken()).resolves.toMatchObject({ sub: 'alice', nonce: first.nonce })

    const elsewhere = await webClient()
    const second = await signIn(client)
    const other = await elsewhere.authCode.getToken(second.code, {
      code_verifier: second.code_verifier,
    })
    await expect(other.idToken({ nonce: second.nonce })).resolves.toMatchObject({
      nonce: second.nonce,
    })

    const noNonce = await signIn(client, { nonce: undefined })
    const plain = await elsewhere.authCode.getToken(noNonce.code, {
      code_verifier: noNonce.code_verifier,
    })
    await expect(plain.idToken()).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"options.nonce" is required'),
    )
    await expect(plain.idToken({ nonce: null })).resolves.toMatchObject({ sub: 'alice' })
  })

  it('refreshes, introspects and revokes (revoking the access token revokes the grant)', async () => {
    const client = await webClient()
    const { code, code_verifier } = await signIn(client)
    const first = await client.authCode.getToken(code, { code_verifier })
    const second = await first.refresh()
    expect(second.token).not.toBe(first.token)
    expect(second.refreshToken).toEqual(expect.any(String))

    const active = await client.introspectToken(second.token, 'access_token')
    expect(active.parsed).toMatchObject({ active: true, client_id: 'web-app', sub: 'alice' })

    const revoked = await second.revoke()
    expect(revoked.status).toBe(200)
    const after = await client.introspectToken(second.refreshToken!, 'refresh_token')
    expect(after.parsed).toMatchObject({ active: false })
  })

  it('rejects a wrong code verifier with invalid_grant', async () => {
    const client = await webClient()
    const { code } = await signIn(client)
    const error = await client.authCode
      .getToken(code, { code_verifier: pkce().code_verifier })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OAuth2Error)
    expect(error).toMatchObject({ code: 'invalid_grant', response: { status: 400 } })
  })

  it('fails client_secret_basic with the raw (gem) encoding of a secret with special characters', async () => {
    const client = await webClient({ basicAuthEncoding: 'raw' })
    const { code, code_verifier } = await signIn(client)
    await expect(client.authCode.getToken(code, { code_verifier })).rejects.toMatchObject({
      code: 'invalid_client',
      response: { status: 401 },
    })
  })

  it('gets client credentials tokens with client_secret_basic and introspects them', async () => {
    const client = await Client.discover(op.issuer, 'service', 'service-secret-0123456789-012345')
    const token = await client.clientCredentials.getToken({ scope: 'api' })
    expect(token.expiresIn).toBe(600)
    expect(token.params.scope).toBe('api')
    const info = await client.introspectToken(token.token)
    expect(info.parsed).toMatchObject({ active: true, client_id: 'service', scope: 'api' })
  })

  it('gets client credentials tokens with client_secret_post (authScheme request_body)', async () => {
    const client = await Client.discover(
      op.issuer,
      'post-client',
      'post-secret-0123456789-0123456789',
      {
        authScheme: 'request_body',
      },
    )
    const token = await client.clientCredentials.getToken({ scope: 'api' })
    expect(token.token).not.toBe('')
    const wrong = await Client.discover(op.issuer, 'post-client', 'wrong', {
      authScheme: 'request_body',
    })
    await expect(wrong.clientCredentials.getToken()).rejects.toMatchObject({
      code: 'invalid_client',
      description: 'client authentication failed',
    })
  })

  it('authenticates with private_key_jwt', async () => {
    const client = await Client.discover(op.issuer, 'jwt-client', undefined, {
      authScheme: 'private_key_jwt',
      privateKey: { key: op.clientKey, algorithm: 'ES256', kid: 'client-key-1' },
    })
    const a = await client.clientCredentials.getToken({ scope: 'api' })
    const b = await client.clientCredentials.getToken({ scope: 'api' })
    expect(a.token).not.toBe(b.token)
  })

  it('exchanges a JWT bearer assertion (RFC 7523 grant via registerGrantType)', async () => {
    const client = await Client.discover(op.issuer, 'jwt-client', undefined, {
      authScheme: 'private_key_jwt',
      privateKey: { key: op.clientKey, algorithm: 'ES256', kid: 'client-key-1' },
    })
    const exp = Math.floor(Date.now() / 1000) + 300
    const token = await client.assertion.getToken(
      { iss: 'trusted-issuer', aud: op.issuer, sub: 'alice', exp },
      { algorithm: 'ES256', key: op.assertionKey },
      { scope: 'api' },
    )
    expect(token).toBeInstanceOf(AccessToken)
    expect(token.params.scope).toBe('api')
    const forged = new SignJWT({ iss: 'trusted-issuer', aud: op.issuer, sub: 'alice', exp })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode('not-the-trusted-key-not-the-key!'))
    await expect(
      client.getToken({ grant_type: JWT_BEARER, assertion: await forged }),
    ).rejects.toMatchObject({ code: 'invalid_grant', description: 'assertion rejected' })
  })
})
