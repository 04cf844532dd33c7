import {
  MalformedProfileError,
  OAuth2Provider,
  chooseHost,
  profileClaims,
  emailOf,
  idOf,
  oauth2Client,
  records,
  text,
  type ProviderContext,
} from './base.js'
import type { OAuthProvider } from './oauth-provider.js'

/**
 * Twitch: `id.twitch.tv/oauth2/authorize` and `/token`; the user from `api.twitch.tv/helix/users`
 * with `Client-Id` beside the bearer token (`data[0]`: `id`, `login`, `email`,
 * `profile_image_url`). Twitch returns only a verified address ("the user's verified email
 * address"). Scope `user:read:email`. No PKCE (not documented).
 *
 * @see https://dev.twitch.tv/docs/api/reference/#get-users
 *
 * @see https://dev.twitch.tv/docs/authentication/getting-tokens-oauth/
 */
export function twitch(ctx: ProviderContext): OAuthProvider {
  const auth = chooseHost(ctx.config.url, 'id.twitch.tv')
  const api = chooseHost(ctx.config.url, 'api.twitch.tv')
  return new OAuth2Provider({
    name: 'twitch',
    client: oauth2Client(ctx, {
      authorizeUrl: `${auth}/oauth2/authorize`,
      tokenUrl: `${auth}/oauth2/token`,
    }),
    scopes: ['user:read:email'],
    async readUser(user) {
      const body = await user.object(`${api}/helix/users`, {
        headers: { 'Client-Id': ctx.config.clientId },
      })
      const profile = records(body.data, 'has no data array')[0]
      if (profile === undefined) throw new MalformedProfileError('has no user')
      const id = idOf(profile, 'id')
      const login = text(profile, 'login')
      return {
        id,
        emails: emailOf(text(profile, 'email'), true),
        claims: profileClaims({
          iss: api,
          id,
          name: login,
          fullName: text(profile, 'display_name'),
          avatar: text(profile, 'profile_image_url'),
          userName: login,
          preferredUsername: login,
        }),
      }
    },
  })
}
