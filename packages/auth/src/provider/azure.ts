import { Client } from '@gatehouse/oauth2'
import { PROVIDER_PRESETS } from '@gatehouse/oauth2/providers'
import { decodeJwt } from 'jose'
import {
  MalformedProfileError,
  endpointsOf,
  oauth2Client,
  presetProvider,
  primaryClientId,
  type ProviderContext,
} from './base.js'
import type { OAuthProvider, ProviderTokens } from './oauth-provider.js'

/** Tenants whose ID-token checker is kept (their keys cached). */
const MAX_TENANTS = 100

/**
 * Azure (Microsoft Entra ID): the `azure` preset of `@gatehouse/oauth2/providers`
 * (`{login.microsoftonline.com/common or EXTERNAL_AZURE_URL}/oauth2/v2.0/…`, the user from the ID
 * token, the email verified by `xms_edov` or `email_verified`). The tenant's issuer is only known
 * from the token: it must be one of the preset's issuers on the configured host
 * (`https://<host>/<tenant id>/v2.0`), and the token is checked against that issuer and the keys
 * at `<URL>/discovery/v2.0/keys`, with one client (its keys cached) per tenant seen, at most 100.
 *
 * @see https://learn.microsoft.com/en-us/entra/identity-platform/id-token-claims-reference
 */
export function azure(ctx: ProviderContext): OAuthProvider {
  const endpoints = endpointsOf(ctx, PROVIDER_PRESETS.azure)
  const client = oauth2Client(ctx, {
    authorizeUrl: endpoints.authorizeUrl,
    tokenUrl: endpoints.tokenUrl,
  })
  const jwksUri = endpoints.metadata?.jwks_uri
  const tenants = new Map<string, Client>()
  const tenantClient = (tokens: ProviderTokens): Client => {
    const raw = tokens.params.id_token
    const iss = typeof raw === 'string' ? decodeJwt(raw).iss : undefined
    if (iss === undefined || endpoints.issuerPattern?.test(iss) !== true) {
      throw new MalformedProfileError(
        `ID token issuer ${String(iss)} is not a tenant of ${endpoints.api}`,
      )
    }
    let tenant = tenants.get(iss)
    if (tenant === undefined) {
      if (tenants.size >= MAX_TENANTS) tenants.delete(tenants.keys().next().value ?? '')
      tenant = new Client(primaryClientId(ctx.config), ctx.config.secret, {
        ...client.options,
        metadata: { issuer: iss, jwks_uri: jwksUri },
      })
      tenants.set(iss, tenant)
    }
    return tenant
  }
  return presetProvider(ctx, 'azure', { client, idTokenClient: tenantClient })
}
