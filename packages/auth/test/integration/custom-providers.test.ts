import { createHash } from 'node:crypto'
import type { GoTrueClient } from '@supabase/auth-js'
import { GoTrueAdminApi } from '@supabase/auth-js'
import { getFreePort } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../helpers.js'
import { authJsClient, memoryStorage } from '../support/auth-js.js'
import { Browser } from '../support/browser.js'
import { FakeProvider, type ProviderDescription } from '../support/fake-provider.js'
import { startIdTokenIssuer, type TestIdTokenIssuer } from '../support/id-token-issuer.js'
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.js'

/**
 * Custom OAuth/OIDC providers (issue 27 item 3) through unchanged `@supabase/auth-js`:
 * `admin.customProviders.*`, then `signInWithOAuth({ provider: 'custom:…' })` with PKCE against a
 * real OIDC issuer (`oidc-provider`) and a plain OAuth 2.0 fake, and `signInWithIdToken` with a
 * custom OIDC provider; and the refusals.
 */

/** A plain OAuth 2.0 provider (PKCE) whose user-info endpoint names the user `id`. */
const ACME: ProviderDescription = {
  name: 'acme',
  pkce: true,
  url: (origin) => origin,
  authorizePath: '/oauth/authorize',
  tokenPath: '/oauth/token',
  clientAuth: 'body',
  userinfo: {
    '/api/me': ({ account: a }) => ({
      body: {
        id: a.id,
        mail: a.email,
        mail_verified: a.emailVerified,
        display_name: a.name,
        team: 'blue',
        internal: 'not copied',
      },
    }),
  },
}

const SITE = 'http://localhost:3000'

