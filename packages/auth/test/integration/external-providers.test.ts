import { FakeClock, getFreePort, waitFor } from '@gatehouse/testing'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { MailMessage } from '@gatehouse/auth'
import { startTestServer, type TestServer } from '../helpers.js'
import { Browser } from '../support/browser.js'
import { FakeProvider, type FakeAccount } from '../support/fake-provider.js'
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.js'
import { DESCRIPTIONS } from '../support/provider-descriptions.js'
import { authJsClient, memoryStorage } from '../support/auth-js.js'

const SITE = 'http://localhost:3000'
let serial = 1000

/** A fresh account with a unique id and email. */
function account(overrides: Partial<FakeAccount> = {}): FakeAccount {
  serial += 1
  return {
    id: String(serial),
    email: `user${String(serial)}@example.com`,
    emailVerified: true,
    name: 'Ada Lovelace',
    avatar: `https://avatars.example/${String(serial)}.png`,
    ...overrides,
  }
}

describe('sign-in with external providers', () => {
  const fakes = new Map<string, FakeProvider>()
  const mails: MailMessage[] = []
  const clock = new FakeClock(Date.now())
  let oidc: TestOidcProvider
  let server: TestServer
  let origins: string[] = []

  /** A browser with an empty cookie jar: every journey logs in afresh. */
  const browser = {
    open: (url: string, options?: Parameters<Browser['open']>[1]) =>
      new Browser(origins).open(url, options),
  }

  function fake(name: string): FakeProvider {
    const found = fakes.get(name)
    if (found === undefined) throw new Error(`no fake ${name}`)
    return found
  }

  /** Starts a sign-in at `/authorize` and follows it to the site. */
  function signIn(provider: string, query = '') {
    return browser.open(`${server.url}/authorize?provider=${provider}${query}`)
  }

  /** A confirmed email-and-password user and its session (MAILER_AUTOCONFIRM is off here). */
  async function confirmedUser(email: string) {
    const created = await server.request('POST', '/admin/users', {
      token: server.serviceKey,
      body: { email, password: 'password123', email_confirm: true },
    })
    expect(created.statusCode).toBe(200)
    const res = await server.request('POST', '/token?grant_type=password', {
      body: { email, password: 'password123' },
    })
    expect(res.statusCode).toBe(200)
    return res.json()
  }

  async function userOf(accessToken: string) {
    const res = await server.request('GET', '/user', { token: accessToken })
    expect(res.statusCode).toBe(200)
    return res.json()
  }

  beforeAll(async () => {
    const port = await getFreePort()
    const redirectUri = `http://127.0.0.1:${String(port)}/callback`
    for (const description of DESCRIPTIONS) {
      fakes.set(description.name, await FakeProvider.start(description, account()))
    }
    oidc = await startOidcProvider(redirectUri, {
      sub: 'kc-1',
      email: 'kc@example.com',
      emailVerified: true,
      name: 'Grace Hopper',
    })
    const env: Record<string, string> = {
      AUTHSVC_API_EXTERNAL_URL: `http://127.0.0.1:${String(port)}`,
      AUTHSVC_MAILER_AUTOCONFIRM: 'false',
      AUTHSVC_SECURITY_MANUAL_LINKING_ENABLED: 'true',
      // Figma does not say whether it verified an address; this server trusts it to.
      AUTHSVC_EXTERNAL_FIGMA_TRUST_EMAIL: 'true',
      AUTHSVC_MAILER_NOTIFICATIONS_IDENTITY_LINKED_ENABLED: 'true',
      AUTHSVC_MAILER_NOTIFICATIONS_IDENTITY_UNLINKED_ENABLED: 'true',
      AUTHSVC_EXTERNAL_KEYCLOAK_ENABLED: 'true',
      AUTHSVC_EXTERNAL_KEYCLOAK_CLIENT_ID: oidc.clients.keycloak.id,
      AUTHSVC_EXTERNAL_KEYCLOAK_SECRET: oidc.clients.keycloak.secret,
      AUTHSVC_EXTERNAL_KEYCLOAK_REDIRECT_URI: redirectUri,
      AUTHSVC_EXTERNAL_KEYCLOAK_URL: oidc.issuer,
      AUTHSVC_EXTERNAL_GOOGLE_ENABLED: 'true',
      AUTHSVC_EXTERNAL_GOOGLE_CLIENT_ID: oidc.clients.google.id,
      AUTHSVC_EXTERNAL_GOOGLE_SECRET: oidc.clients.google.secret,
      AUTHSVC_EXTERNAL_GOOGLE_REDIRECT_URI: redirectUri,
      AUTHSVC_EXTERNAL_GOOGLE_URL: oidc.issuer,
      AUTHSVC_EXTERNAL_LINKEDIN_OIDC_ENABLED: 'true',
      AUTHSVC_EXTERNAL_LINKEDIN_OIDC_CLIENT_ID: oidc.clients.linkedin_oidc.id,
      AUTHSVC_EXTERNAL_LINKEDIN_OIDC_SECRET: oidc.clients.linkedin_oidc.secret,
      AUTHSVC_EXTERNAL_LINKEDIN_OIDC_REDIRECT_URI: redirectUri,
      AUTHSVC_EXTERNAL_LINKEDIN_OIDC_URL: oidc.issuer,
    }
    for (const f of fakes.values()) Object.assign(env, f.env(redirectUri))
    server = await startTestServer('external', env, clock, {
      deps: {
        mailer: {
          send: (message) => {
            mails.push(message)
            return Promise.resolve()
          },
        },
      },
    })
    await server.app.server.listen({ host: '127.0.0.1', port })
    server.url = `http://127.0.0.1:${String(port)}`
    origins = [server.url, oidc.issuer, ...[...fakes.values()].map((f) => f.origin)]
  })

  afterAll(async () => {
    await server.close()
    await oidc.stop()
    for (const f of fakes.values()) await f.stop()
  })

  beforeEach(() => {
    clock.set(Date.now())
    mails.length = 0
  })

  it.each<[string, Record<string, unknown>]>([
    [
      'x',
      {
        user_name: 'ada',
        preferred_username: 'ada',
        custom_claims: { created_at: '2020-01-01T00:00:00.000Z' },
      },
    ],
    ['zoom', { full_name: 'Ada Lovelace', name: 'Ada Lovelace' }],
    [
      'fly',
      {
        full_name: 'Ada Lovelace',
        custom_claims: { organizations: [{ id: 'org-1', role: 'admin' }], scope: ['read'] },
      },
    ],
    ['kakao', { name: 'Ada', preferred_username: 'Ada', user_name: 'Ada' }],
    ['slack_oidc', { custom_claims: { 'https://slack.com/team_id': 'T0002' } }],
    [
      'vercel_marketplace',
      {
        name: 'Ada Lovelace',
        sub: expect.stringMatching(/^global_user_id:gu-\d+$/),
        provider_id: expect.stringMatching(/^global_user_id:gu-\d+$/),
      },
    ],
  ])('%s: maps its profile as upstream does', async (name, expected) => {
    const who = account()
    fake(name).account = who
    const landing = await signIn(name)
    const user = await userOf(landing.fragment.get('access_token') ?? '')
    const identity = (
      user.identities as { provider: string; identity_data: Record<string, unknown> }[]
    )[0]
    expect(identity?.provider).toBe(name)
    expect(identity?.identity_data).toMatchObject({
      email: who.email,
      email_verified: true,
      ...(name === 'fly' ? {} : { picture: who.avatar }),
      ...expected,
    })
  })

  it('zoom and kakao addresses the provider did not verify are unverified', async () => {
    for (const name of ['zoom', 'kakao']) {
      const who = account({ emailVerified: false })
      fake(name).account = who
      await signIn(name)
      const { rows } = await server.app.db.query<{ email_confirmed_at: Date | null }>(
        `SELECT email_confirmed_at FROM ${server.app.db.t.users} WHERE email = $1`,
        [who.email],
      )
      // An unverified address: the user is created unconfirmed (a confirmation mail is sent).
      expect(rows[0]?.email_confirmed_at ?? null).toBeNull()
    }
  })

  it('GET /settings reports every enabled provider', async () => {
    const res = await server.request('GET', '/settings')
    const external = res.json().external as Record<string, boolean>
    for (const name of [...fakes.keys(), 'keycloak', 'google', 'linkedin_oidc']) {
      expect(external[name]).toBe(true)
    }
    expect(external.email).toBe(true)
  })

  it.each([
    ...DESCRIPTIONS.map((d) => d.name).filter((n) => n !== 'spotify'),
    'keycloak',
    'google',
    'linkedin_oidc',
  ])('%s: authorize → provider login → callback → a session for a new user', async (name) => {
    const isOidc = name === 'keycloak' || name === 'google' || name === 'linkedin_oidc'
    const who = account()
    if (isOidc) {
      oidc.account = {
        sub: `oidc-${who.id}`,
        email: who.email,
        emailVerified: true,
        name: who.name,
      }
    } else {
      fake(name).account = who
    }
    const landing = await signIn(name, `&redirect_to=${encodeURIComponent(`${SITE}/welcome`)}`)
    expect(landing.url.origin + landing.url.pathname).toBe(`${SITE}/welcome`)
    const f = landing.fragment
    expect(f.get('error_description')).toBeNull()
    expect(f.get('token_type')).toBe('bearer')
    expect(f.get('provider_token')).not.toBe('')
    expect(Number(f.get('expires_in'))).toBe(3600)
    expect(Number(f.get('expires_at'))).toBeGreaterThan(clock.now() / 1000)
    expect(f.get('refresh_token')).toMatch(/^[a-z0-9]{12}$/)
    const user = await userOf(f.get('access_token') ?? '')
    expect(user.email).toBe(who.email)
    expect(user.email_confirmed_at).toEqual(expect.any(String))
    expect(user.app_metadata).toEqual({ provider: name, providers: [name] })
    expect(user.identities).toHaveLength(1)
    const identity = user.identities[0] as {
      provider: string
      identity_data: Record<string, unknown>
    }
    expect(identity.provider).toBe(name)
    expect(identity.identity_data).toMatchObject({ email: who.email, email_verified: true })
    expect(typeof identity.identity_data.provider_id).toBe('string')
    expect(identity.identity_data.sub).toBe(identity.identity_data.provider_id)
    expect(user.user_metadata.email).toBe(who.email)
    expect(typeof user.user_metadata.full_name).toBe('string')
  })

  it('spotify: its email never counts as verified, so a new user must confirm it first', async () => {
    const who = account()
    fake('spotify').account = who
    const landing = await signIn('spotify')
    expect(landing.fragment.get('error_code')).toBe('provider_email_needs_verification')
    expect(landing.fragment.get('error_description')).toBe(
      'Unverified email with spotify. A confirmation email has been sent to your spotify email',
    )
    expect(mails.map((m) => [m.kind, m.to])).toEqual([['confirmation', who.email]])
  })

  it('signs a known identity in again with its latest claims, to the same user', async () => {
    const who = account()
    fake('discord').account = who
    const first = await userOf((await signIn('discord')).fragment.get('access_token') ?? '')
    fake('discord').account = { ...who, name: 'Ada King' }
    const second = await userOf((await signIn('discord')).fragment.get('access_token') ?? '')
    expect(second.id).toBe(first.id)
    expect((second.identities[0] as { identity_data: { name: string } }).identity_data.name).toBe(
      'ada',
    )
    expect(second.identities).toHaveLength(1)
  })

  it('links the identity to the user holding its verified email, and mails the notification', async () => {
    const who = account()
    const existing = await confirmedUser(who.email)
    fake('github').account = who
    const landing = await signIn('github')
    const user = await userOf(landing.fragment.get('access_token') ?? '')
    expect(user.id).toBe(existing.user.id)
    expect(user.identities.map((i) => i.provider).sort()).toEqual(['email', 'github'])
    expect(user.app_metadata).toEqual({ provider: 'email', providers: ['email', 'github'] })
    expect(mails).toEqual([
      expect.objectContaining({
        kind: 'identity_linked_notification',
        to: who.email,
        provider: 'github',
      }),
    ])
  })

  it('never links by an unverified email: the sign-in is refused and the account untouched', async () => {
    const who = account({ emailVerified: false })
    const existing = await confirmedUser(who.email)
    fake('gitlab').account = who
    const landing = await signIn('gitlab')
    expect(landing.fragment.get('error')).toBe('invalid_request')
    expect(landing.fragment.get('error_code')).toBe('email_exists')
    const admin = await server.request('GET', `/admin/users/${existing.user.id}`, {
      token: server.serviceKey,
    })
    expect(admin.json().identities.map((i) => i.provider)).toEqual(['email'])
  })

  it('keeps a new user with an unverified email unconfirmed and sends a confirmation', async () => {
    const who = account({ emailVerified: false })
    fake('bitbucket').account = who
    const landing = await signIn('bitbucket')
    expect(landing.fragment.get('error')).toBe('access_denied')
    expect(landing.fragment.get('error_code')).toBe('provider_email_needs_verification')
    expect(mails.map((m) => [m.kind, m.to])).toEqual([['confirmation', who.email]])
    const list = await server.request('GET', '/admin/users?per_page=1000', {
      token: server.serviceKey,
    })
    const created = list.json().users.find((u) => u.email === who.email)
    expect(created?.email_confirmed_at).toBeUndefined()
    expect(created?.identities[0]?.provider).toBe('bitbucket')
  })

  it('passes a denied consent back as an error in the fragment (fake and oidc-provider)', async () => {
    fake('github').fault = 'deny'
    const landing = await signIn('github')
    expect(Object.fromEntries(landing.fragment)).toEqual({
      error: 'access_denied',
      error_code: 'bad_oauth_callback',
      error_description: 'The user denied the request',
      sb: '',
    })
    oidc.deny = true
    const kc = await signIn('keycloak')
    expect(kc.fragment.get('error')).toBe('access_denied')
    expect(kc.fragment.get('error_description')).toBe('End-User aborted interaction')
  })

  it('answers a missing, forged or expired state on SITE_URL with the error in the query', async () => {
    const forged = await fetch(`${server.url}/callback?code=abc&state=not-a-jwt`, {
      redirect: 'manual',
    })
    expect(forged.status).toBe(303)
    const at = new URL(forged.headers.get('location') ?? '')
    expect(at.origin).toBe(SITE)
    expect(Object.fromEntries(at.searchParams)).toEqual({
      error: 'invalid_request',
      error_code: 'bad_oauth_state',
      error_description: 'OAuth state parameter is invalid',
    })
    const missing = await server.request('GET', '/callback?code=abc')
    expect(new URL(missing.headers.location as string).searchParams.get('error_code')).toBe(
      'bad_oauth_callback',
    )
    const start = await fetch(`${server.url}/authorize?provider=github`, { redirect: 'manual' })
    const state = new URL(start.headers.get('location') ?? '').searchParams.get('state') ?? ''
    clock.advance(301_000)
    const expired = await server.request('GET', `/callback?code=abc&state=${state}`)
    expect(new URL(expired.headers.location as string).searchParams.get('error_description')).toBe(
      'OAuth state parameter has expired',
    )
  })

  it('refuses hostile states: unsigned (alg none), oversized, or a valid access token', async () => {
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')
    const exp = Math.floor(clock.now() / 1000) + 60
    const unsigned = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({
      exp,
      provider: 'github',
      referrer: 'https://evil.example/',
      flow_state_id: '',
      id: '00000000-0000-0000-0000-000000000000',
    })}.`
    const accessToken = (await confirmedUser(account().email)).access_token
    for (const state of [unsigned, 'x'.repeat(6000), accessToken]) {
      const res = await server.request('POST', '/callback', {
        body: `code=abc&state=${state}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      })
      expect(res.statusCode).toBe(303)
      const at = new URL(res.headers.location as string)
      expect(at.origin).toBe(SITE)
      expect(at.searchParams.get('error_code')).toBe('bad_oauth_state')
    }
  })

  it('refuses a replayed callback in the same browser: each state is completed once', async () => {
    fake('github').account = account()
    const same = new Browser(origins)
    const atCallback = await same.open(`${server.url}/authorize?provider=github`, {
      until: (url) => url.pathname === '/callback',
    })
    const first = await same.open(atCallback.url)
    expect(first.fragment.get('access_token')).toEqual(expect.any(String))
    const replay = await same.open(atCallback.url)
    expect(replay.status).toBe(303)
    expect(replay.url.origin).toBe(SITE)
    expect(Object.fromEntries(replay.url.searchParams)).toEqual({
      error: 'invalid_request',
      error_code: 'bad_oauth_state',
      error_description: 'OAuth state not found or expired',
    })
  })

  it.each([
    ['token-5xx', 'Unable to exchange external code'],
    ['userinfo-5xx', 'Error getting user profile from external provider'],
    ['malformed-userinfo', 'Error getting user profile from external provider'],
  ] as const)('turns a provider %s into server_error', async (fault, description) => {
    fake('twitch').fault = fault
    const landing = await signIn('twitch')
    expect(landing.fragment.get('error')).toBe('server_error')
    expect(landing.fragment.get('error_code')).toBe('unexpected_failure')
    expect(landing.fragment.get('error_description')).toBe(description)
  })

  it('refuses a banned user', async () => {
    const who = account()
    fake('facebook').account = who
    const first = await signIn('facebook')
    const user = await userOf(first.fragment.get('access_token') ?? '')
    const ban = await server.request('PUT', `/admin/users/${user.id}`, {
      token: server.serviceKey,
      body: { ban_duration: '24h' },
    })
    expect(ban.statusCode).toBe(200)
    const again = await signIn('facebook')
    expect(again.fragment.get('error')).toBe('access_denied')
    expect(again.fragment.get('error_code')).toBe('user_banned')
  })

  it('answers an unknown or misspelt provider with upstream errors', async () => {
    const unknown = await server.request('GET', '/authorize?provider=myspace')
    expect(unknown.statusCode).toBe(400)
    expect(unknown.json()).toMatchObject({
      error_code: 'validation_failed',
      msg: 'Unsupported provider: Provider myspace could not be found',
    })
    const pkce = await server.request(
      'GET',
      '/authorize?provider=github&code_challenge=short&code_challenge_method=s256',
    )
    expect(pkce.json().msg).toBe('code challenge has to be between 43 and 128 characters')
  })

  it('reads the first of repeated query parameters, as Go does, on /authorize and /callback', async () => {
    const res = await server.request(
      'GET',
      '/authorize?provider=github&provider=google&scopes=repo&scopes[]=x&skip_http_redirect=true',
    )
    expect(res.statusCode).toBe(200)
    const url = new URL(res.json().url as string)
    expect(url.origin + url.pathname).toBe(`${fake('github').origin}/login/oauth/authorize`)
    expect(url.searchParams.get('scope')).toBe('user:email repo')
    const callback = await server.request('GET', '/callback?code=a&code=b&state=x&state=y')
    expect(callback.statusCode).toBe(303)
    expect(new URL(callback.headers.location as string).searchParams.get('error_code')).toBe(
      'bad_oauth_state',
    )
  })

  it('adds requested scopes to the defaults and returns the URL as JSON on skip_http_redirect', async () => {
    const res = await server.request(
      'GET',
      '/authorize?provider=github&scopes=repo,read:org&skip_http_redirect=true&login=ada',
    )
    expect(res.statusCode).toBe(200)
    const url = new URL(res.json().url as string)
    expect(url.origin + url.pathname).toBe(`${fake('github').origin}/login/oauth/authorize`)
    expect(url.searchParams.get('scope')).toBe('user:email repo read:org')
    expect(url.searchParams.get('login')).toBe('ada')
    expect(url.searchParams.get('client_id')).toBe('github-client')
  })

  it('PKCE: /callback redirects with ?code= and records the user on the flow state', async () => {
    fake('figma').account = account()
    const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'
    const landing = await signIn(
      'figma',
      `&code_challenge=${challenge}&code_challenge_method=s256&redirect_to=${encodeURIComponent(`${SITE}/cb`)}`,
    )
    const code = landing.url.searchParams.get('code') ?? ''
    expect(code).toMatch(/^[0-9a-f-]{36}$/)
    expect(landing.fragment.get('access_token')).toBeNull()
    const { rows } = await server.app.db.query<{ user_id: string; provider_access_token: string }>(
      `SELECT user_id, provider_access_token FROM ${server.app.db.t.flowState} WHERE auth_code = $1`,
      [code],
    )
    expect(rows[0]?.user_id).toEqual(expect.any(String))
    expect(rows[0]?.provider_access_token).toMatch(/^at-/)
  })

  it('auth-js: signInWithOAuth (implicit), linkIdentity, getUserIdentities and unlinkIdentity', async () => {
    const auth = authJsClient(server.url)
    const who = account()
    fake('slack').account = who
    const started = await auth.signInWithOAuth({
      provider: 'slack',
      options: { skipBrowserRedirect: true, redirectTo: `${SITE}/home`, scopes: 'users:read' },
    })
    expect(started.error).toBeNull()
    const landing = await browser.open(started.data.url ?? '')
    const session = await auth.setSession({
      access_token: landing.fragment.get('access_token') ?? '',
      refresh_token: landing.fragment.get('refresh_token') ?? '',
    })
    expect(session.error).toBeNull()
    expect(session.data.user?.email).toBe(who.email)

    fake('notion').account = account()
    const link = await auth.linkIdentity({
      provider: 'notion',
      options: { skipBrowserRedirect: true },
    })
    expect(link.error).toBeNull()
    // auth-js sends the browser from the site's page, which the browser names as Referer.
    const linked = await browser.open(link.data.url ?? '', { referer: `${SITE}/home` })
    expect(linked.fragment.get('access_token')).toEqual(expect.any(String))
    await auth.setSession({
      access_token: linked.fragment.get('access_token') ?? '',
      refresh_token: linked.fragment.get('refresh_token') ?? '',
    })
    const identities = await auth.getUserIdentities()
    expect(identities.error).toBeNull()
    const list = identities.data?.identities ?? []
    expect(list.map((i) => i.provider).sort()).toEqual(['notion', 'slack'])
    expect(mails.map((m) => m.kind)).toContain('identity_linked_notification')

    const notion = list.find((i) => i.provider === 'notion')
    if (notion === undefined) throw new Error('no notion identity')
    const unlinked = await auth.unlinkIdentity(notion)
    expect(unlinked.error).toBeNull()
    const after = await auth.getUserIdentities()
    expect(after.data?.identities.map((i) => i.provider)).toEqual(['slack'])
    expect(mails.map((m) => m.kind)).toContain('identity_unlinked_notification')

    const last = after.data?.identities[0]
    if (last === undefined) throw new Error('no identity left')
    const refused = await auth.unlinkIdentity(last)
    expect(refused.error?.code).toBe('single_identity_not_deletable')
  })

  it('auth-js PKCE: signInWithOAuth with flowType pkce, then exchangeCodeForSession', async () => {
    const auth = authJsClient(server.url, {
      flowType: 'pkce',
      persistSession: true,
      storage: memoryStorage(),
    })
    const who = account()
    fake('gitlab').account = who
    const started = await auth.signInWithOAuth({
      provider: 'gitlab',
      options: { skipBrowserRedirect: true, redirectTo: `${SITE}/pkce` },
    })
    expect(started.error).toBeNull()
    const url = new URL(started.data.url ?? '')
    expect(url.searchParams.get('code_challenge_method')).toBe('s256')
    const landing = await browser.open(url.href)
    const code = landing.url.searchParams.get('code') ?? ''
    const exchanged = await auth.exchangeCodeForSession(code)
    expect(exchanged.error).toBeNull()
    expect(exchanged.data.user?.email).toBe(who.email)
    expect(exchanged.data.user?.app_metadata).toEqual({ provider: 'gitlab', providers: ['gitlab'] })
    expect(exchanged.data.session?.provider_token).toMatch(/^at-/)
    expect(exchanged.data.session?.provider_refresh_token).toMatch(/^rt-/)
    // The code is spent.
    const again = await server.request('POST', '/token?grant_type=pkce', {
      body: { auth_code: code, code_verifier: 'x'.repeat(43) },
    })
    expect(again.json().error_code).toBe('flow_state_not_found')
  })

  it('refuses to link an identity that belongs to another user', async () => {
    const owner = account()
    fake('workos').account = owner
    await signIn('workos')
    const other = await confirmedUser(account().email)
    const res = await server.request(
      'GET',
      '/user/identities/authorize?provider=workos&skip_http_redirect=true',
      { token: other.access_token },
    )
    const landing = await browser.open(res.json().url as string, { referer: `${SITE}/` })
    expect(landing.fragment.get('error_code')).toBe('identity_already_exists')
  })

  describe('pre-account takeover (issue 24, item 1)', () => {
    it("a provider sign-in with a verified email takes over a squatter's unconfirmed sign-up", async () => {
      const victim = account()
      const squatter = authJsClient(server.url)
      const squat = await squatter.signUp({
        email: victim.email,
        password: 'squatter-password-1',
        options: { data: { name: 'Mallory', backdoor: 'yes' } },
      })
      expect(squat.error).toBeNull()
      expect(squat.data.session).toBeNull()

      fake('github').account = victim
      const landing = await signIn('github')
      const user = await userOf(landing.fragment.get('access_token') ?? '')
      expect(user.email).toBe(victim.email)
      expect(user.email_confirmed_at).toEqual(expect.any(String))
      expect(user.identities.map((i) => i.provider)).toEqual(['github'])
      expect(user.app_metadata).toEqual({ provider: 'github', providers: ['github'] })
      expect(user.user_metadata).not.toHaveProperty('backdoor')
      expect(user.user_metadata).toMatchObject({ email: victim.email, full_name: victim.name })

      const again = await squatter.signInWithPassword({
        email: victim.email,
        password: 'squatter-password-1',
      })
      expect(again.error?.code).toBe('invalid_credentials')
      expect(again.data.session).toBeNull()
    })

    it('an unverified provider address never ends up in the account its owner signs up and confirms', async () => {
      const victimEmail = account().email
      // The attacker's GitLab account claims the victim's address, unverified.
      fake('gitlab').account = account({ email: victimEmail, emailVerified: false })
      const claimed = await signIn('gitlab')
      expect(claimed.fragment.get('error_code')).toBe('provider_email_needs_verification')

      mails.length = 0
      clock.advance(server.settings.mailer.maxFrequencyMs + 1000) // the confirmation may be resent
      const owner = authJsClient(server.url)
      const signedUp = await owner.signUp({ email: victimEmail, password: 'owner-password-1' })
      expect(signedUp.error).toBeNull()
      const mail = await waitFor(() =>
        mails.find((m) => m.kind === 'confirmation' && m.to === victimEmail),
      )
      const confirmed = await browser.open(mail.confirmationUrl)
      const user = await userOf(confirmed.fragment.get('access_token') ?? '')
      expect(user.email).toBe(victimEmail)
      expect(user.identities.map((i) => i.provider)).toEqual(['email'])
      expect(user.app_metadata).toEqual({ provider: 'email', providers: ['email'] })

      // The attacker signs in with the same GitLab account again: not into the owner's account.
      const back = await signIn('gitlab')
      expect(back.fragment.get('access_token')).toBeNull()
      expect(back.fragment.get('error_code')).toBe('email_exists')
      const admin = await server.request('GET', `/admin/users/${user.id}`, {
        token: server.serviceKey,
      })
      expect(admin.json().identities.map((i) => i.provider)).toEqual(['email'])
    })
  })

  describe('state bound to the browser (issue 24, item 4)', () => {
    const toCallback = { until: (url: URL) => url.pathname === '/callback' }

    it('refuses a state started in browser A and completed in browser B (login CSRF)', async () => {
      fake('github').account = account()
      const attacker = new Browser(origins)
      const atCallback = await attacker.open(`${server.url}/authorize?provider=github`, toCallback)
      expect(atCallback.url.searchParams.get('code')).toEqual(expect.any(String))

      const refused = {
        error: 'invalid_request',
        error_code: 'bad_oauth_state',
        error_description: 'OAuth state was not started in this browser',
      }
      // A browser without the cookie, and one with a cookie of its own.
      const fresh = await new Browser(origins).open(atCallback.url)
      expect(fresh.status).toBe(303)
      expect(fresh.url.origin + fresh.url.pathname).toBe(`${SITE}/`)
      expect(Object.fromEntries(fresh.url.searchParams)).toEqual(refused)
      const other = new Browser(origins)
      await other.open(`${server.url}/authorize?provider=github`, toCallback)
      const mixed = await other.open(atCallback.url)
      expect(Object.fromEntries(mixed.url.searchParams)).toEqual(refused)

      // The refusals did not spend the flow: the browser that started it completes it.
      const own = await attacker.open(atCallback.url)
      expect(own.fragment.get('access_token')).toEqual(expect.any(String))
    })

    it('refuses a form_post callback from another browser, after posting it once from its own page', async () => {
      fake('apple').account = account({ name: 'O"Brien <b>' })
      const attacker = new Browser(origins)
      // Stop at Apple's auto-posting page, before its form reaches /callback.
      const start = await server.request('GET', '/authorize?provider=apple&skip_http_redirect=true')
      const atApple = await attacker.open(start.json().url as string, toCallback)
      const fields = new URLSearchParams({
        code: atApple.url.searchParams.get('code') ?? 'x',
        state: new URL(start.json().url as string).searchParams.get('state') ?? '',
        user: JSON.stringify({ name: { firstName: 'O"Brien', lastName: '<b>' } }),
      })
      const first = await server.request('POST', '/callback', {
        body: fields.toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      })
      expect(first.statusCode).toBe(200)
      expect(first.headers['content-type']).toBe('text/html; charset=utf-8')
      expect(first.headers['content-security-policy']).toMatch(
        /^default-src 'none'; script-src 'nonce-[A-Za-z0-9+/=]+'; frame-ancestors 'none'$/,
      )
      expect(first.body).toContain('<form method="post" action="callback">')
      expect(first.body).toContain(
        '<input type="hidden" name="user" value="{&#34;name&#34;:{&#34;firstName&#34;:&#34;O\\&#34;Brien&#34;,&#34;lastName&#34;:&#34;&#60;b&#62;&#34;}}">',
      )
      expect(first.body).toContain('<input type="hidden" name="gatehouse_resubmitted" value="1">')
      fields.set('gatehouse_resubmitted', '1')
      const second = await server.request('POST', '/callback', {
        body: fields.toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      })
      expect(second.statusCode).toBe(303)
      expect(new URL(second.headers.location as string).searchParams.get('error_description')).toBe(
        'OAuth state was not started in this browser',
      )
    })

    it('gives each authorization its own state, and one browser one binding cookie for all', async () => {
      const authorize = () =>
        server.request('GET', '/authorize?provider=github&skip_http_redirect=true')
      const [a, b] = await Promise.all([authorize(), authorize()])
      const stateOf = (r: typeof a) => new URL(r.json().url as string).searchParams.get('state')
      expect(stateOf(a)).not.toBe(stateOf(b))
      expect(a.headers['set-cookie']).toMatch(
        /^__Host-gatehouse-oauth=[A-Za-z0-9_-]{43}; Max-Age=300; Path=\/; HttpOnly; SameSite=Lax; Secure$/,
      )

      // Two tabs of one browser: the second /authorize keeps the first one's secret, so both
      // flows complete.
      const tabs = new Browser(origins)
      fake('discord').account = account()
      const first = await tabs.open(`${server.url}/authorize?provider=discord`, toCallback)
      const second = await tabs.open(`${server.url}/authorize?provider=discord`, toCallback)
      expect(first.url.searchParams.get('state')).not.toBe(second.url.searchParams.get('state'))
      expect((await tabs.open(first.url)).fragment.get('access_token')).toEqual(expect.any(String))
      expect((await tabs.open(second.url)).fragment.get('access_token')).toEqual(expect.any(String))
    })

    it('makes a link URL single use, opened from the site, by the browser that completes it', async () => {
      const owner = await confirmedUser(account().email)
      fake('notion').account = account()
      const asked = await server.request(
        'GET',
        `/user/identities/authorize?provider=notion&skip_http_redirect=true&login=ada&redirect_to=${encodeURIComponent(`${SITE}/linked`)}`,
        { token: owner.access_token },
      )
      expect(asked.statusCode).toBe(200)
      const linkUrl = asked.json().url as string
      expect(new URL(linkUrl).origin + new URL(linkUrl).pathname).toBe(`${server.url}/authorize`)

      // Sent to someone else's browser (no Referer, or another site's): refused.
      for (const referer of [undefined, 'https://evil.example/']) {
        const elsewhere = await new Browser(origins).open(linkUrl, { referer })
        expect(elsewhere.status).toBe(303)
        expect(Object.fromEntries(elsewhere.url.searchParams)).toEqual({
          error: 'invalid_request',
          error_code: 'bad_oauth_state',
          error_description: 'Identity link request must be opened from the site that asked for it',
        })
      }

      // The owner's browser, sent from the site.
      const ownBrowser = new Browser(origins)
      const atProvider = await ownBrowser.open(linkUrl, {
        referer: `${SITE}/settings`,
        until: (url) => url.origin === fake('notion').origin,
      })
      expect(atProvider.url.searchParams.get('login')).toBe('ada')
      const atCallback = await ownBrowser.open(atProvider.url, toCallback)
      const linked = await ownBrowser.open(atCallback.url)
      expect(linked.url.origin + linked.url.pathname).toBe(`${SITE}/linked`)
      const user = await userOf(linked.fragment.get('access_token') ?? '')
      expect(user.id).toBe(owner.user.id)
      expect(user.identities.map((i) => i.provider).sort()).toEqual(['email', 'notion'])

      // Replayed: the link URL, the callback, and the state with a fresh code from the provider.
      const replays = [
        await ownBrowser.open(linkUrl, { referer: `${SITE}/settings` }),
        await ownBrowser.open(atCallback.url),
        await ownBrowser.open(atProvider.url),
      ]
      expect(replays.map((r) => r.url.searchParams.get('error_description'))).toEqual([
        'Identity link request was already used',
        'OAuth state has already been used',
        'OAuth state has already been used',
      ])
    })

    it('links only while the session that asked for the link exists', async () => {
      const owner = await confirmedUser(account().email)
      fake('notion').account = account()
      const linkUrl = async () =>
        (
          await server.request(
            'GET',
            '/user/identities/authorize?provider=notion&skip_http_redirect=true',
            { token: owner.access_token },
          )
        ).json().url as string
      const ownBrowser = new Browser(origins)
      const atCallback = await ownBrowser.open(await linkUrl(), {
        referer: `${SITE}/`,
        ...toCallback,
      })
      const unusedLink = await linkUrl()
      const out = await server.request('POST', '/logout', { token: owner.access_token })
      expect(out.statusCode).toBe(204)

      const ended = await ownBrowser.open(atCallback.url)
      expect(ended.fragment.get('access_token')).toBeNull()
      expect(Object.fromEntries(ended.fragment)).toEqual({
        error: 'access_denied',
        error_code: 'session_not_found',
        error_description: 'The session that asked for the link has ended',
        sb: '',
      })
      const late = await ownBrowser.open(unusedLink, { referer: `${SITE}/` })
      expect(late.url.searchParams.get('error_code')).toBe('session_not_found')
      const admin = await server.request('GET', `/admin/users/${owner.user.id}`, {
        token: server.serviceKey,
      })
      expect(admin.json().identities.map((i) => i.provider)).toEqual(['email'])
    })
  })

  describe('provider details (issue 24, item 8)', () => {
    it('sends PKCE (S256) to the providers that support it, and the verifier to their token endpoint', async () => {
      const pkce = DESCRIPTIONS.filter((d) => d.pkce === true).map((d) => d.name)
      expect(pkce.sort()).toEqual(
        [
          'azure',
          'discord',
          'facebook',
          'github',
          'gitlab',
          'snapchat',
          'spotify',
          'workos',
          'x',
        ].sort(),
      )
      for (const name of ['github', 'slack']) {
        const f = fake(name)
        f.account = account()
        const before = f.authorizations.length
        const landing = await signIn(name)
        expect(landing.fragment.get('access_token')).toEqual(expect.any(String))
        const sent = f.authorizations[before]
        expect(sent?.get('code_challenge_method')).toBe(name === 'github' ? 'S256' : null)
        expect(f.pkceRefusals).toBe(0)
      }
    })

    it('links an address WorkOS does not say it verified to no existing account, unless trusted', async () => {
      const who = account()
      const existing = await confirmedUser(who.email)
      fake('workos').account = who
      const refused = await signIn('workos')
      expect(refused.fragment.get('error_code')).toBe('email_exists')
      const admin = await server.request('GET', `/admin/users/${existing.user.id}`, {
        token: server.serviceKey,
      })
      expect(admin.json().identities.map((i) => i.provider)).toEqual(['email'])

      // Figma is trusted by this server (AUTHSVC_EXTERNAL_FIGMA_TRUST_EMAIL).
      const trusted = account()
      const holder = await confirmedUser(trusted.email)
      fake('figma').account = trusted
      const linked = await userOf((await signIn('figma')).fragment.get('access_token') ?? '')
      expect(linked.id).toBe(holder.user.id)
      expect(linked.identities.map((i) => i.provider).sort()).toEqual(['email', 'figma'])
    })
  })
})

