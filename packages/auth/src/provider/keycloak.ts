import {
  OAuth2Provider,
  profileClaims,
  emailOf,
  flag,
  idOf,
  oauth2Client,
  text,
  trimSlash,
  type ProviderContext,
} from './base.js'
import type { OAuthProvider } from './oauth-provider.js'
import { verifiedIdToken } from './oidc.js'

/** Keycloak's claims that have a place of their own; the rest become `custom_claims`. */
const STANDARD = new Set(['sub', 'name', 'email', 'email_verified', 'preferred_username'])

/**
 * Keycloak: the realm URL (`EXTERNAL_KEYCLOAK_URL`, required) with
 * `/protocol/openid-connect/{auth,token,userinfo,certs}`. The ID token, when the token response
 * has one, is checked against the realm's keys; the user comes from UserInfo (`sub`, `email` with
 * `email_verified`, `name`, `preferred_username`; every other claim in `custom_claims`).
 * Scopes `openid profile email` (`openid`, which upstream leaves out, is what current Keycloak
 * releases require for UserInfo). PKCE (S256).
 *
 * @see https://www.keycloak.org/securing-apps/oidc-layers
 */
export function keycloak(ctx: ProviderContext): OAuthProvider {
  const realm = trimSlash(ctx.config.url)
  const endpoint = `${realm}/protocol/openid-connect`
  return new OAuth2Provider({
    name: 'keycloak',
    client: oauth2Client(ctx, {
      authorizeUrl: `${endpoint}/auth`,
      tokenUrl: `${endpoint}/token`,
      metadata: {
        issuer: realm,
        jwks_uri: `${endpoint}/certs`,
        userinfo_endpoint: `${endpoint}/userinfo`,
        id_token_signing_alg_values_supported: ['RS256', 'ES256', 'PS256', 'EdDSA'],
      },
    }),
    scopes: ['openid', 'profile', 'email'],
    nonce: true,
    pkce: true,
    async readUser(user, tokens, _callback, state) {
      const idToken =
        tokens.params.id_token === undefined
          ? undefined
          : await verifiedIdToken(user.client, tokens, state)
      const info = await user.client.userinfo(tokens.accessToken, {
        snaky: false,
        ...(idToken === undefined ? {} : { expectedSubject: idToken.sub }),
      })
      const id = idOf(info, 'sub')
      const custom = Object.fromEntries(Object.entries(info).filter(([k]) => !STANDARD.has(k)))
      const name = text(info, 'name')
      return {
        id,
        emails: emailOf(text(info, 'email'), flag(info, 'email_verified')),
        claims: profileClaims({
          iss: realm,
          id,
          name,
          preferredUsername: text(info, 'preferred_username'),
          custom,
        }),
      }
    },
  })
}