describe('custom OAuth/OIDC providers', () => {
  let server: TestServer
  let oidc: TestOidcProvider
  let acme: FakeProvider
  let native: TestIdTokenIssuer
  let admin: GoTrueAdminApi
  let origins: string[] = []

  beforeAll(async () => {
    const port = await getFreePort()
    const redirectUri = `http://127.0.0.1:${String(port)}/callback`
    oidc = await startOidcProvider(redirectUri, {
      sub: 'corp-1',
      email: 'ada@corp.example',
      emailVerified: true,
      name: 'Ada Lovelace',
    })
    acme = await FakeProvider.start(ACME, {
      id: '4242',
      email: 'grace@acme.example',
      emailVerified: true,
      name: 'Grace Hopper',
      avatar: '',
    })
    native = await startIdTokenIssuer({ clientId: 'custom-ios' })
    server = await startTestServer('custom_providers', {
      AUTHSVC_API_EXTERNAL_URL: `http://127.0.0.1:${String(port)}`,
      AUTHSVC_SECURITY_ALLOW_PRIVATE_URLS: 'true',
      AUTHSVC_CUSTOM_OAUTH_MAX_PROVIDERS: '4',
    })
    await server.app.server.listen({ host: '127.0.0.1', port })
    server.url = `http://127.0.0.1:${String(port)}`
    origins = [server.url, oidc.issuer, acme.origin]
    admin = new GoTrueAdminApi({
      url: server.url,
      headers: { Authorization: `Bearer ${server.serviceKey}` },
    })
  })

  afterAll(async () => {
    await server.close()
    await Promise.all([oidc.stop(), acme.stop(), native.stop()])
  })

  /** A PKCE auth-js client with its own storage. */
  function pkceClient(): GoTrueClient {
    return authJsClient(server.url, {
      flowType: 'pkce',
      persistSession: true,
      storage: memoryStorage(),
    })
  }

  /** `signInWithOAuth` with PKCE, the browser through the provider, then the code exchanged. */
  async function signInWith(provider: `custom:${string}`) {
    const auth = pkceClient()
    const started = await auth.signInWithOAuth({
      provider,
      options: { skipBrowserRedirect: true, redirectTo: `${SITE}/done` },
    })
    expect(started.error).toBeNull()
    const landing = await new Browser(origins).open(started.data.url ?? '')
    const code = landing.url.searchParams.get('code')
    if (code === null) return { landing, exchanged: undefined }
    return { landing, exchanged: await auth.exchangeCodeForSession(code) }
  }

  it('manages providers through admin.customProviders, never answering the client secret', async () => {
    const created = await admin.customProviders.createProvider({
      provider_type: 'oidc',
      identifier: 'custom:corp',
      name: 'Corp SSO',
      client_id: oidc.clients.google.id,
      client_secret: oidc.clients.google.secret,
      issuer: oidc.issuer,
      scopes: ['email', 'profile'],
      acceptable_client_ids: ['custom-ios'],
    })
    expect(created.error).toBeNull()
    expect(created.data).toMatchObject({
      provider_type: 'oidc',
      identifier: 'custom:corp',
      name: 'Corp SSO',
      client_id: oidc.clients.google.id,
      scopes: ['openid', 'email', 'profile'],
      pkce_enabled: true,
      enabled: true,
      issuer: oidc.issuer,
      discovery_document: {
        issuer: oidc.issuer,
        authorization_endpoint: `${oidc.issuer}/protocol/openid-connect/auth`,
        jwks_uri: `${oidc.issuer}/protocol/openid-connect/certs`,
      },
    })
    expect(JSON.stringify(created.data)).not.toContain(oidc.clients.google.secret)
    const { rows } = await server.app.db.query<{ client_secret: string }>(
      `SELECT client_secret FROM ${server.app.db.t.customOauthProviders} WHERE identifier = $1`,
      ['custom:corp'],
    )
    expect(rows[0]?.client_secret).toMatch(/^gh1:/)
    expect(rows[0]?.client_secret).not.toContain(oidc.clients.google.secret)

    const plain = await admin.customProviders.createProvider({
      provider_type: 'oauth2',
      identifier: 'custom:acme',
      name: 'Acme',
      client_id: acme.clientId,
      client_secret: acme.secret,
      authorization_url: `${acme.origin}/oauth/authorize`,
      token_url: `${acme.origin}/oauth/token`,
      userinfo_url: `${acme.origin}/api/me`,
      scopes: ['read_user'],
      attribute_mapping: { email: 'mail', name: 'display_name', nickname: 'team' },
      // Upstream's field, not yet in auth-js 2.105's types.
      ...{ custom_claims_allowlist: ['team'] },
    })
    expect(plain.error).toBeNull()
    expect(plain.data).toMatchObject({ provider_type: 'oauth2', scopes: ['read_user'] })

    const listed = await admin.customProviders.listProviders()
    expect(listed.data.providers.map((p) => p.identifier).sort()).toEqual([
      'custom:acme',
      'custom:corp',
    ])
    const oauth2Only = await admin.customProviders.listProviders({ type: 'oauth2' })
    expect(oauth2Only.data.providers.map((p) => p.identifier)).toEqual(['custom:acme'])

    const got = await admin.customProviders.getProvider('custom:acme')
    expect(got.data).toMatchObject({ identifier: 'custom:acme', name: 'Acme' })
    const updated = await admin.customProviders.updateProvider('custom:acme', { name: 'Acme Inc' })
    expect(updated.error).toBeNull()
    expect(updated.data).toMatchObject({ name: 'Acme Inc', client_id: acme.clientId })

    const temporary = await admin.customProviders.createProvider({
      provider_type: 'oauth2',
      identifier: 'custom:temp',
      name: 'Temp',
      client_id: 'x',
      client_secret: 'y',
      authorization_url: `${acme.origin}/a`,
      token_url: `${acme.origin}/t`,
      userinfo_url: `${acme.origin}/u`,
    })
    expect(temporary.error).toBeNull()
    expect((await admin.customProviders.deleteProvider('custom:temp')).error).toBeNull()
    const gone = await admin.customProviders.getProvider('custom:temp')
    expect(gone.error).toMatchObject({ status: 404, code: 'custom_provider_not_found' })
  })

  it('signs in with a custom OIDC provider through signInWithOAuth with PKCE', async () => {
    const { landing, exchanged } = await signInWith('custom:corp')
    expect(landing.url.origin + landing.url.pathname).toBe(`${SITE}/done`)
    expect(exchanged?.error).toBeNull()
    expect(exchanged?.data.user?.email).toBe('ada@corp.example')
    expect(exchanged?.data.user?.app_metadata).toEqual({
      provider: 'custom:corp',
      providers: ['custom:corp'],
    })
    expect(exchanged?.data.user?.identities?.[0]).toMatchObject({
      provider: 'custom:corp',
      id: 'corp-1',
      identity_data: { sub: 'corp-1', iss: oidc.issuer, email: 'ada@corp.example' },
    })
  })

  it('signs in with a plain OAuth 2.0 custom provider, its attribute mapping and allowlist applied', async () => {
    const { exchanged } = await signInWith('custom:acme')
    expect(exchanged?.error).toBeNull()
    expect(exchanged?.data.user?.email).toBe('grace@acme.example')
    const identity = exchanged?.data.user?.identities?.[0]
    expect(identity).toMatchObject({
      provider: 'custom:acme',
      id: '4242',
      identity_data: {
        sub: '4242',
        name: 'Grace Hopper',
        nickname: 'blue',
        custom_claims: { team: 'blue' },
      },
    })
    expect(JSON.stringify(identity?.identity_data)).not.toContain('not copied')
  })

  it('signs in with signInWithIdToken and a custom OIDC provider', async () => {
    const issuer = await admin.customProviders.createProvider({
      provider_type: 'oidc',
      identifier: 'custom:native',
      name: 'Native',
      client_id: 'custom-ios',
      client_secret: 'unused-secret',
      issuer: native.issuer,
      discovery_url: `${native.issuer}/.well-known/openid-configuration`,
    })
    expect(issuer.error).toBeNull()
    expect(issuer.data).toMatchObject({
      discovery_url: `${native.issuer}/.well-known/openid-configuration`,
    })
    const who = {
      sub: 'native-1',
      email: 'native@corp.example',
      emailVerified: true,
      name: 'Native',
    }
    const sha = createHash('sha256').update('raw-nonce').digest('hex')
    const { idToken } = await native.signIn(who, sha)
    const { data, error } = await authJsClient(server.url).signInWithIdToken({
      provider: 'custom:native',
      token: idToken,
      nonce: 'raw-nonce',
    })
    expect(error).toBeNull()
    expect(data.user).toMatchObject({
      email: who.email,
      app_metadata: { provider: 'custom:native', providers: ['custom:native'] },
    })
  })

  it('refuses a disabled provider, and a user outside the allowed email domains', async () => {
    await admin.customProviders.updateProvider('custom:acme', { enabled: false })
    const auth = authJsClient(server.url)
    const started = await auth.signInWithOAuth({
      provider: 'custom:acme',
      options: { skipBrowserRedirect: true },
    })
    const res = await fetch(started.data.url ?? '', { redirect: 'manual' })
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({
      error_code: 'validation_failed',
      msg: 'Unsupported provider: custom provider custom:acme is disabled',
    })
    await admin.customProviders.updateProvider('custom:acme', { enabled: true })

    const restricted = await admin.customProviders.updateProvider('custom:acme', {
      allowed_email_domains: ['corp.example'],
    } as Parameters<typeof admin.customProviders.updateProvider>[1])
    expect(restricted.data).toMatchObject({ allowed_email_domains: ['corp.example'] })
    const { landing, exchanged } = await signInWith('custom:acme')
    expect(exchanged).toBeUndefined()
    expect(landing.url.searchParams.get('error_code')).toBe('email_address_not_authorized')

    const { idToken } = await native.signIn(
      { sub: 'native-2', email: 'other@elsewhere.example', emailVerified: true, name: 'X' },
      undefined,
    )
    await admin.customProviders.updateProvider('custom:native', {
      allowed_email_domains: ['corp.example'],
    } as Parameters<typeof admin.customProviders.updateProvider>[1])
    const refused = await authJsClient(server.url).signInWithIdToken({
      provider: 'custom:native',
      token: idToken,
    })
    expect(refused.error).toMatchObject({ code: 'email_address_not_authorized' })

    const notOidc = await server.request('POST', '/token?grant_type=id_token', {
      body: { provider: 'custom:acme', id_token: idToken },
    })
    expect(notOidc.json()).toMatchObject({
      error_code: 'validation_failed',
      msg: 'Provider "custom:acme" is not an OIDC provider',
    })
  })

  it('refuses bad bodies, bad identifiers, taken identifiers and more providers than allowed', async () => {
    const create = (body: Record<string, unknown>) =>
      server.request('POST', '/admin/custom-providers', { token: server.serviceKey, body })
    const base = {
      provider_type: 'oauth2',
      identifier: 'custom:other',
      name: 'Other',
      client_id: 'id',
      client_secret: 'secret',
      authorization_url: `${acme.origin}/a`,
      token_url: `${acme.origin}/t`,
      userinfo_url: `${acme.origin}/u`,
    }
    const cases: [Record<string, unknown>, string, string][] = [
      [
        { ...base, provider_type: 'saml' },
        'validation_failed',
        "provider_type must be either 'oauth2' or 'oidc'",
      ],
      [
        { ...base, identifier: 'other' },
        'validation_failed',
        "identifier must start with 'custom:' prefix, e.g. 'custom:other'",
      ],
      [
        { ...base, identifier: 'custom:Bad_Name' },
        'validation_failed',
        "identifier must be 'custom:' and 1 to 43 lowercase letters, digits or inner hyphens",
      ],
      [{ ...base, client_secret: '' }, 'validation_failed', 'client_secret is required'],
      [
        { ...base, token_url: '' },
        'validation_failed',
        'token_url is required for OAuth2 providers',
      ],
      [
        { ...base, provider_type: 'oidc' },
        'validation_failed',
        'issuer is required for OIDC providers',
      ],
      [
        { ...base, authorization_params: { state: 'x' } },
        'validation_failed',
        'Cannot override reserved OAuth parameter: state',
      ],
      [
        { ...base, attribute_mapping: { role: 'groups' } },
        'validation_failed',
        'Cannot map to protected system field: role',
      ],
      [{ ...base, token_url: 'ftp://idp.example/t' }, 'validation_failed', 'URL must use HTTPS'],
      [
        { ...base, allowed_email_domains: ['not a domain'] },
        'validation_failed',
        'allowed_email_domains: "not a domain" is not a domain name',
      ],
      [
        { ...base, identifier: 'custom:acme' },
        'conflict',
        'A custom OAuth provider with this identifier already exists',
      ],
    ]
    for (const [body, code, msg] of cases) {
      const res = await create(body)
      expect(res.statusCode, msg).toBe(400)
      expect(res.json(), msg).toMatchObject({ error_code: code, msg })
    }
    // An OIDC provider is discovered when created: at discovery_url when given.
    const oidcBody = {
      provider_type: 'oidc',
      identifier: 'custom:elsewhere',
      name: 'Elsewhere',
      client_id: 'id',
      client_secret: 'secret',
      issuer: oidc.issuer,
    }
    const missing = await create({ ...oidcBody, discovery_url: `${oidc.issuer}/nope.json` })
    expect(missing.statusCode).toBe(400)
    expect(missing.json().msg).toMatch(
      new RegExp(`^OIDC discovery from "${oidc.issuer}/nope\\.json" failed: `),
    )
    const wrongIssuer = await create({ ...oidcBody, issuer: `${oidc.issuer}/other` })
    expect(wrongIssuer.json().msg).toMatch(
      /^OIDC discovery from ".*\/other\/\.well-known\/openid-configuration" failed: /,
    )
    // Three exist; the fourth is the last one allowed.
    expect((await create(base)).statusCode).toBe(201)
    const over = await create({ ...base, identifier: 'custom:fifth' })
    expect(over.statusCode).toBe(400)
    expect(over.json()).toMatchObject({
      error_code: 'over_custom_provider_quota',
      msg: 'Maximum number of custom OAuth/OIDC providers reached',
    })
    const path = await server.request('GET', '/admin/custom-providers/acme', {
      token: server.serviceKey,
    })
    expect(path.json()).toMatchObject({
      error_code: 'validation_failed',
      msg: "identifier must start with 'custom:' prefix, e.g. 'custom:acme'",
    })
    const notAdmin = await server.request('GET', '/admin/custom-providers')
    expect(notAdmin.statusCode).toBe(401)
  })
})

