import { Client } from '@gatehouse/oauth2'
import { decodeJwt } from 'jose'
import {
  MalformedProfileError,
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

/** Tenants whose ID-token checker is kept (their keys cached). */
const MAX_TENANTS = 100

/**
 * Azure (Microsoft Entra ID): `{login.microsoftonline.com/common or EXTERNAL_AZURE_URL}`
 * `/oauth2/v2.0/authorize` and `/token`; the user from the ID token, checked against the
 * tenant's issuer (`https://<host>/<tenant id>/v2.0`, on the configured host) and the keys at
 * `<URL>/discovery/v2.0/keys`. The email counts as verified when `xms_edov` (email domain owner
 * verified) or `email_verified` is true. Scope `openid` (plus `email profile` for the claims).
 * PKCE (S256).
 *
 * @see https://learn.microsoft.com/en-us/entra/identity-platform/id-token-claims-reference
 */
export function azure(ctx: ProviderContext): OAuthProvider {
  const base = trimSlash(
    ctx.config.url === '' ? 'https://login.microsoftonline.com/common' : ctx.config.url,
  )
  const origin = new URL(base).origin
  const client = oauth2Client(ctx, {
    authorizeUrl: `${base}/oauth2/v2.0/authorize`,
    tokenUrl: `${base}/oauth2/v2.0/token`,
  })
  const issuerPattern = new RegExp(
    `^${origin.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}/[^/]+/v2\\.0$`,
  )
  // The tenant's issuer is only known from the token: one client (and its cached JWKS) per
  // tenant seen, at most MAX_TENANTS of them.
  const tenants = new Map<string, Client>()
  const tenantClient = (iss: string): Client => {
    let tenant = tenants.get(iss)
    if (tenant === undefined) {
      if (tenants.size >= MAX_TENANTS) tenants.delete(tenants.keys().next().value ?? '')
      tenant = new Client(ctx.config.clientId, ctx.config.secret, {
        ...client.options,
        metadata: { issuer: iss, jwks_uri: `${base}/discovery/v2.0/keys` },
      })
      tenants.set(iss, tenant)
    }
    return tenant
  }
  return new OAuth2Provider({
    name: 'azure',
    client,
    scopes: ['openid', 'email', 'profile'],
    nonce: true,
    pkce: true,
    async readUser(_user, tokens, _callback, state) {
      const raw = tokens.params.id_token
      const iss = typeof raw === 'string' ? decodeJwt(raw).iss : undefined
      if (iss === undefined || !issuerPattern.test(iss)) {
        throw new MalformedProfileError(
          `ID token issuer ${String(iss)} is not a tenant of ${origin}`,
        )
      }
      const token = await verifiedIdToken(tenantClient(iss), tokens, state)
      const id = idOf(token, 'sub')
      const name = text(token, 'name')
      const tid = text(token, 'tid')
      return {
        id,
        emails: emailOf(
          text(token, 'email'),
          flag(token, 'xms_edov') || flag(token, 'email_verified'),
        ),
        claims: profileClaims({
          iss,
          id,
          name,
          preferredUsername: text(token, 'preferred_username'),
          custom: { tid },
        }),
      }
    },
  })
}
