import { describe, expect, it } from 'vitest'
import { Client } from '../client.js'
import { OAuth2Error } from '../error.js'
import { clientOptionsFor, PROVIDER_PRESETS, type ProviderName } from './index.js'

const NAMES = Object.keys(PROVIDER_PRESETS) as ProviderName[]
const noCallback = { callback: {}, tokenResponse: {} }

describe('provider presets', () => {
  it('has a preset for every provider of the auth server', () => {
    expect(NAMES.sort()).toEqual([
      'apple',
      'azure',
      'bitbucket',
      'discord',
      'facebook',
      'figma',
      'fly',
      'github',
      'gitlab',
      'google',
      'kakao',
      'keycloak',
      'linkedin',
      'linkedin_oidc',
      'notion',
      'slack',
      'slack_oidc',
      'snapchat',
      'spotify',
      'twitch',
      'twitter',
      'vercel_marketplace',
      'workos',
      'x',
      'zoom',
    ])
  })

  it.each(NAMES.filter((name) => name !== 'keycloak'))(
    '%s: https endpoints on its public hosts, and on a custom URL',
    (name) => {
      const preset = PROVIDER_PRESETS[name]
      expect(preset.name).toBe(name)
      const endpoints = preset.endpoints()
      for (const url of [endpoints.authorizeUrl, endpoints.tokenUrl, endpoints.api]) {
        expect(new URL(url).protocol).toBe('https:')
      }
      const custom = preset.endpoints('http://127.0.0.1:4000/base')
      expect(new URL(custom.tokenUrl).origin).toBe('http://127.0.0.1:4000')
      expect(preset.docs.length).toBeGreaterThan(0)
    },
  )

  it('has the per-tenant and self-hosted forms (Azure, Keycloak, GitLab, WorkOS, GitHub Enterprise)', () => {
    const azure = PROVIDER_PRESETS.azure.endpoints(
      'https://login.microsoftonline.com/contoso.onmicrosoft.com/',
    )
    expect(azure.authorizeUrl).toBe(
      'https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/authorize',
    )
    expect(azure.issuerPattern?.test('https://login.microsoftonline.com/9188040d/v2.0')).toBe(true)
    expect(azure.issuerPattern?.test('https://evil.example/9188040d/v2.0')).toBe(false)
    expect(
      PROVIDER_PRESETS.keycloak.endpoints('https://kc.example/realms/acme').metadata,
    ).toMatchObject({
      issuer: 'https://kc.example/realms/acme',
      jwks_uri: 'https://kc.example/realms/acme/protocol/openid-connect/certs',
    })
    expect(() => PROVIDER_PRESETS.keycloak.endpoints()).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }) as Error,
    )
    expect(PROVIDER_PRESETS.gitlab.endpoints('https://git.acme.example/').tokenUrl).toBe(
      'https://git.acme.example/oauth/token',
    )
    expect(PROVIDER_PRESETS.workos.endpoints('https://auth.acme.example/x').authorizeUrl).toBe(
      'https://auth.acme.example/sso/authorize',
    )
    expect(PROVIDER_PRESETS.github.endpoints('https://ghe.acme.example').api).toBe(
      'https://ghe.acme.example/api/v3',
    )
    expect(PROVIDER_PRESETS.github.endpoints().api).toBe('https://api.github.com')
  })

  it('states the quirks: Apple form_post and client secret JWT, X PKCE required, GitHub without refresh', () => {
    const { apple, x, github, notion, google } = PROVIDER_PRESETS
    expect(apple.authorizeParams).toEqual({ response_mode: 'form_post' })
    expect(apple.clientSecretJwt).toEqual({ algorithm: 'ES256', lifetimeSeconds: 300 })
    expect(apple.idToken).toEqual({ discovery: true, required: true })
    expect(x.pkce).toBe('required')
    expect(x.authScheme).toBe('basic_auth')
    expect(github.refresh.issued).toBe(false)
    expect(github.pkce).toBe(true)
    expect(notion.authScheme).toBe('basic_auth')
    expect(google.refresh).toEqual({ issued: true, requires: expect.any(String) as string })
    expect(PROVIDER_PRESETS.twitter.protocol).toBe('oauth1a')
  })

  it('maps GitHub profiles to standard claims with each address verified or not', () => {
    const github = PROVIDER_PRESETS.github
    const endpoints = github.endpoints()
    const requests = github.profileRequests(endpoints, {
      clientId: 'c',
      clientSecret: 's',
      accessToken: 't',
    })
    expect(Object.values(requests).map((r) => r.url)).toEqual([
      'https://api.github.com/user',
      'https://api.github.com/user/emails',
    ])
    const profile = github.profile({
      ...noCallback,
      endpoints,
      responses: {
        user: { id: 42, login: 'ada', name: 'Ada Lovelace', avatar_url: 'https://a.example/42' },
        emails: [
          { email: 'noreply@users.example', primary: false, verified: true },
          { email: 'ada@example.com', primary: true, verified: false },
        ],
      },
    })
    expect(profile).toEqual({
      iss: 'https://api.github.com',
      sub: '42',
      name: 'Ada Lovelace',
      picture: 'https://a.example/42',
      user_name: 'ada',
      preferred_username: 'ada',
      email: 'ada@example.com',
      email_verified: false,
      emails: [
        { email: 'noreply@users.example', verified: true, primary: false },
        { email: 'ada@example.com', verified: false, primary: true },
      ],
    })
  })

  it('says when a provider does not tell whether it verified the email (undefined)', () => {
    const figma = PROVIDER_PRESETS.figma
    const profile = figma.profile({
      ...noCallback,
      endpoints: figma.endpoints(),
      responses: { user: { id: '7', email: 'f@example.com', handle: 'f' } },
    })
    expect(profile.email_verified).toBeUndefined()
    expect(profile.emails).toEqual([{ email: 'f@example.com', verified: undefined, primary: true }])
  })

  it('reads Apple from the ID token and its first-sign-in user field; WorkOS from the token response', () => {
    const apple = PROVIDER_PRESETS.apple
    const profile = apple.profile({
      endpoints: apple.endpoints(),
      responses: {},
      tokenResponse: {},
      callback: { user: '{"name":{"firstName":"Ada","lastName":"Lovelace"}}' },
      idToken: {
        iss: 'https://appleid.apple.com',
        sub: '001.abc',
        email: 'x@privaterelay.appleid.com',
        email_verified: 'true',
        is_private_email: 'true',
      },
    })
    expect(profile).toMatchObject({
      sub: '001.abc',
      name: 'Ada Lovelace',
      email_verified: true,
      custom: { is_private_email: true },
    })
    const workos = PROVIDER_PRESETS.workos
    expect(
      workos.profile({
        endpoints: workos.endpoints(),
        responses: {},
        callback: {},
        tokenResponse: { profile: { id: 'prof_1', email: 'w@example.com', first_name: 'W' } },
      }),
    ).toMatchObject({ sub: 'prof_1', name: 'W', email: 'w@example.com', email_verified: undefined })
  })

  it('reads Vercel Marketplace from its ID token: global_user_id, user_email (verified), user_name', () => {
    const vercel = PROVIDER_PRESETS.vercel_marketplace
    expect(vercel.endpoints()).toMatchObject({
      issuer: 'https://marketplace.vercel.com',
      authorizeUrl: 'https://api.vercel.com/oauth/v2/authorization',
      tokenUrl: 'https://api.vercel.com/oauth/v2/accessToken',
    })
    expect(vercel.endpoints('http://127.0.0.1:4000')).toMatchObject({
      issuer: 'http://127.0.0.1:4000',
      tokenUrl: 'http://127.0.0.1:4000/oauth/v2/accessToken',
    })
    expect(vercel).toMatchObject({ scopes: [], pkce: false, idToken: { required: true } })
    const input = (idToken: Record<string, unknown>) => ({
      endpoints: vercel.endpoints(),
      responses: {},
      tokenResponse: {},
      callback: {},
      idToken,
    })
    const claims = {
      iss: 'https://marketplace.vercel.com',
      sub: 'account:team_1:user_1',
      global_user_id: 'gu_42',
      user_email: 'v@example.com',
      user_name: 'Vee',
      user_avatar_url: 'https://vercel.com/a.png',
    }
    expect(vercel.profile(input(claims))).toMatchObject({
      sub: 'global_user_id:gu_42',
      name: 'Vee',
      picture: 'https://vercel.com/a.png',
      email: 'v@example.com',
      email_verified: true,
    })
    const { global_user_id: _dropped, ...withoutGlobal } = claims
    expect(vercel.profile(input(withoutGlobal)).sub).toBe('account:team_1:user_1')
  })

  it('signs the Facebook profile request with appsecret_proof (HMAC-SHA256 of the token)', () => {
    const facebook = PROVIDER_PRESETS.facebook
    const { user } = facebook.profileRequests(facebook.endpoints(), {
      clientId: 'c',
      clientSecret: 'app-secret',
      accessToken: 'token',
    })
    // HMAC-SHA256 of "token" keyed with "app-secret", hex (as node:crypto computes it).
    expect(user?.params?.appsecret_proof).toBe(
      '4b062935fec529e51d39e89ee371a452c231b1e0c5549ac72d83fc4f3a0b0471',
    )
  })

  it('refuses a profile without what the provider must send (invalid_userinfo)', () => {
    const error = (() => {
      try {
        PROVIDER_PRESETS.discord.profile({
          ...noCallback,
          endpoints: PROVIDER_PRESETS.discord.endpoints(),
          responses: { user: { username: 'no-id' } },
        })
      } catch (e) {
        return e
      }
      return undefined
    })()
    expect(error).toBeInstanceOf(OAuth2Error)
    expect(error).toMatchObject({ code: 'invalid_userinfo' })
  })

  it('gives the options of a client for an OAuth 2.0 preset', () => {
    const client = new Client(
      'id',
      'secret',
      clientOptionsFor(PROVIDER_PRESETS.x, { redirect_uri: 'https://app.example/cb' }),
    )
    expect(client.options.requirePkce).toBe(true)
    expect(client.options.authScheme).toBe('basic_auth')
    expect(client.tokenUrl()).toBe('https://api.x.com/2/oauth2/token')
    expect(() => clientOptionsFor(PROVIDER_PRESETS.twitter)).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }) as Error,
    )
  })
})
