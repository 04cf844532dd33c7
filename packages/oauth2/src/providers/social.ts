/**
 * The presets of the OAuth 2.0 providers whose user is read from their own APIs: Bitbucket,
 * Discord, Facebook, Figma, Fly.io, GitHub, GitLab, Kakao, LinkedIn, Notion, Slack (both APIs),
 * Snapchat, Spotify, Twitch, WorkOS and Zoom.
 *
 * @module
 */
import { hmac } from '@noble/hashes/hmac.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex } from '@noble/hashes/utils.js'
import {
  badProfile,
  baseUrl,
  chooseHost,
  flag,
  idOf,
  primaryEmail,
  record,
  records,
  text,
  withEmails,
  type ProviderPreset,
  type ProviderProfileEmail,
} from './preset.js'

/** The defaults most presets share: client_secret_post, no fixed authorization parameters. */
const COMMON = { protocol: 'oauth2', authScheme: 'request_body', authorizeParams: {} } as const

/**
 * Bitbucket: `bitbucket.org/site/oauth2/authorize` and `/access_token`; the user from
 * `api.bitbucket.org/2.0/user` and its addresses from `/user/emails` (`values[]` with
 * `is_primary`, `is_confirmed`). Scopes `account email`; no PKCE (not documented); refresh tokens.
 */
export const bitbucket: ProviderPreset = {
  ...COMMON,
  name: 'bitbucket',
  title: 'Bitbucket',
  endpoints(url) {
    const host = chooseHost(url, 'bitbucket.org')
    return {
      authorizeUrl: `${host}/site/oauth2/authorize`,
      tokenUrl: `${host}/site/oauth2/access_token`,
      api: `${chooseHost(url, 'api.bitbucket.org')}/2.0`,
    }
  },
  scopes: ['account', 'email'],
  pkce: false,
  refresh: { issued: true },
  profileRequests: ({ api }) => ({
    user: { url: `${api}/user`, kind: 'object' },
    emails: { url: `${api}/user/emails`, kind: 'object' },
  }),
  profile({ responses, endpoints }) {
    const profile = record(responses.user)
    const page = record(responses.emails)
    const avatar = record(record(profile.links ?? {}).avatar ?? {})
    return withEmails(
      {
        // Upstream's issuer for Bitbucket is the site, not the API.
        iss: new URL(endpoints.authorizeUrl).origin,
        sub: idOf(profile, 'uuid'),
        name: text(profile, 'display_name'),
        picture: text(avatar, 'href'),
      },
      records(page.values, 'emails have no values array')
        .filter((e) => text(e, 'email') !== '')
        .map((e) => ({
          email: text(e, 'email'),
          verified: e.is_confirmed === true,
          primary: e.is_primary === true,
        })),
    )
  },
  docs: ['https://developer.atlassian.com/cloud/bitbucket/oauth-2/'],
}

/**
 * Discord: `discord.com/api/oauth2/authorize` and `/token`; the user from `/api/users/@me`
 * (`email` with `verified`; name `username#discriminator`, or `username` for the unique names
 * whose discriminator is `0`; avatar on `cdn.discordapp.com`). Scopes `email identify`; PKCE;
 * refresh tokens.
 */
