import {
  OAuth2Provider,
  chooseHost,
  profileClaims,
  assumedEmailOf,
  idOf,
  oauth2Client,
  record,
  text,
  type ProviderContext,
} from './base.js'
import type { OAuthProvider } from './oauth-provider.js'

/**
 * Figma: `www.figma.com/oauth`, `api.figma.com/v1/oauth/token`; the user from
 * `api.figma.com/v1/me` (`id`, `email`, `handle`, `img_url`). Figma does not say whether it
 * verified the email: it counts as verified, as upstream, but links to an existing account only
 * with `EXTERNAL_FIGMA_TRUST_EMAIL`. Scope `current_user:read`. No PKCE (not documented).
 *
 * @see https://www.figma.com/developers/api#oauth2
 */
export function figma(ctx: ProviderContext): OAuthProvider {
  const auth = chooseHost(ctx.config.url, 'www.figma.com')
  const api = chooseHost(ctx.config.url, 'api.figma.com')
  return new OAuth2Provider({
    name: 'figma',
    client: oauth2Client(ctx, { authorizeUrl: `${auth}/oauth`, tokenUrl: `${api}/v1/oauth/token` }),
    scopes: ['current_user:read'],
    async readUser(user) {
      const profile = record(await user.object(`${api}/v1/me`))
      const id = idOf(profile, 'id')
      const handle = text(profile, 'handle')
      return {
        id,
        emails: assumedEmailOf(ctx, text(profile, 'email')),
        claims: profileClaims({
          iss: api,
          id,
          name: handle,
          avatar: text(profile, 'img_url'),
          userName: handle,
        }),
      }
    },
  })
}
