import {
  OAuth2Provider,
  chooseHost,
  profileClaims,
  emailOf,
  idOf,
  oauth2Client,
  record,
  records,
  text,
  type ProviderContext,
} from './base.js'
import type { OAuthProvider } from './oauth-provider.js'

/**
 * Spotify: `accounts.spotify.com/authorize` and `/api/token`; the user from
 * `api.spotify.com/v1/me` (`id`, `display_name`, the largest of `images`; its `email` is **not**
 * counted as verified, as upstream). Scope `user-read-email`. PKCE (S256).
 *
 * @see https://developer.spotify.com/documentation/web-api/tutorials/code-flow
 */
export function spotify(ctx: ProviderContext): OAuthProvider {
  const auth = chooseHost(ctx.config.url, 'accounts.spotify.com')
  const api = `${chooseHost(ctx.config.url, 'api.spotify.com')}/v1`
  return new OAuth2Provider({
    name: 'spotify',
    client: oauth2Client(ctx, { authorizeUrl: `${auth}/authorize`, tokenUrl: `${auth}/api/token` }),
    scopes: ['user-read-email'],
    pkce: true,
    async readUser(user) {
      const profile = record(await user.object(`${api}/me`))
      const id = idOf(profile, 'id')
      const area = (i: Record<string, unknown>) =>
        (typeof i.height === 'number' ? i.height : 0) * (typeof i.width === 'number' ? i.width : 0)
      const largest = records(profile.images ?? []).reduce<Record<string, unknown> | undefined>(
        (best, image) => (best === undefined || area(image) > area(best) ? image : best),
        undefined,
      )
      const name = text(profile, 'display_name')
      return {
        id,
        emails: emailOf(text(profile, 'email'), false),
        claims: profileClaims({ iss: api, id, name, avatar: text(largest, 'url') }),
      }
    },
  })
}