export const discord: ProviderPreset = {
  ...COMMON,
  name: 'discord',
  title: 'Discord',
  endpoints(url) {
    const api = `${chooseHost(url, 'discord.com')}/api`
    return { authorizeUrl: `${api}/oauth2/authorize`, tokenUrl: `${api}/oauth2/token`, api }
  },
  scopes: ['email', 'identify'],
  pkce: true,
  refresh: { issued: true },
  profileRequests: ({ api }) => ({ user: { url: `${api}/users/@me`, kind: 'object' } }),
  profile({ responses, endpoints }) {
    const profile = record(responses.user)
    const id = idOf(profile, 'id')
    const username = text(profile, 'username')
    const discriminator = text(profile, 'discriminator')
    const avatar = text(profile, 'avatar')
    const name =
      discriminator === '' || discriminator === '0' ? username : `${username}#${discriminator}`
    const picture =
      avatar === ''
        ? `https://cdn.discordapp.com/embed/avatars/${String(Number(discriminator || '0') % 5)}.png`
        : `https://cdn.discordapp.com/avatars/${id}/${avatar}.${avatar.startsWith('a_') ? 'gif' : 'png'}`
    return withEmails(
      {
        iss: endpoints.api,
        sub: id,
        name,
        picture,
        custom: { global_name: text(profile, 'global_name') },
      },
      primaryEmail(text(profile, 'email'), profile.verified === true),
    )
  },
  docs: [
    'https://discord.com/developers/docs/topics/oauth2',
    'https://discord.com/.well-known/oauth-authorization-server',
  ],
}

/**
 * Facebook: `www.facebook.com/dialog/oauth`, `graph.facebook.com/oauth/access_token`; the user
 * from `graph.facebook.com/me?fields=email,first_name,last_name,name,picture` with
 * `appsecret_proof` (hex HMAC-SHA256 of the token keyed with the app secret). Facebook does not
 * say whether it verified the email. Scope `email`; PKCE; no refresh tokens (long-lived tokens by
 * exchange instead).
 */
export const facebook: ProviderPreset = {
  ...COMMON,
  name: 'facebook',
  title: 'Facebook',
  endpoints(url) {
    const graph = chooseHost(url, 'graph.facebook.com')
    return {
      authorizeUrl: `${chooseHost(url, 'www.facebook.com')}/dialog/oauth`,
      tokenUrl: `${graph}/oauth/access_token`,
      api: graph,
    }
  },
  scopes: ['email'],
  pkce: true,
  refresh: { issued: false, requires: 'a long-lived token exchange instead (fb_exchange_token)' },
  profileRequests: ({ api }, { clientSecret, accessToken }) => {
    const encoder = new TextEncoder()
    const proof = bytesToHex(
      hmac(sha256, encoder.encode(clientSecret), encoder.encode(accessToken)),
    )
    return {
      user: {
        url: `${api}/me`,
        kind: 'object',
        params: { fields: 'email,first_name,last_name,name,picture', appsecret_proof: proof },
      },
    }
  },
  profile({ responses, endpoints }) {
    const profile = record(responses.user)
    const picture = record(record(profile.picture ?? {}).data ?? {})
    const full = `${text(profile, 'first_name')} ${text(profile, 'last_name')}`.trim()
    return withEmails(
      {
        iss: endpoints.api,
        sub: idOf(profile, 'id'),
        name: full === '' ? text(profile, 'name') : full,
        picture: text(picture, 'url'),
        nickname: text(profile, 'name'),
      },
      primaryEmail(text(profile, 'email'), undefined),
    )
  },
  docs: [
    'https://developers.facebook.com/docs/graph-api/securing-requests/',
    'https://developers.facebook.com/documentation/facebook-login/guides/advanced/oidc-token',
  ],
}

/**
 * Figma: `www.figma.com/oauth`, `api.figma.com/v1/oauth/token`; the user from
 * `api.figma.com/v1/me` (`id`, `email`, `handle`, `img_url`). Figma does not say whether it
 * verified the email. Scope `current_user:read`; no PKCE (not documented); refresh tokens.
 */
