import { createHmac } from 'node:crypto'
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
 * Facebook: `www.facebook.com/dialog/oauth`, `graph.facebook.com/oauth/access_token`; the user
 * from `graph.facebook.com/me?fields=email,first_name,last_name,name,picture` with
 * `appsecret_proof` = hex HMAC-SHA256 of the token keyed with the app secret. Facebook does not
 * say whether it verified the email ("not returned if no valid email address is available"): it
 * counts as verified, as upstream, but links to an existing account only with
 * `EXTERNAL_FACEBOOK_TRUST_EMAIL`. Scope `email`. PKCE (S256), documented with Facebook's manual
 * login flow.
 *
 * @see https://developers.facebook.com/docs/graph-api/securing-requests/
 * @see https://developers.facebook.com/documentation/facebook-login/guides/advanced/oidc-token
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
    pkce: true,
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
        emails: assumedEmailOf(ctx, text(profile, 'email')),
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
