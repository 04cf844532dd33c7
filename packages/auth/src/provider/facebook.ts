import { createHmac } from 'node:crypto'
import {
  OAuth2Provider,
  chooseHost,
  profileClaims,
  emailOf,
  idOf,
  oauth2Client,
  record,
  text,
  type ProviderContext,
} from './base.js'
import type { OAuthProvider } from './oauth-provider.js'

/**
 * Facebook: `www.facebook.com/dialog/oauth`, `graph.facebook.com/oauth/access_token`; the user
 * from `graph.facebook.com/me?fields=email,first_name,last_name,name,picture` with
 * `appsecret_proof` = hex HMAC-SHA256 of the token keyed with the app secret. Its email counts as
 * verified. Scope `email`.
 *
 * @see https://developers.facebook.com/docs/graph-api/securing-requests/
 */
export function facebook(ctx: ProviderContext): OAuthProvider {
  const auth = chooseHost(ctx.config.url, 'www.facebook.com')
  const graph = chooseHost(ctx.config.url, 'graph.facebook.com')
  return new OAuth2Provider({
    name: 'facebook',
    client: oauth2Client(ctx, {
      authorizeUrl: `${auth}/dialog/oauth`,
      tokenUrl: `${graph}/oauth/access_token`,
    }),
    scopes: ['email'],
    async readUser(user, tokens) {
      const proof = createHmac('sha256', ctx.config.secret).update(tokens.accessToken).digest('hex')
      const profile = record(
        await user.object(`${graph}/me`, {
          params: { fields: 'email,first_name,last_name,name,picture', appsecret_proof: proof },
        }),
      )
      const id = idOf(profile, 'id')
      const picture = record(record(profile.picture ?? {}).data ?? {})
      const full = `${text(profile, 'first_name')} ${text(profile, 'last_name')}`.trim()
      const name = full === '' ? text(profile, 'name') : full
      return {
        id,
        emails: emailOf(text(profile, 'email'), true),
        claims: profileClaims({
          iss: graph,
          id,
          name,
          avatar: text(picture, 'url'),
          nickname: text(profile, 'name'),
        }),
      }
    },
  })
}