export const figma: ProviderPreset = {
  ...COMMON,
  name: 'figma',
  title: 'Figma',
  endpoints(url) {
    const api = chooseHost(url, 'api.figma.com')
    return {
      authorizeUrl: `${chooseHost(url, 'www.figma.com')}/oauth`,
      tokenUrl: `${api}/v1/oauth/token`,
      api,
    }
  },
  scopes: ['current_user:read'],
  pkce: false,
  refresh: { issued: true },
  profileRequests: ({ api }) => ({ user: { url: `${api}/v1/me`, kind: 'object' } }),
  profile({ responses, endpoints }) {
    const profile = record(responses.user)
    const handle = text(profile, 'handle')
    return withEmails(
      {
        iss: endpoints.api,
        sub: idOf(profile, 'id'),
        name: handle,
        picture: text(profile, 'img_url'),
        user_name: handle,
      },
      primaryEmail(text(profile, 'email'), undefined),
    )
  },
  docs: ['https://www.figma.com/developers/api#oauth2'],
}

/**
 * GitHub: `github.com/login/oauth/authorize` and `/access_token` (a bad code is a 200 with an
 * error body); the user from `api.github.com/user` and its addresses from `/user/emails`; GitHub
 * Enterprise (a custom URL) serves the API under `<URL>/api/v3`. Scope `user:email`; PKCE (S256,
 * since July 2025); no refresh tokens for OAuth apps (GitHub Apps with expiring tokens only).
 */
export const github: ProviderPreset = {
  ...COMMON,
  name: 'github',
  title: 'GitHub',
  endpoints(url) {
    const host = chooseHost(url, 'github.com')
    return {
      authorizeUrl: `${host}/login/oauth/authorize`,
      tokenUrl: `${host}/login/oauth/access_token`,
      api: url === undefined || url === '' ? 'https://api.github.com' : `${host}/api/v3`,
    }
  },
  scopes: ['user:email'],
  pkce: true,
  refresh: { issued: false, requires: 'a GitHub App with expiring user tokens' },
  profileRequests: ({ api }) => ({
    user: { url: `${api}/user`, kind: 'object' },
    emails: { url: `${api}/user/emails`, kind: 'json' },
  }),
  profile({ responses, endpoints }) {
    const profile = record(responses.user)
    const login = text(profile, 'login')
    return withEmails(
      {
        iss: endpoints.api,
        sub: idOf(profile, 'id'),
        name: text(profile, 'name'),
        picture: text(profile, 'avatar_url'),
        user_name: login,
        preferred_username: login,
      },
      records(responses.emails, 'emails are not a JSON array')
        .filter((e) => text(e, 'email') !== '')
        .map((e) => ({
          email: text(e, 'email'),
          verified: e.verified === true,
          primary: e.primary === true,
        })),
    )
  },
  docs: [
    'https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps',
    'https://github.blog/changelog/2025-07-14-pkce-support-for-oauth-and-github-app-authentication',
  ],
}

/**
 * GitLab (`https://gitlab.com` or an instance's URL): `/oauth/authorize`, `/oauth/token`; the user
 * from `/api/v4/user` (its `email` verified when `confirmed_at` is set) and more addresses from
 * `/api/v4/user/emails`. Scope `read_user`; PKCE; refresh tokens.
 */
export const gitlab: ProviderPreset = {
  ...COMMON,
  name: 'gitlab',
  title: 'GitLab',
  endpoints(url) {
    const base = baseUrl(url, 'https://gitlab.com')
    return { authorizeUrl: `${base}/oauth/authorize`, tokenUrl: `${base}/oauth/token`, api: base }
  },
  scopes: ['read_user'],
  pkce: true,
  refresh: { issued: true },
  profileRequests: ({ api }) => ({
    user: { url: `${api}/api/v4/user`, kind: 'object' },
    emails: { url: `${api}/api/v4/user/emails`, kind: 'json' },
  }),
  profile({ responses, endpoints }) {
    const profile = record(responses.user)
    const more = records(responses.emails, 'emails are not a JSON array')
    const emails: ProviderProfileEmail[] = []
    const primary = text(profile, 'email')
    if (primary !== '') {
      emails.push({
        email: primary,
        verified: text(profile, 'confirmed_at') !== '',
        primary: true,
      })
    }
    for (const e of more) {
      const email = text(e, 'email')
      if (email === '' || email === primary) continue
      emails.push({ email, verified: text(e, 'confirmed_at') !== '', primary: false })
    }
    return withEmails(
      {
        iss: endpoints.api,
        sub: idOf(profile, 'id'),
        name: text(profile, 'name'),
        picture: text(profile, 'avatar_url'),
        user_name: text(profile, 'username'),
      },
      emails,
    )
  },
  docs: ['https://docs.gitlab.com/api/oauth2/'],
}

