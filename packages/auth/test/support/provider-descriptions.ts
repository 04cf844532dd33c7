/**
 * What each provider's API looks like (reference §7), for the one generic
 * {@link FakeProvider}: paths, client authentication, token quirks and profile JSON. Keycloak and
 * Google are played by `oidc-provider` instead (`oidc-provider.ts`).
 */
import { createHmac } from 'node:crypto'
import type {
  FakeAccount,
  FakeReply,
  ProviderDescription,
  UserinfoRequest,
} from './fake-provider.js'

const ok = (body: unknown): FakeReply => ({ body })
const first = (a: FakeAccount) => a.name.split(' ')[0] ?? ''
const last = (a: FakeAccount) => a.name.split(' ').slice(1).join(' ')

/** Every provider the generic fake plays, by name. */
export const DESCRIPTIONS: readonly ProviderDescription[] = [
  {
    name: 'github',
    pkce: true,
    url: (origin) => origin,
    authorizePath: '/login/oauth/authorize',
    tokenPath: '/login/oauth/access_token',
    // GitHub answers a bad code with 200 and an error body.
    tokenError: () => ({ status: 200, body: { error: 'bad_verification_code' } }),
    userinfo: {
      '/api/v3/user': ({ account: a }) =>
        ok({
          id: Number(a.id),
          login: a.name.replace(/ /g, '').toLowerCase(),
          name: a.name,
          avatar_url: a.avatar,
        }),
      '/api/v3/user/emails': ({ account: a }) =>
        ok([
          { email: `noreply-${a.id}@users.noreply.example`, primary: false, verified: true },
          { email: a.email, primary: true, verified: a.emailVerified },
        ]),
    },
  },
  {
    name: 'gitlab',
    pkce: true,
    url: (origin) => origin,
    authorizePath: '/oauth/authorize',
    tokenPath: '/oauth/token',
    userinfo: {
      '/api/v4/user': ({ account: a }) =>
        ok({
          id: Number(a.id),
          username: 'gl-user',
          name: a.name,
          email: a.email,
          avatar_url: a.avatar,
          confirmed_at: a.emailVerified ? '2024-01-01T00:00:00Z' : null,
        }),
      '/api/v4/user/emails': () => ok([{ id: 1, email: 'second@example.org', confirmed_at: null }]),
    },
  },
  {
    name: 'bitbucket',
    url: (origin) => origin,
    authorizePath: '/site/oauth2/authorize',
    tokenPath: '/site/oauth2/access_token',
    userinfo: {
      '/2.0/user': ({ account: a }) =>
        ok({ uuid: `{${a.id}}`, display_name: a.name, links: { avatar: { href: a.avatar } } }),
      '/2.0/user/emails': ({ account: a }) =>
        ok({ values: [{ email: a.email, is_primary: true, is_confirmed: a.emailVerified }] }),
    },
  },
  {
    name: 'discord',
    pkce: true,
    url: (origin) => origin,
    authorizePath: '/api/oauth2/authorize',
    tokenPath: '/api/oauth2/token',
    userinfo: {
      '/api/users/@me': ({ account: a }) =>
        ok({
          id: a.id,
          username: first(a).toLowerCase(),
          discriminator: '0',
          email: a.email,
          verified: a.emailVerified,
          avatar: 'abc123',
        }),
    },
  },
  {
    name: 'facebook',
    pkce: true,
    url: (origin) => origin,
    authorizePath: '/dialog/oauth',
    tokenPath: '/oauth/access_token',
    userinfo: {
      '/me': ({ account: a, accessToken, query }: UserinfoRequest) => {
        const proof = createHmac('sha256', 'facebook-secret-0123456789')
          .update(accessToken)
          .digest('hex')
        if (query.get('appsecret_proof') !== proof) {
          return { status: 400, body: { error: { message: 'Invalid appsecret_proof' } } }
        }
        return ok({
          id: a.id,
          email: a.email,
          first_name: first(a),
          last_name: last(a),
          name: a.name,
          picture: { data: { url: a.avatar } },
        })
      },
    },
  },
  {
    name: 'figma',
    url: (origin) => origin,
    authorizePath: '/oauth',
    tokenPath: '/v1/oauth/token',
    userinfo: {
      '/v1/me': ({ account: a }) =>
        ok({ id: a.id, email: a.email, handle: a.name, img_url: a.avatar }),
    },
  },
  {
    name: 'linkedin',
    url: (origin) => origin,
    authorizePath: '/oauth/v2/authorization',
    tokenPath: '/oauth/v2/accessToken',
    userinfo: {
      '/v2/me': ({ account: a }) =>
        ok({
          id: a.id,
          firstName: {
            localized: { en_US: first(a) },
            preferredLocale: { country: 'US', language: 'en' },
          },
          lastName: {
            localized: { en_US: last(a) },
            preferredLocale: { country: 'US', language: 'en' },
          },
          profilePicture: {
            'displayImage~': { elements: [{ identifiers: [{ identifier: a.avatar }] }] },
          },
        }),
      '/v2/emailAddress': ({ account: a }) =>
        ok({ elements: [{ 'handle~': { emailAddress: a.email } }] }),
    },
  },
  {
    name: 'notion',
    url: (origin) => origin,
    authorizePath: '/v1/oauth/authorize',
    tokenPath: '/v1/oauth/token',
    clientAuth: 'basic',
    userinfo: {
      '/v1/users/me': ({ account: a, headers }) =>
        headers['notion-version'] === '2021-08-16'
          ? ok({
              object: 'user',
              type: 'bot',
              bot: {
                owner: {
                  type: 'user',
                  user: {
                    id: a.id,
                    name: a.name,
                    avatar_url: a.avatar,
                    person: { email: a.email },
                  },
                },
              },
            })
          : { status: 400, body: { code: 'missing_version' } },
    },
  },
  {
    name: 'snapchat',
    pkce: true,
    url: (origin) => origin,
    authorizePath: '/accounts/oauth2/auth',
    tokenPath: '/accounts/oauth2/token',
    userinfo: {
      '/v1/me': ({ account: a, query }) =>
        query.get('query')?.includes('externalId') === true
          ? ok({
              data: {
                me: {
                  externalId: a.id,
                  displayName: a.name,
                  bitmoji: { avatar: a.avatar },
                  email: a.email,
                },
              },
            })
          : { status: 400, body: { error: 'query required' } },
    },
  },
  {
    name: 'spotify',
    pkce: true,
    url: (origin) => origin,
    authorizePath: '/authorize',
    tokenPath: '/api/token',
    userinfo: {
      '/v1/me': ({ account: a }) =>
        ok({
          id: a.id,
          display_name: a.name,
          email: a.email,
          images: [
            { url: `${a.avatar}?small`, height: 64, width: 64 },
            { url: a.avatar, height: 640, width: 640 },
          ],
        }),
    },
  },
  {
    name: 'slack',
    url: (origin) => origin,
    authorizePath: '/oauth/authorize',
    tokenPath: '/api/oauth.access',
    tokenError: () => ({ status: 200, body: { ok: false, error: 'invalid_code' } }),
    userinfo: {
      '/api/openid.connect.userInfo': ({ account: a }) =>
        ok({
          ok: true,
          'https://slack.com/user_id': a.id,
          'https://slack.com/team_id': 'T0001',
          email: a.email,
          email_verified: a.emailVerified,
          name: a.name,
          picture: a.avatar,
        }),
    },
  },
  {
    name: 'twitch',
    url: (origin) => origin,
    authorizePath: '/oauth2/authorize',
    tokenPath: '/oauth2/token',
    userinfo: {
      '/helix/users': ({ account: a, headers }) =>
        headers['client-id'] === 'twitch-client'
          ? ok({
              data: [
                {
                  id: a.id,
                  login: first(a).toLowerCase(),
                  display_name: a.name,
                  // Twitch returns a verified address only.
                  ...(a.emailVerified ? { email: a.email } : {}),
                  profile_image_url: a.avatar,
                },
              ],
            })
          : { status: 401, body: { error: 'Unauthorized', message: 'Client-Id header required' } },
    },
  },
  {
    name: 'workos',
    pkce: true,
    url: (origin) => origin,
    authorizePath: '/sso/authorize',
    tokenPath: '/sso/token',
    tokenExtras: (a) => ({
      profile: {
        id: `prof_${a.id}`,
        email: a.email,
        first_name: first(a),
        last_name: last(a),
        connection_id: 'conn_1',
        connection_type: 'GoogleOAuth',
        organization_id: 'org_1',
        idp_id: 'idp_1',
      },
    }),
    userinfo: {},
  },
  {
    name: 'azure',
    pkce: true,
    url: (origin) => `${origin}/common`,
    authorizePath: '/common/oauth2/v2.0/authorize',
    tokenPath: '/common/oauth2/v2.0/token',
    jwksPath: '/common/discovery/v2.0/keys',
    idTokenIssuer: (origin) => `${origin}/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0`,
    idTokenClaims: (a) => ({
      email: a.email,
      xms_edov: a.emailVerified,
      name: a.name,
      tid: '9188040d-6c67-4c5b-b112-36a304b66dad',
    }),
    userinfo: {},
  },
  {
    name: 'apple',
    url: (origin) => origin,
    authorizePath: '/auth/authorize',
    tokenPath: '/auth/token',
    discovery: { jwksPath: '/auth/keys' },
    formPost: true,
    idTokenIssuer: (origin) => origin,
    idTokenClaims: (a) => ({
      email: a.email,
      email_verified: a.emailVerified ? 'true' : 'false',
      is_private_email: 'false',
    }),
    userinfo: {},
  },
  {
    name: 'twitter',
    url: (origin) => origin,
    authorizePath: '/oauth/authenticate',
    tokenPath: '/oauth/access_token',
    oauth1: { requestTokenPath: '/oauth/request_token', accessTokenPath: '/oauth/access_token' },
    userinfo: {
      '/1.1/account/verify_credentials.json': ({ account: a, query }) =>
        query.get('include_email') === 'true'
          ? ok({
              id: Number(a.id),
              id_str: a.id,
              name: a.name,
              screen_name: first(a).toLowerCase(),
              // Twitter answers null for an address that is not verified.
              email: a.emailVerified ? a.email : null,
              profile_image_url_https: a.avatar,
            })
          : ok({ id_str: a.id, name: a.name }),
    },
  },
  {
    name: 'x',
    pkce: true,
    clientAuth: 'basic',
    url: (origin) => origin,
    authorizePath: '/i/oauth2/authorize',
    tokenPath: '/2/oauth2/token',
    userinfo: {
      '/2/users/me': ({ account: a, query }) =>
        ok({
          data: {
            id: a.id,
            name: a.name,
            username: first(a).toLowerCase(),
            // X answers confirmed_email only for the fields asked, and only when confirmed.
            ...(query.get('user.fields')?.includes('confirmed_email') === true && a.emailVerified
              ? { confirmed_email: a.email }
              : {}),
            profile_image_url: a.avatar,
            created_at: '2020-01-01T00:00:00.000Z',
          },
        }),
    },
  },
  {
    // Vercel Marketplace: its API's authorization and token endpoints, the ID token (with
    // Vercel's own claims) checked with the keys its issuer publishes through discovery.
    name: 'vercel_marketplace',
    clientAuth: 'body',
    url: (origin) => origin,
    authorizePath: '/oauth/v2/authorization',
    tokenPath: '/oauth/v2/accessToken',
    discovery: { jwksPath: '/.well-known/jwks' },
    idTokenIssuer: (origin) => origin,
    idTokenClaims: (a) => ({
      global_user_id: `gu-${a.id}`,
      user_email: a.email,
      user_name: a.name,
      user_avatar_url: a.avatar,
    }),
    userinfo: {},
  },
  {
    name: 'zoom',
    clientAuth: 'basic',
    url: (origin) => origin,
    authorizePath: '/oauth/authorize',
    tokenPath: '/oauth/token',
    userinfo: {
      '/v2/users/me': ({ account: a }) =>
        ok({
          id: `zoom-${a.id}`,
          first_name: first(a),
          last_name: last(a),
          email: a.email,
          // A Zoom password account (login_type 100) whose address is not verified.
          login_type: '100',
          verified: a.emailVerified ? 1 : 0,
          pic_url: a.avatar,
        }),
    },
  },
  {
    name: 'fly',
    url: (origin) => origin,
    authorizePath: '/oauth/authorize',
    tokenPath: '/oauth/token',
    userinfo: {
      '/oauth/token/info': ({ account: a }) =>
        ok({
          resource_owner_id: `ro-${a.id}`,
          user_id: `fly-${a.id}`,
          user_name: a.name,
          email: a.email,
          organizations: [{ id: 'org-1', role: 'admin' }],
          scope: ['read'],
          application: { uid: 'fly-app' },
          expires_in: 7200,
          created_at: 1_700_000_000,
        }),
    },
  },
  {
    name: 'kakao',
    clientAuth: 'body',
    url: (origin) => origin,
    authorizePath: '/oauth/authorize',
    tokenPath: '/oauth/token',
    userinfo: {
      '/v2/user/me': ({ account: a }) =>
        ok({
          id: Number(a.id),
          kakao_account: {
            profile: { nickname: first(a), profile_image_url: a.avatar },
            email: a.email,
            is_email_valid: true,
            is_email_verified: a.emailVerified,
          },
        }),
    },
  },
  {
    name: 'slack_oidc',
    url: (origin) => origin,
    authorizePath: '/openid/connect/authorize',
    tokenPath: '/api/openid.connect.token',
    userinfo: {
      '/api/openid.connect.userInfo': ({ account: a }) =>
        ok({
          ok: true,
          'https://slack.com/user_id': a.id,
          'https://slack.com/team_id': 'T0002',
          email: a.email,
          email_verified: a.emailVerified,
          name: a.name,
          picture: a.avatar,
        }),
    },
  },
]