describe('custom providers without SECURITY_ALLOW_PRIVATE_URLS, or disabled', () => {
  let strict: TestServer
  let disabled: TestServer

  beforeAll(async () => {
    strict = await startTestServer('custom_providers_strict', {
      AUTHSVC_API_EXTERNAL_URL: 'http://127.0.0.1:9999',
    })
    disabled = await startTestServer('custom_providers_off', {
      AUTHSVC_CUSTOM_OAUTH_ENABLED: 'false',
    })
  })
  afterAll(async () => {
    await strict.close()
    await disabled.close()
  })

  it('refuses issuers and endpoints on private, loopback and link-local addresses', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ provider_type: 'oidc', issuer: 'http://127.0.0.1:8080' }, 'URL must use HTTPS'],
      [
        { provider_type: 'oidc', issuer: 'https://127.0.0.1:8443' },
        'URL cannot resolve to loopback addresses',
      ],
      [
        { provider_type: 'oidc', issuer: 'https://localhost' },
        'URL cannot resolve to loopback addresses',
      ],
      [
        { provider_type: 'oidc', issuer: 'https://[::ffff:10.0.0.1]' },
        'URL cannot resolve to private network addresses',
      ],
      [
        {
          provider_type: 'oauth2',
          authorization_url: 'https://169.254.169.254/latest/meta-data',
          token_url: 'https://169.254.169.254/t',
          userinfo_url: 'https://169.254.169.254/u',
        },
        'URL cannot resolve to link-local addresses',
      ],
    ]
    for (const [fields, msg] of cases) {
      const res = await strict.request('POST', '/admin/custom-providers', {
        token: strict.serviceKey,
        body: { identifier: 'custom:x', name: 'X', client_id: 'id', client_secret: 's', ...fields },
      })
      expect(res.statusCode, msg).toBe(400)
      expect(res.json(), msg).toMatchObject({ error_code: 'validation_failed', msg })
    }
    expect(
      (await strict.request('GET', '/admin/custom-providers', { token: strict.serviceKey })).json(),
    ).toMatchObject({ providers: [] })
  })

  it('answers 404 feature_disabled with CUSTOM_OAUTH_ENABLED off, and refuses custom: sign-ins', async () => {
    const res = await disabled.request('GET', '/admin/custom-providers', {
      token: disabled.serviceKey,
    })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toMatchObject({
      error_code: 'feature_disabled',
      msg: 'Custom OAuth providers are disabled',
    })
    const authorize = await disabled.request('GET', '/authorize?provider=custom:corp')
    expect(authorize.json()).toMatchObject({
      error_code: 'validation_failed',
      msg: 'Unsupported provider: custom OAuth providers are disabled',
    })
    const grant = await disabled.request('POST', '/token?grant_type=id_token', {
      body: { provider: 'custom:corp', id_token: 'x.y.z' },
    })
    expect(grant.json()).toMatchObject({
      error_code: 'validation_failed',
      msg: 'Custom OAuth providers are disabled',
    })
  })
})