/** A LinkedIn localized field (`{localized: {en_US: …}, preferredLocale: {language, country}}`). */
function localized(value: unknown): string {
  const field = record(value ?? {})
  const locale = record(field.preferredLocale ?? {})
  const names = record(field.localized ?? {})
  const preferred = text(names, `${text(locale, 'language')}_${text(locale, 'country')}`)
  return preferred !== ''
    ? preferred
    : (Object.values(names).find((v): v is string => typeof v === 'string') ?? '')
}

/**
 * LinkedIn: `api.linkedin.com/oauth/v2/authorization` and `/accessToken`; the user from `/v2/me`
 * (localized names, the display image's first identifier) and the address from
 * `/v2/emailAddress?q=members`. LinkedIn does not say whether it verified the address. Scopes
 * `r_emailaddress r_liteprofile`; no PKCE (approved native apps only); refresh tokens for approved
 * partners only.
 */
export const linkedin: ProviderPreset = {
  ...COMMON,
  name: 'linkedin',
  title: 'LinkedIn',
  endpoints(url) {
    const host = chooseHost(url, 'api.linkedin.com')
    return {
      authorizeUrl: `${host}/oauth/v2/authorization`,
      tokenUrl: `${host}/oauth/v2/accessToken`,
      api: host,
    }
  },
  scopes: ['r_emailaddress', 'r_liteprofile'],
  pkce: false,
  refresh: { issued: false, requires: 'LinkedIn approval (partners only)' },
  profileRequests: ({ api }) => ({
    user: {
      url: `${api}/v2/me`,
      kind: 'object',
      params: {
        projection: '(id,firstName,lastName,profilePicture(displayImage~:playableStreams))',
      },
    },
    emails: {
      url: `${api}/v2/emailAddress`,
      kind: 'object',
      params: { q: 'members', projection: '(elements*(handle~))' },
    },
  }),
  profile({ responses, endpoints }) {
    const profile = record(responses.user)
    const emails = record(responses.emails)
    const id = idOf(profile, 'id')
    const handle = record(
      records(emails.elements, 'emails have no elements array')[0]?.['handle~'] ?? {},
    )
    const email = text(handle, 'emailAddress')
    if (email === '') throw badProfile('has no emailAddress')
    const picture = record(record(profile.profilePicture ?? {})['displayImage~'] ?? {})
    const image = records(picture.elements ?? [])[0]
    const avatar = text(records(image?.identifiers ?? [])[0], 'identifier')
    return withEmails(
      {
        iss: endpoints.api,
        sub: id,
        name: `${localized(profile.firstName)} ${localized(profile.lastName)}`.trim(),
        picture: avatar,
      },
      primaryEmail(email, undefined),
    )
  },
  docs: [
    'https://learn.microsoft.com/en-us/linkedin/shared/authentication/authorization-code-flow',
  ],
}

/** The API version Notion's user endpoint is called with (upstream's). */
export const NOTION_VERSION = '2021-08-16'

/**
 * Notion: `api.notion.com/v1/oauth/authorize` (`owner=user`) and `/v1/oauth/token` (HTTP Basic);
 * the user from `/v1/users/me` with `Notion-Version: 2021-08-16`: the bot's owner user. Notion
 * does not say whether it verified the email. No scopes; no PKCE (not documented); no refresh
 * tokens (its tokens do not expire).
 */
