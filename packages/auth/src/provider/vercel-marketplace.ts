import { Client } from '@gatehouse/oauth2'
import { PROVIDER_PRESETS } from '@gatehouse/oauth2/providers'
import { discoveredClient, endpointsOf, presetProvider, type ProviderContext } from './base.js'
import type { OAuthProvider } from './oauth-provider.js'

/**
 * Vercel Marketplace (upstream `vercel_marketplace`): the preset's authorization and token
 * endpoints on the API host (`api.vercel.com`), and the ID token checked with the keys its issuer
 * (`https://marketplace.vercel.com`) publishes through OIDC discovery; `EXTERNAL_VERCEL_MARKETPLACE_URL`
 * replaces both.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/provider/vercel_marketplace.go
 */
export function vercelMarketplace(ctx: ProviderContext): OAuthProvider {
  const endpoints = endpointsOf(ctx, PROVIDER_PRESETS.vercel_marketplace)
  const discovered = discoveredClient(ctx, endpoints.issuer ?? '')
  // One client (and so one JWKS cache) per discovered client; a failed discovery is retried.
  let built: { readonly base: Client; readonly client: Client } | undefined
  async function client(): Promise<Client> {
    const base = await discovered()
    if (built?.base !== base) {
      built = {
        base,
        client: new Client(base.id, base.secret, {
          ...base.options,
          authorizeUrl: endpoints.authorizeUrl,
          tokenUrl: endpoints.tokenUrl,
        }),
      }
    }
    return built.client
  }
  return presetProvider(ctx, 'vercel_marketplace', { client })
}
