import {
  OAuth2Provider,
  profileClaims,
  discoveredClient,
  emailOf,
  flag,
  idOf,
  text,
  trimSlash,
  type ProviderContext,
} from './base.js'
import type { OAuthProvider } from './oauth-provider.js'
import { verifiedIdToken } from './oidc.js'

/**
 * Google: found by OIDC discovery from `https://accounts.google.com` (or `EXTERNAL_GOOGLE_URL`,
 * for tests and private deployments); the user from the checked ID token (`sub`, `email` with
 * `email_verified`, `name`, `picture`, `hd`). Scopes `openid email profile`. PKCE (S256).
 *
 * @see https://developers.google.com/identity/openid-connect/openid-connect
 */
export function google(ctx: ProviderContext): OAuthProvider {
  const issuer = trimSlash(ctx.config.url === '' ? 'https://accounts.google.com' : ctx.config.url)
  return new OAuth2Provider({
    name: 'google',
    client: discoveredClient(ctx, issuer),
    scopes: ['openid', 'email', 'profile'],
    nonce: true,
    pkce: true,
    async readUser(user, tokens, _callback, state) {
      const token = await verifiedIdToken(user.client, tokens, state)
      const id = idOf(token, 'sub')
      const name = text(token, 'name')
      const picture = text(token, 'picture')
      const hd = text(token, 'hd')
      return {
        id,
        emails: emailOf(text(token, 'email'), flag(token, 'email_verified')),
        claims: profileClaims({ iss: token.iss, id, name, avatar: picture, custom: { hd } }),
      }
    },
  })
}