export const notion: ProviderPreset = {
  name: 'notion',
  title: 'Notion',
  protocol: 'oauth2',
  authScheme: 'basic_auth',
  authorizeParams: { owner: 'user' },
  endpoints(url) {
    const api = `${chooseHost(url, 'api.notion.com')}/v1`
    return { authorizeUrl: `${api}/oauth/authorize`, tokenUrl: `${api}/oauth/token`, api }
  },
  scopes: [],
  pkce: false,
  refresh: { issued: false },
  profileRequests: ({ api }) => ({
    me: { url: `${api}/users/me`, kind: 'object', headers: { 'Notion-Version': NOTION_VERSION } },
  }),
  profile({ responses, endpoints }) {
    const me = record(responses.me)
    const owner = record(record(record(me.bot ?? {}).owner ?? {}).user, 'has no bot.owner.user')
    return withEmails(
      {
        iss: endpoints.api,
        sub: idOf(owner, 'id'),
        name: text(owner, 'name'),
        picture: text(owner, 'avatar_url'),
      },
      primaryEmail(text(record(owner.person ?? {}), 'email'), undefined),
    )
  },
  docs: ['https://developers.notion.com/docs/authorization'],
}

/**
 * Slack: `slack.com/oauth/authorize`, `slack.com/api/oauth.access` (errors come as 200
 * `{"ok":false,"error":…}`); the user from `slack.com/api/openid.connect.userInfo`
 * (`https://slack.com/user_id`, `email` with `email_verified` when sent, `name`, `picture`,
 * `https://slack.com/team_id`). Scopes `profile email openid`; no PKCE (public clients only); no
 * refresh tokens unless token rotation is turned on for the app.
 */
export const slack: ProviderPreset = {
  ...COMMON,
  name: 'slack',
  title: 'Slack',
  endpoints(url) {
    const host = chooseHost(url, 'slack.com')
    return {
      authorizeUrl: `${host}/oauth/authorize`,
      tokenUrl: `${host}/api/oauth.access`,
      api: host,
    }
  },
  scopes: ['profile', 'email', 'openid'],
  pkce: false,
  refresh: { issued: false, requires: 'token rotation turned on for the app' },
  profileRequests: ({ api }) => ({
    user: { url: `${api}/api/openid.connect.userInfo`, kind: 'object' },
  }),
  profile({ responses, endpoints }) {
    const profile = record(responses.user)
    if (profile.ok === false) throw badProfile(`is an error: ${text(profile, 'error')}`)
    return withEmails(
      {
        iss: endpoints.api,
        sub: idOf(profile, 'https://slack.com/user_id'),
        name: text(profile, 'name'),
        picture: text(profile, 'picture'),
        custom: { 'https://slack.com/team_id': text(profile, 'https://slack.com/team_id') },
      },
      primaryEmail(
        text(profile, 'email'),
        'email_verified' in profile ? flag(profile, 'email_verified') : undefined,
      ),
    )
  },
  docs: ['https://api.slack.com/authentication/sign-in-with-slack'],
}

/** The GraphQL query of Snapchat's `/v1/me`. */
const SNAPCHAT_ME_QUERY = '{me { externalId displayName bitmoji { avatar id } email } }'

/**
 * Snapchat: `accounts.snapchat.com/accounts/oauth2/auth` and `/token`; the user from
 * `kit.snapchat.com/v1/me?query=…` (`data.me`). Snapchat does not say whether it verified an
 * email. Scopes: the three `user.*` scope URLs; PKCE; refresh tokens.
 */
