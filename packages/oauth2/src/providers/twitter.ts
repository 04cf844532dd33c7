/**
 * The presets of X (Twitter): its OAuth 1.0a API, which the auth server uses as upstream's
 * `twitter` provider does, and its OAuth 2.0 API with PKCE (`x`).
 *
 * @module
 */
import {
  chooseHost,
  idOf,
  primaryEmail,
  record,
  text,
  withEmails,
  type ProviderPreset,
} from './preset.js'

/**
 * Twitter with OAuth 1.0a (upstream's `twitter`): a request token from
 * `api.twitter.com/oauth/request_token`, the user sent to `/oauth/authenticate`, `oauth_token` +
 * `oauth_verifier` exchanged at `/oauth/access_token`; the user from
 * `/1.1/account/verify_credentials.json?include_email=true&include_entities=false&skip_status=true`
 * (`id_str`, `name`, `screen_name`, `email`, `profile_image_url_https`); Twitter returns no
 * address that is not verified. Requests are signed HMAC-SHA1. No scopes, no PKCE, no refresh
 * tokens (OAuth 1.0a tokens do not expire).
 */
export const twitter: ProviderPreset = {
  name: 'twitter',
  title: 'Twitter (OAuth 1.0a)',
  protocol: 'oauth1a',
  endpoints(url) {
    const host = chooseHost(url, 'api.twitter.com')
    return {
      requestTokenUrl: `${host}/oauth/request_token`,
      authorizeUrl: `${host}/oauth/authenticate`,
      tokenUrl: `${host}/oauth/access_token`,
      api: host,
    }
  },
  scopes: [],
  pkce: false,
  refresh: { issued: false },
  authScheme: 'request_body',
  authorizeParams: {},
  profileRequests: ({ api }) => ({
    user: {
      url: `${api}/1.1/account/verify_credentials.json`,
      kind: 'object',
      params: { include_email: 'true', include_entities: 'false', skip_status: 'true' },
    },
  }),
  profile({ responses, endpoints }) {
    const profile = record(responses.user)
    const screenName = text(profile, 'screen_name')
    return withEmails(
      {
        iss: endpoints.api,
        sub: idOf(profile, 'id_str'),
        name: text(profile, 'name'),
        picture: text(profile, 'profile_image_url_https'),
        user_name: screenName,
        preferred_username: screenName,
      },
      primaryEmail(text(profile, 'email'), true),
    )
  },
  docs: ['https://developer.x.com/en/docs/authentication/oauth-1-0a/obtaining-user-access-tokens'],
}

/**
 * X with OAuth 2.0: `x.com/i/oauth2/authorize` and `api.x.com/2/oauth2/token` (HTTP Basic for
 * confidential clients); PKCE is required (X refuses requests without `code_challenge`); the user
 * from `api.x.com/2/users/me` (`data`: `id`, `name`, `username`, `confirmed_email` (X returns only
 * a confirmed address), `profile_image_url`). Scopes `users.email tweet.read users.read
 * offline.access` (`tweet.read` is needed for any user context; `offline.access` gives refresh
 * tokens).
 */
export const x: ProviderPreset = {
  name: 'x',
  title: 'X (OAuth 2.0)',
  protocol: 'oauth2',
  endpoints(url) {
    const api = chooseHost(url, 'api.x.com')
    return {
      authorizeUrl: `${chooseHost(url, 'x.com')}/i/oauth2/authorize`,
      tokenUrl: `${api}/2/oauth2/token`,
      api,
    }
  },
  scopes: ['users.email', 'tweet.read', 'users.read', 'offline.access'],
  pkce: 'required',
  refresh: { issued: true, requires: 'the offline.access scope' },
  authScheme: 'basic_auth',
  authorizeParams: {},
  profileRequests: ({ api }) => ({
    user: {
      url: `${api}/2/users/me`,
      kind: 'object',
      params: {
        'user.fields': 'id,name,username,confirmed_email,profile_image_url,url,created_at',
      },
    },
  }),
  profile({ responses, endpoints }) {
    const user = record(record(responses.user).data, 'has no data')
    const username = text(user, 'username')
    return withEmails(
      {
        iss: endpoints.api,
        sub: idOf(user, 'id'),
        name: text(user, 'name'),
        picture: text(user, 'profile_image_url'),
        user_name: username,
        preferred_username: username,
        custom: { created_at: text(user, 'created_at') },
      },
      primaryEmail(text(user, 'confirmed_email'), true),
    )
  },
  docs: ['https://developer.x.com/en/docs/authentication/oauth-2-0/authorization-code'],
}