describe('sign-in with external providers under DISABLE_SIGNUP', () => {
  let server: TestServer
  let github: FakeProvider
  let browser: Browser

  beforeAll(async () => {
    const port = await getFreePort()
    const description = DESCRIPTIONS.find((d) => d.name === 'github')
    if (description === undefined) throw new Error('no github description')
    github = await FakeProvider.start(description, account())
    server = await startTestServer('external_nosignup', {
      AUTHSVC_DISABLE_SIGNUP: 'true',
      ...github.env(`http://127.0.0.1:${String(port)}/callback`),
    })
    await server.app.server.listen({ host: '127.0.0.1', port })
    server.url = `http://127.0.0.1:${String(port)}`
    browser = new Browser([server.url, github.origin])
  })

  afterAll(async () => {
    await server.close()
    await github.stop()
  })

  it('creates no user, and reports a disabled provider', async () => {
    const landing = await browser.open(`${server.url}/authorize?provider=github`)
    expect(landing.fragment.get('error')).toBe('access_denied')
    expect(landing.fragment.get('error_code')).toBe('signup_disabled')
    expect(landing.fragment.get('error_description')).toBe('Signups not allowed for this instance')
    const disabled = await server.request('GET', '/authorize?provider=google')
    expect(disabled.json().msg).toBe('Unsupported provider: provider is not enabled')
  })
})