export const snapchat: ProviderPreset = {
  ...COMMON,
  name: 'snapchat',
  title: 'Snapchat',
  endpoints(url) {
    const auth = chooseHost(url, 'accounts.snapchat.com')
    return {
      authorizeUrl: `${auth}/accounts/oauth2/auth`,
      tokenUrl: `${auth}/accounts/oauth2/token`,
      api: chooseHost(url, 'kit.snapchat.com'),
    }
  },
  scopes: [
    'https://auth.snapchat.com/oauth2/api/user.external_id',
    'https://auth.snapchat.com/oauth2/api/user.display_name',
    'https://auth.snapchat.com/oauth2/api/user.bitmoji.avatar',
  ],
  pkce: true,
  refresh: { issued: true },
  profileRequests: ({ api }) => ({
    me: { url: `${api}/v1/me`, kind: 'object', params: { query: SNAPCHAT_ME_QUERY } },
  }),
  profile({ responses, endpoints }) {
    const me = record(record(record(responses.me).data ?? {}).me, 'has no data.me')
    return withEmails(
      {
        iss: endpoints.api,
        sub: idOf(me, 'externalId'),
        name: text(me, 'displayName'),
        picture: text(record(me.bitmoji ?? {}), 'avatar'),
      },
      primaryEmail(text(me, 'email'), undefined),
    )
  },
  docs: ['https://developers.snap.com/snap-kit/login-kit/overview'],
}

/**
 * Spotify: `accounts.spotify.com/authorize` and `/api/token`; the user from
 * `api.spotify.com/v1/me` (`id`, `display_name`, the largest of `images`; its `email` is **not**
 * verified, as upstream counts it). Scope `user-read-email`; PKCE; refresh tokens.
 */
export const spotify: ProviderPreset = {
  ...COMMON,
  name: 'spotify',
  title: 'Spotify',
  endpoints(url) {
    const auth = chooseHost(url, 'accounts.spotify.com')
    return {
      authorizeUrl: `${auth}/authorize`,
      tokenUrl: `${auth}/api/token`,
      api: `${chooseHost(url, 'api.spotify.com')}/v1`,
    }
  },
  scopes: ['user-read-email'],
  pkce: true,
  refresh: { issued: true },
  profileRequests: ({ api }) => ({ user: { url: `${api}/me`, kind: 'object' } }),
  profile({ responses, endpoints }) {
    const profile = record(responses.user)
    const area = (i: Record<string, unknown>) =>
      (typeof i.height === 'number' ? i.height : 0) * (typeof i.width === 'number' ? i.width : 0)
    const largest = records(profile.images ?? []).reduce<Record<string, unknown> | undefined>(
      (best, image) => (best === undefined || area(image) > area(best) ? image : best),
      undefined,
    )
    return withEmails(
      {
        iss: endpoints.api,
        sub: idOf(profile, 'id'),
        name: text(profile, 'display_name'),
        picture: text(largest, 'url'),
      },
      primaryEmail(text(profile, 'email'), false),
    )
  },
  docs: ['https://developer.spotify.com/documentation/web-api/tutorials/code-flow'],
}

/**
 * Twitch: `id.twitch.tv/oauth2/authorize` and `/token`; the user from `api.twitch.tv/helix/users`
 * with `Client-Id` beside the bearer token (`data[0]`); Twitch returns only a verified address.
 * Scope `user:read:email`; no PKCE (not documented); refresh tokens.
 */
export const twitch: ProviderPreset = {
  ...COMMON,
  name: 'twitch',
  title: 'Twitch',
  endpoints(url) {
    const auth = chooseHost(url, 'id.twitch.tv')
    return {
      authorizeUrl: `${auth}/oauth2/authorize`,
      tokenUrl: `${auth}/oauth2/token`,
      api: chooseHost(url, 'api.twitch.tv'),
    }
  },
  scopes: ['user:read:email'],
  pkce: false,
  refresh: { issued: true },
  profileRequests: ({ api }, { clientId }) => ({
    users: { url: `${api}/helix/users`, kind: 'object', headers: { 'Client-Id': clientId } },
  }),
  profile({ responses, endpoints }) {
    const profile = records(record(responses.users).data, 'has no data array')[0]
    if (profile === undefined) throw badProfile('has no user')
    const login = text(profile, 'login')
    return withEmails(
      {
        iss: endpoints.api,
        sub: idOf(profile, 'id'),
        name: login,
        full_name: text(profile, 'display_name'),
        picture: text(profile, 'profile_image_url'),
        user_name: login,
        preferred_username: login,
      },
      primaryEmail(text(profile, 'email'), true),
    )
  },
  docs: [
    'https://dev.twitch.tv/docs/api/reference/#get-users',
    'https://dev.twitch.tv/docs/authentication/getting-tokens-oauth/',
  ],
}

