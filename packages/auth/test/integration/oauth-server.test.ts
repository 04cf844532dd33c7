import { createServer } from 'node:net'
import { GoTrueAdminApi, type GoTrueClient } from '@supabase/auth-js'
import { exportJWK, generateKeyPair } from 'jose'
import * as oidc from 'openid-client'
import { Client, pkce } from '@gatehouse/oauth2'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { systemClock } from '@gatehouse/auth'
import { startHttpServer, type TestHttpServer } from '@gatehouse/testing'
import { startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'

/** A free loopback port, so that the issuer (API_EXTERNAL_URL) is the URL the server listens at. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      probe.close(() => {
        if (address === null || typeof address === 'string') reject(new Error('no port'))
        else resolve(address.port)
      })
    })
  })
}

const REDIRECT = 'https://rp.example/callback'

/**
 * The app's consent page (`SITE_URL/oauth/consent`), as small as it can be: unchanged auth-js
 * (bundled for the browser), a sign-in form while nobody is signed in, then the request's details
 * with Allow and Deny, answered through `oauth.approveAuthorization` / `denyAuthorization` (which
 * send the browser on to the client).
 */
const CONSENT_SCRIPT = `
const client = new AuthJs.GoTrueClient({ url: API_URL, autoRefreshToken: false, detectSessionInUrl: false })
const id = new URL(location.href).searchParams.get('authorization_id')
const app = document.getElementById('app')
function button(label, onclick) {
  const b = document.createElement('button')
  b.textContent = label
  b.onclick = onclick
  return b
}
async function consent() {
  const { data, error } = await client.oauth.getAuthorizationDetails(id)
  if (error) return (app.textContent = error.message)
  if ('redirect_url' in data) return location.assign(data.redirect_url)
  const title = document.createElement('h1')
  title.textContent = data.client.name + ' asks for: ' + data.scope
  app.replaceChildren(
    title,
    button('Allow', () => client.oauth.approveAuthorization(id)),
    button('Deny', () => client.oauth.denyAuthorization(id)),
  )
}
async function main() {
  const { data } = await client.getSession()
  if (data.session) return consent()
  app.innerHTML = '<form><input name="email" aria-label="Email"><input name="password" type="password" aria-label="Password"><button>Sign in</button></form>'
  app.querySelector('form').onsubmit = async (event) => {
    event.preventDefault()
    const form = new FormData(event.target)
    const { error } = await client.signInWithPassword({ email: form.get('email'), password: form.get('password') })
    if (error) app.textContent = error.message
    else await consent()
  }
}
main()
`

/**
 * The OAuth 2.1 / OpenID Connect provider driven by real relying parties (panva's `openid-client`
 * 6 and `@gatehouse/oauth2`), with the consent step through auth-js `oauth.*` for a signed-in
 * user, once of them in Chromium on a consent page served by the test.
 */
describe('OAuth server: authorization code flow with openid-client and auth-js', () => {
  let server: TestServer
  let site: TestHttpServer
  /** The auth-js browser bundle the consent page loads, built by the Chromium test. */
  let authJsBundle = ''
  let issuer: string
  let admin: GoTrueAdminApi
  let user: GoTrueClient
  let confidential: { client_id: string; client_secret: string }
  let publicClient: { client_id: string }

  beforeAll(async () => {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true })
    const jwk = {
      ...(await exportJWK(privateKey)),
      kid: 'es-1',
      alg: 'ES256',
      key_ops: ['sign', 'verify'],
    }
    const port = await freePort()
    issuer = `http://127.0.0.1:${String(port)}`
    site = await startHttpServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://site').pathname
      if (path === '/auth-js.js') {
        res.writeHead(200, { 'content-type': 'text/javascript' })
        res.end(authJsBundle)
      } else if (path === '/oauth/consent') {
        res.writeHead(200, { 'content-type': 'text/html' })
        res.end(
          `<!doctype html><title>Consent</title><main id="app"></main><script src="/auth-js.js"></script>` +
            `<script>const API_URL = ${JSON.stringify(issuer)}\n${CONSENT_SCRIPT}</script>`,
        )
      } else {
        res.writeHead(200, { 'content-type': 'text/html' })
        res.end('<!doctype html><title>Client</title><h1>Back at the client</h1>')
      }
    })
    server = await startTestServer(
      'oauth_server',
      {
        AUTHSVC_API_EXTERNAL_URL: issuer,
        AUTHSVC_SITE_URL: site.url,
        AUTHSVC_JWT_ISSUER: issuer,
        AUTHSVC_JWT_KEYS: JSON.stringify([jwk]),
        AUTHSVC_OAUTH_SERVER_ENABLED: 'true',
        AUTHSVC_OAUTH_SERVER_AUTHORIZATION_PATH: '/oauth/consent',
        AUTHSVC_OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION: 'true',
        AUTHSVC_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: '0',
      },
      systemClock,
    )
    await server.app.server.listen({ host: '127.0.0.1', port })
    server.url = issuer
    admin = new GoTrueAdminApi({
      url: issuer,
      headers: { Authorization: `Bearer ${server.serviceKey}` },
    })
    const created = await admin.oauth.createClient({
      client_name: 'Relying party',
      redirect_uris: [REDIRECT],
    })
    confidential = created.data as { client_id: string; client_secret: string }
    const pub = await admin.oauth.createClient({
      client_name: 'Native app',
      redirect_uris: ['http://127.0.0.1/callback'],
      token_endpoint_auth_method: 'none',
    })
    publicClient = pub.data as { client_id: string }
    user = authJsClient(issuer)
    const signUp = await user.signUp({
      email: 'rp-user@example.com',
      password: 'secret123',
      options: { data: { name: 'Ada' } },
    })
    expect(signUp.error).toBeNull()
  })
  afterAll(async () => {
    await server.close()
    await site.close()
  })

  /** Follows `/oauth/authorize` to the consent page and returns the `authorization_id`. */
  async function authorize(url: URL): Promise<string> {
    const res = await fetch(url, { redirect: 'manual' })
    expect(res.status).toBe(302)
    const consentPage = new URL(res.headers.get('location') ?? '')
    expect(consentPage.origin + consentPage.pathname).toBe(`${site.url}/oauth/consent`)
    return consentPage.searchParams.get('authorization_id') ?? ''
  }

  /** What the consent page does: reads the request (which claims it for the user), then answers. */
  async function consent(url: URL, action: 'approve' | 'deny'): Promise<URL> {
    const id = await authorize(url)
    const details = await user.oauth.getAuthorizationDetails(id)
    expect(details.error).toBeNull()
    // Consent given before: approved at once.
    if (details.data && 'redirect_url' in details.data && action === 'approve') {
      return new URL(details.data.redirect_url)
    }
    const answer =
      action === 'approve'
        ? await user.oauth.approveAuthorization(id, { skipBrowserRedirect: true })
        : await user.oauth.denyAuthorization(id, { skipBrowserRedirect: true })
    expect(answer.error).toBeNull()
    return new URL(answer.data!.redirect_url)
  }

  it('serves discovery, code + PKCE + nonce, ID token, userinfo and refresh to openid-client', async () => {
    const config = await oidc.discovery(
      new URL(issuer),
      confidential.client_id,
      confidential.client_secret,
      oidc.ClientSecretBasic(confidential.client_secret),
      // eslint-disable-next-line @typescript-eslint/no-deprecated -- the test server is plain HTTP on loopback
      { execute: [oidc.allowInsecureRequests] },
    )
    expect(config.serverMetadata()).toMatchObject({
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
    })
    const rfc8414 = await fetch(`${issuer}/.well-known/oauth-authorization-server`)
    expect(((await rfc8414.json()) as { issuer: string }).issuer).toBe(issuer)

    const verifier = oidc.randomPKCECodeVerifier()
    const state = oidc.randomState()
    const nonce = oidc.randomNonce()
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid email profile',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    })
    const authorizationId = await authorize(url)

    const details = await user.oauth.getAuthorizationDetails(authorizationId)
    expect(details.error).toBeNull()
    expect(details.data).toMatchObject({
      authorization_id: authorizationId,
      redirect_uri: REDIRECT,
      client: { id: confidential.client_id, name: 'Relying party' },
      user: { email: 'rp-user@example.com' },
      scope: 'openid email profile',
    })
    const approved = await user.oauth.approveAuthorization(authorizationId, {
      skipBrowserRedirect: true,
    })
    expect(approved.error).toBeNull()
    const callback = new URL(approved.data!.redirect_url)
    expect(callback.searchParams.get('state')).toBe(state)
    expect(callback.searchParams.get('iss')).toBe(issuer)

    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    })
    const claims = tokens.claims()!
    expect(claims).toMatchObject({
      iss: issuer,
      aud: confidential.client_id,
      nonce,
      email: 'rp-user@example.com',
      email_verified: true,
      name: 'Ada',
    })
    expect(claims.auth_time).toEqual(expect.any(Number))
    expect(claims.at_hash).toEqual(expect.any(String))
    expect(claims.amr).toContain('oauth')
    const access = JSON.parse(
      Buffer.from(tokens.access_token.split('.')[1]!, 'base64url').toString(),
    ) as Record<string, unknown>
    expect(access).toMatchObject({
      client_id: confidential.client_id,
      scope: 'openid email profile',
      sub: claims.sub,
    })

    const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub)
    expect(info).toMatchObject({ sub: claims.sub, email: 'rp-user@example.com', name: 'Ada' })

    // Rotation: each refresh answers a new refresh token; presenting a spent one (whose child was
    // used) is refused and revokes the whole family.
    // A client's refresh token is the client's: the user-facing grant of POST /token refuses it
    // (it would otherwise mint tokens outside the client's registration), changing nothing.
    const direct = await server.request('POST', '/token?grant_type=refresh_token', {
      body: { refresh_token: tokens.refresh_token },
    })
    expect(direct.statusCode).toBe(400)
    expect(direct.json()).toMatchObject({ error_code: 'refresh_token_not_found' })
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!)
    expect(refreshed.access_token).not.toBe(tokens.access_token)
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
    const twice = await oidc.refreshTokenGrant(config, refreshed.refresh_token!)
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    })
    await expect(oidc.refreshTokenGrant(config, twice.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    })

    // A code presented twice is refused and ends the session it was exchanged for.
    /** An authorization URL of the confidential client with `verifier`'s challenge. */
    const authorizationUrl = async (scope: string) =>
      oidc.buildAuthorizationUrl(config, {
        redirect_uri: REDIRECT,
        scope,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      })
    const url2 = await authorizationUrl('openid email profile')
    const second = await consent(url2, 'approve')
    const once = await oidc.authorizationCodeGrant(config, second, { pkceCodeVerifier: verifier })
    await expect(
      oidc.authorizationCodeGrant(config, second, { pkceCodeVerifier: verifier }),
    ).rejects.toMatchObject({
      error: 'invalid_grant',
      error_description: 'Authorization code already used',
    })
    await expect(oidc.refreshTokenGrant(config, once.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    })

    // Consent is remembered: the next request is approved at once, unless prompt=consent.
    const again = await authorizationUrl('openid email')
    const remembered = await user.oauth.getAuthorizationDetails(await authorize(again))
    expect((remembered.data as { redirect_url: string }).redirect_url).toContain('code=')
    again.searchParams.set('prompt', 'consent')
    const forced = await user.oauth.getAuthorizationDetails(await authorize(again))
    expect(forced.data).toMatchObject({ scope: 'openid email' })

    // Grants: listed, then revoked (the client's tokens stop working).
    const grants = await user.oauth.listGrants()
    expect(grants.data?.map((g) => [g.client.id, g.scopes])).toEqual([
      [confidential.client_id, ['openid', 'email', 'profile']],
    ])
    const fresh = await oidc.authorizationCodeGrant(
      config,
      new URL(
        (
          await user.oauth.approveAuthorization(
            (forced.data as { authorization_id: string }).authorization_id,
            {
              skipBrowserRedirect: true,
            },
          )
        ).data!.redirect_url,
      ),
      { pkceCodeVerifier: verifier },
    )
    const revoked = await user.oauth.revokeGrant({ clientId: confidential.client_id })
    expect(revoked.error).toBeNull()
    expect((await user.oauth.listGrants()).data).toEqual([])
    await expect(oidc.refreshTokenGrant(config, fresh.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    })
    // The access token of the revoked grant is refused too (its session is gone).
    const revokedInfo = await fetch(`${issuer}/oauth/userinfo`, {
      headers: { authorization: `Bearer ${fresh.access_token}` },
    })
    expect(revokedInfo.status).toBe(403)
    const gone = await user.oauth.revokeGrant({ clientId: confidential.client_id })
    expect(gone.error).toMatchObject({ status: 404, code: 'oauth_consent_not_found' })
  })

  it('serves @gatehouse/oauth2: discovery, PKCE + nonce, consent, ID token, userinfo, refresh', async () => {
    const client = await Client.discover(
      issuer,
      confidential.client_id,
      confidential.client_secret,
      { redirect_uri: REDIRECT, requirePkce: true },
    )
    expect(client.options.authorizeUrl).toBe(`${issuer}/oauth/authorize`)
    const { code_verifier, code_challenge, code_challenge_method } = pkce()
    const state = crypto.randomUUID()
    const nonce = crypto.randomUUID()
    const url = client.authCode.authorizeUrl({
      scope: 'openid email profile',
      prompt: 'consent',
      state,
      nonce,
      code_challenge,
      code_challenge_method,
    })
    const callback = await consent(new URL(url), 'approve')
    const token = await client.authCode.getTokenFromCallback(callback.href, {
      state,
      nonce,
      codeVerifier: code_verifier,
    })
    // The ID token's signature (the server's JWKS), iss, aud, nonce, at_hash, exp and iat.
    const claims = await token.idToken({ nonce })
    expect(claims).toMatchObject({
      iss: issuer,
      aud: confidential.client_id,
      nonce,
      email: 'rp-user@example.com',
      name: 'Ada',
    })
    const profile = await client.userinfo(token, { expectedSubject: claims.sub })
    expect([profile.sub, profile.email]).toEqual([claims.sub, 'rp-user@example.com'])
    const refreshed = await token.refresh()
    expect(refreshed.refreshToken).toEqual(expect.any(String))
    expect(refreshed.refreshToken).not.toBe(token.refreshToken)
    expect(refreshed.params.scope).toBe('openid email profile')
    const again = await client.userinfo(refreshed, { expectedSubject: claims.sub })
    expect(again.name).toBe('Ada')
    // An ID token for another nonce is refused.
    await expect(token.idToken({ nonce: 'other' })).rejects.toMatchObject({
      code: 'invalid_id_token',
    })
    await user.oauth.revokeGrant({ clientId: confidential.client_id })
  })

  it('registers a client dynamically with @gatehouse/oauth2, then signs in through it', async () => {
    const { client, registration } = await Client.register(issuer, {
      client_name: 'Registered',
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'client_secret_post',
    })
    expect(registration).toMatchObject({
      client_type: 'confidential',
      registration_type: 'dynamic',
      client_secret_expires_at: 0,
    })
    const { code_verifier, code_challenge, code_challenge_method } = pkce()
    const state = crypto.randomUUID()
    const url = client.authCode.authorizeUrl({
      scope: 'openid email',
      state,
      nonce: 'n-1',
      code_challenge,
      code_challenge_method,
    })
    const callback = await consent(new URL(url), 'approve')
    const token = await client.authCode.getTokenFromCallback(callback.href, {
      state,
      nonce: 'n-1',
      codeVerifier: code_verifier,
    })
    expect(await token.idToken({ nonce: 'n-1' })).toMatchObject({ aud: client.id, nonce: 'n-1' })
    expect((await token.refresh()).token).toEqual(expect.any(String))
    // Registered for client_secret_post: the same credentials in a Basic header are refused.
    const basic = await fetch(`${issuer}/oauth/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.id}:${client.secret ?? ''}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'x' }),
    })
    expect(basic.status).toBe(401)
    expect(await basic.json()).toMatchObject({ error: 'invalid_client' })
  })

  it('takes a user through the consent page in Chromium, back to the client with code, state and iss', async () => {
    const [{ launchChromium }, { bundleAuthJs }] = await Promise.all([
      import('@gatehouse/testing'),
      import('../support/webauthn-page.js'),
    ])
    authJsBundle = await bundleAuthJs()
    const callbackUrl = `${site.url}/callback`
    const created = await admin.oauth.createClient({
      client_name: 'Browser app',
      redirect_uris: [callbackUrl],
    })
    const browserClient = created.data as { client_id: string; client_secret: string }
    const client = await Client.discover(
      issuer,
      browserClient.client_id,
      browserClient.client_secret,
      { redirect_uri: callbackUrl },
    )
    const { code_verifier, code_challenge, code_challenge_method } = pkce()
    const state = crypto.randomUUID()
    const url = client.authCode.authorizeUrl({
      scope: 'openid email',
      state,
      nonce: 'browser-nonce',
      code_challenge,
      code_challenge_method,
    })
    const browser = await launchChromium()
    try {
      const page = await browser.newPage()
      await page.goto(url)
      await page.getByLabel('Email').fill('rp-user@example.com')
      await page.getByLabel('Password').fill('secret123')
      await page.getByRole('button', { name: 'Sign in' }).click()
      await expect
        .poll(() => page.getByRole('heading').textContent())
        .toBe('Browser app asks for: openid email')
      await page.getByRole('button', { name: 'Allow' }).click()
      await page.waitForURL((u) => u.href.startsWith(callbackUrl))
      const landed = new URL(page.url())
      expect(landed.searchParams.get('state')).toBe(state)
      expect(landed.searchParams.get('iss')).toBe(issuer)
      expect(landed.searchParams.get('code')).toEqual(expect.any(String))
      const token = await client.authCode.getTokenFromCallback(landed.href, {
        state,
        nonce: 'browser-nonce',
        codeVerifier: code_verifier,
      })
      expect(await token.idToken({ nonce: 'browser-nonce' })).toMatchObject({
        email: 'rp-user@example.com',
      })
    } finally {
      await browser.close()
    }
  })

  it('lets a public native client use a loopback redirect on any port, with PKCE alone', async () => {
    const verifier = oidc.randomPKCECodeVerifier()
    const config = new oidc.Configuration(
      {
        issuer,
        token_endpoint: `${issuer}/oauth/token`,
        authorization_endpoint: `${issuer}/oauth/authorize`,
      },
      publicClient.client_id,
      undefined,
      oidc.None(),
    )
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the test server is plain HTTP on loopback
    oidc.allowInsecureRequests(config)
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: 'http://127.0.0.1:53123/callback',
      scope: 'email',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    })
    const callback = await consent(url, 'approve')
    expect(callback.origin).toBe('http://127.0.0.1:53123')
    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
    })
    expect(tokens.id_token).toBeUndefined()
    expect(tokens.scope).toBe('email')
    // A wrong verifier is refused.
    const other = await consent(url, 'approve')
    await expect(
      oidc.authorizationCodeGrant(config, other, {
        pkceCodeVerifier: oidc.randomPKCECodeVerifier(),
      }),
    ).rejects.toMatchObject({
      error: 'invalid_grant',
      error_description: 'PKCE verification failed',
    })
  })

  it('refuses wrong redirects, missing PKCE, denied consent, wrong secrets and unknown ids', async () => {
    const base = `${issuer}/oauth/authorize?client_id=${confidential.client_id}`
    const wrong = await fetch(
      `${base}&redirect_uri=${encodeURIComponent('https://evil.example/cb')}`,
      {
        redirect: 'manual',
      },
    )
    expect(wrong.status).toBe(400)
    expect(await wrong.json()).toMatchObject({
      error_code: 'validation_failed',
      msg: 'invalid redirect_uri',
    })

    const noPkce = await fetch(`${base}&redirect_uri=${encodeURIComponent(REDIRECT)}&state=s1`, {
      redirect: 'manual',
    })
    expect(noPkce.status).toBe(302)
    const refused = new URL(noPkce.headers.get('location') ?? '')
    expect(refused.origin + refused.pathname).toBe(REDIRECT)
    expect(Object.fromEntries(refused.searchParams)).toMatchObject({
      error: 'invalid_request',
      error_description: 'PKCE flow requires both code_challenge and code_challenge_method',
      state: 's1',
      iss: issuer,
    })

    const challenge = await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier())
    const ok = `${base}&redirect_uri=${encodeURIComponent(REDIRECT)}&state=s2&code_challenge=${challenge}&code_challenge_method=S256`
    const denied = await consent(new URL(ok), 'deny')
    expect(Object.fromEntries(denied.searchParams)).toMatchObject({
      error: 'access_denied',
      state: 's2',
    })

    const badSecret = await fetch(`${issuer}/oauth/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${confidential.client_id}:nope`).toString('base64')}`,
      },
      body: 'grant_type=authorization_code&code=x&code_verifier=y',
    })
    expect(badSecret.status).toBe(401)
    expect(await badSecret.json()).toEqual({
      error: 'invalid_client',
      error_description: 'Client authentication failed',
    })
    // The client authenticates with the method it registered (client_secret_basic here): its
    // right secret in the body is refused, as is no secret at all.
    for (const secret of [confidential.client_secret, '']) {
      const otherMethod = await fetch(`${issuer}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: 'x',
          client_id: confidential.client_id,
          client_secret: secret,
        }),
      })
      expect(otherMethod.status).toBe(401)
      expect(await otherMethod.json()).toMatchObject({ error: 'invalid_client' })
    }
    const badCode = await fetch(`${issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=authorization_code&code=nope&code_verifier=${'a'.repeat(43)}&client_id=${publicClient.client_id}`,
    })
    expect(badCode.status).toBe(400)
    expect(await badCode.json()).toMatchObject({ error: 'invalid_grant' })

    const session = (await user.getSession()).data.session!
    const foreign = await fetch(`${issuer}/oauth/authorizations/nope`, {
      headers: { authorization: `Bearer ${session.access_token}`, origin: 'https://evil.example' },
    })
    expect(foreign.status).toBe(400)
    expect(await foreign.json()).toMatchObject({ msg: 'unauthorized request origin' })

    const unknown = await user.oauth.getAuthorizationDetails('nope')
    expect(unknown.error).toMatchObject({ status: 404, code: 'oauth_authorization_not_found' })

    // Hostile ids are refused by the route's schema, never reaching the database: 404 with a code.
    const overlong = await fetch(`${issuer}/oauth/authorizations/${'x'.repeat(2000)}`, {
      headers: { authorization: `Bearer ${session.access_token}` },
    })
    expect(overlong.status).toBe(414) // Fastify's bound on a path parameter's length
    for (const id of ['a%00b', "a'or'1", 'a.b', '%E2%80%AE']) {
      for (const [method, path] of [
        ['GET', `/oauth/authorizations/${id}`],
        ['POST', `/oauth/authorizations/${id}/consent`],
        ['GET', `/oauth/authorizations/${id}/login_required`],
      ] as const) {
        const res = await fetch(`${issuer}${path}`, {
          method,
          redirect: 'manual',
          headers: {
            authorization: `Bearer ${session.access_token}`,
            'content-type': 'application/json',
          },
          ...(method === 'POST' ? { body: '{"action":"approve"}' } : {}),
        })
        expect(res.status, `${method} ${path.slice(0, 60)}`).toBe(404)
        expect(await res.json()).toMatchObject({
          error_code: 'validation_failed',
          msg: 'authorization not found',
        })
      }
    }
  })

  it('lets an authorization expire after OAUTH_SERVER_AUTHORIZATION_TTL', async () => {
    const challenge = await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier())
    const id = await authorize(
      new URL(
        `${issuer}/oauth/authorize?client_id=${confidential.client_id}&redirect_uri=${encodeURIComponent(REDIRECT)}&code_challenge=${challenge}&code_challenge_method=S256`,
      ),
    )
    await server.app.db.query(
      `UPDATE oauth_authorizations SET expires_at = created_at + interval '1 millisecond'
       WHERE authorization_id = $1`,
      [id],
    )
    const expired = await user.oauth.getAuthorizationDetails(id)
    expect(expired.error).toMatchObject({ status: 404, code: 'oauth_authorization_not_found' })
  })

  it('answers prompt=none with login_required or consent_required, and prompt=login after a fresh sign-in only', async () => {
    const created = await admin.oauth.createClient({
      client_name: 'Prompted',
      redirect_uris: [REDIRECT],
    })
    const { client_id } = created.data as { client_id: string }
    const challenge = await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier())
    const request = (prompt: string) =>
      new URL(
        `${issuer}/oauth/authorize?${new URLSearchParams({
          client_id,
          redirect_uri: REDIRECT,
          scope: 'email',
          state: 'st',
          code_challenge: challenge,
          code_challenge_method: 'S256',
          prompt,
        }).toString()}`,
      )

    const mixed = await fetch(request('none consent'), { redirect: 'manual' })
    expect(Object.fromEntries(new URL(mixed.headers.get('location') ?? '').searchParams)).toEqual({
      error: 'invalid_request',
      error_description: 'prompt=none cannot be combined with other values',
      state: 'st',
      iss: issuer,
    })

    // Nobody signed in: the consent page (told prompt=none) sends the browser on to end the
    // request with login_required.
    const anonymous = await fetch(request('none'), { redirect: 'manual' })
    const page = new URL(anonymous.headers.get('location') ?? '')
    expect(page.searchParams.get('prompt')).toBe('none')
    const endUrl = `${issuer}/oauth/authorizations/${page.searchParams.get('authorization_id') ?? ''}/login_required`
    const ended = await fetch(endUrl, { redirect: 'manual' })
    expect(ended.status).toBe(302)
    const loginRequired = new URL(ended.headers.get('location') ?? '')
    expect(loginRequired.origin + loginRequired.pathname).toBe(REDIRECT)
    expect(Object.fromEntries(loginRequired.searchParams)).toMatchObject({
      error: 'login_required',
      state: 'st',
      iss: issuer,
    })
    expect((await fetch(endUrl, { redirect: 'manual' })).status).toBe(404)
    // Only an unopened prompt=none request ends so.
    const other = await authorize(request('consent'))
    const refusedEnd = await fetch(`${issuer}/oauth/authorizations/${other}/login_required`, {
      redirect: 'manual',
    })
    expect(refusedEnd.status).toBe(404)
    expect(await refusedEnd.json()).toMatchObject({ error_code: 'oauth_authorization_not_found' })

    // No consent on file: the consent page is answered with the error redirect, and the request
    // is over.
    const silent = await authorize(request('none'))
    const refused = await user.oauth.getAuthorizationDetails(silent)
    const location = new URL((refused.data as { redirect_url: string }).redirect_url)
    expect(location.origin + location.pathname).toBe(REDIRECT)
    expect(Object.fromEntries(location.searchParams)).toMatchObject({
      error: 'consent_required',
      state: 'st',
      iss: issuer,
    })
    const late = await user.oauth.approveAuthorization(silent, { skipBrowserRedirect: true })
    expect(late.error).toMatchObject({ status: 400, code: 'validation_failed' })

    // prompt=login: the session signed in before the request is not enough.
    const login = await authorize(request('login'))
    const stale = await user.oauth.getAuthorizationDetails(login)
    expect(stale.error).toMatchObject({ status: 400, code: 'reauthentication_needed' })
    const signIn = await user.signInWithPassword({
      email: 'rp-user@example.com',
      password: 'secret123',
    })
    expect(signIn.error).toBeNull()
    const fresh = await user.oauth.getAuthorizationDetails(login)
    expect(fresh.data).toMatchObject({ authorization_id: login, scope: 'email' })
    const approved = await user.oauth.approveAuthorization(login, { skipBrowserRedirect: true })
    expect(new URL(approved.data!.redirect_url).searchParams.get('code')).toEqual(
      expect.any(String),
    )

    // With the consent on file, prompt=none is answered with a code at once.
    const remembered = await user.oauth.getAuthorizationDetails(await authorize(request('none')))
    const code = new URL((remembered.data as { redirect_url: string }).redirect_url)
    expect(code.searchParams.get('code')).toEqual(expect.any(String))
    expect(code.searchParams.get('error')).toBeNull()
  })
})