/**
 * WorkOS SSO: `api.workos.com/sso/authorize` (with a `connection`, `organization` or `provider`)
 * and `/sso/token`, whose response carries the `profile`. The email is what the organization's
 * identity provider asserts, which WorkOS does not verify. No scopes; PKCE; no refresh tokens.
 */
export const workos: ProviderPreset = {
  ...COMMON,
  name: 'workos',
  title: 'WorkOS',
  endpoints(url) {
    const host = chooseHost(url, 'api.workos.com')
    return { authorizeUrl: `${host}/sso/authorize`, tokenUrl: `${host}/sso/token`, api: host }
  },
  scopes: [],
  pkce: true,
  refresh: { issued: false },
  profileRequests: () => ({}),
  profile({ tokenResponse, endpoints }) {
    const profile = record(tokenResponse.profile, 'is missing from the token response')
    return withEmails(
      {
        iss: endpoints.api,
        sub: idOf(profile, 'id'),
        name: `${text(profile, 'first_name')} ${text(profile, 'last_name')}`.trim(),
        custom: {
          connection_id: text(profile, 'connection_id'),
          connection_type: text(profile, 'connection_type'),
          organization_id: text(profile, 'organization_id'),
          idp_id: text(profile, 'idp_id'),
        },
      },
      primaryEmail(text(profile, 'email'), undefined),
    )
  },
  docs: ['https://workos.com/docs/reference/sso/get-authorization-url'],
}

/**
 * Fly.io: `api.fly.io/oauth/authorize` and `/oauth/token`; the user from `/oauth/token/info`
 * (`user_id`, `user_name`, `email`, which Fly counts as verified, and the token's
 * `resource_owner_id`, `organizations`, `application`, `scope`, `created_at` as custom claims).
 * Scope `read`; no PKCE (upstream sends none); refresh tokens.
 */
export const fly: ProviderPreset = {
  ...COMMON,
  name: 'fly',
  title: 'Fly.io',
  endpoints(url) {
    const api = chooseHost(url, 'api.fly.io')
    return { authorizeUrl: `${api}/oauth/authorize`, tokenUrl: `${api}/oauth/token`, api }
  },
  scopes: ['read'],
  pkce: false,
  refresh: { issued: true },
  profileRequests: ({ api }) => ({ info: { url: `${api}/oauth/token/info`, kind: 'object' } }),
  profile({ responses, endpoints }) {
    const info = record(responses.info)
    return withEmails(
      {
        iss: endpoints.api,
        sub: idOf(info, 'user_id'),
        name: text(info, 'user_name'),
        full_name: text(info, 'user_name'),
        custom: {
          resource_owner_id: info.resource_owner_id,
          organizations: info.organizations,
          application: info.application,
          scope: info.scope,
          created_at: info.created_at,
        },
      },
      primaryEmail(text(info, 'email'), true),
    )
  },
  docs: ['https://fly.io/docs/reference/extensions_api/'],
}

/**
 * Kakao: `kauth.kakao.com/oauth/authorize` and `/oauth/token` (client credentials in the body);
 * the user from `kapi.kakao.com/v2/user/me` (`id`, `kakao_account.profile.nickname` and
 * `profile_image_url`, `kakao_account.email`, verified when both `is_email_verified` and
 * `is_email_valid`). Scopes `account_email profile_image profile_nickname`; no PKCE; refresh
 * tokens.
 */
export const kakao: ProviderPreset = {
  ...COMMON,
  name: 'kakao',
  title: 'Kakao',
  endpoints(url) {
    const auth = chooseHost(url, 'kauth.kakao.com')
    return {
      authorizeUrl: `${auth}/oauth/authorize`,
      tokenUrl: `${auth}/oauth/token`,
      api: chooseHost(url, 'kapi.kakao.com'),
    }
  },
  scopes: ['account_email', 'profile_image', 'profile_nickname'],
  pkce: false,
  refresh: { issued: true },
  profileRequests: ({ api }) => ({ user: { url: `${api}/v2/user/me`, kind: 'object' } }),
  profile({ responses, endpoints }) {
    const user = record(responses.user)
    const account = record(user.kakao_account ?? {})
    const profile = record(account.profile ?? {})
    const nickname = text(profile, 'nickname')
    return withEmails(
      {
        iss: endpoints.api,
        sub: idOf(user, 'id'),
        name: nickname,
        picture: text(profile, 'profile_image_url'),
        user_name: nickname,
        preferred_username: nickname,
      },
      primaryEmail(
        text(account, 'email'),
        flag(account, 'is_email_verified') && flag(account, 'is_email_valid'),
      ),
    )
  },
  docs: ['https://developers.kakao.com/docs/latest/en/kakaologin/rest-api'],
}

/**
 * Sign in with Slack (OpenID Connect) as upstream's `slack_oidc`: `slack.com/openid/connect/authorize`
 * and `slack.com/api/openid.connect.token`; the user from `/api/openid.connect.userInfo`, mapped as
 * {@link slack} maps it. Scopes `profile email openid`; no PKCE.
 */
export const slack_oidc: ProviderPreset = {
  ...slack,
  name: 'slack_oidc',
  title: 'Slack (OpenID Connect)',
  endpoints(url) {
    const host = chooseHost(url, 'slack.com')
    return {
      authorizeUrl: `${host}/openid/connect/authorize`,
      tokenUrl: `${host}/api/openid.connect.token`,
      api: host,
    }
  },
  docs: ['https://api.slack.com/authentication/sign-in-with-slack'],
}

/**
 * Zoom: `zoom.us/oauth/authorize` and `/oauth/token` (HTTP Basic); the user from
 * `api.zoom.us/v2/users/me` (`id`, `first_name` + `last_name`, `email`, `pic_url`); the email
 * counts as verified unless the account logs in with Zoom's own password (`login_type` 100) and
 * `verified` is 0, as upstream counts it. No default scope; no PKCE; refresh tokens.
 */
export const zoom: ProviderPreset = {
  ...COMMON,
  authScheme: 'basic_auth',
  name: 'zoom',
  title: 'Zoom',
  endpoints(url) {
    const auth = chooseHost(url, 'zoom.us')
    return {
      authorizeUrl: `${auth}/oauth/authorize`,
      tokenUrl: `${auth}/oauth/token`,
      api: `${chooseHost(url, 'api.zoom.us')}/v2`,
    }
  },
  scopes: [],
  pkce: false,
  refresh: { issued: true },
  profileRequests: ({ api }) => ({ user: { url: `${api}/users/me`, kind: 'object' } }),
  profile({ responses, endpoints }) {
    const user = record(responses.user)
    const name = `${text(user, 'first_name')} ${text(user, 'last_name')}`.trim()
    const loginType = user.login_type
    const passwordAccount = loginType === '100' || loginType === 100
    const verified = !passwordAccount || (typeof user.verified === 'number' && user.verified !== 0)
    return withEmails(
      {
        iss: endpoints.api,
        sub: idOf(user, 'id'),
        name,
        full_name: name,
        picture: text(user, 'pic_url'),
      },
      primaryEmail(text(user, 'email'), verified),
    )
  },
  docs: ['https://developers.zoom.us/docs/api/users/#tag/users/GET/users/{userId}'],
}
