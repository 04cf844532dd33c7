/**
 * The servers of the resource chain (MCP) journeys: a protected resource and an `oidc-provider`
 * with dynamic registration, client ID metadata documents (through its adapter), PAR, DPoP
 * (nonces required) and resource indicators issuing JWT access tokens for the resource, and
 * refresh tokens for every client that has the grant.
 */
import { errors } from 'oidc-provider'
import { cimdAdapterFactory } from './cimd-adapter.js'
import {
  REDIRECT_URI,
  startProvider,
  type StartProviderOptions,
  type TestProvider,
} from './oidc-provider.js'
import { startProtectedResource, type ProtectedResource } from './protected-resource.js'

export interface ResourceChain {
  readonly op: TestProvider
  readonly rs: ProtectedResource
  stop(): Promise<void>
}

/**
 * Starts both servers; `setup` adds middleware to the provider before it listens.
 */
export async function startResourceChain(
  setup?: StartProviderOptions['setup'],
): Promise<ResourceChain> {
  let issuer = ''
  const rs = await startProtectedResource(() => issuer, REDIRECT_URI)
  const op = await startProvider({
    configure(configuration) {
      configuration.adapter = cimdAdapterFactory()
      configuration.scopes = [...(configuration.scopes ?? []), 'mcp:tools']
      configuration.discovery = { client_id_metadata_document_supported: true }
      configuration.issueRefreshToken = (_ctx, client) =>
        Promise.resolve(client.grantTypeAllowed('refresh_token'))
      configuration.features = {
        ...configuration.features,
        registration: { enabled: true },
        resourceIndicators: {
          enabled: true,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, indicator) => {
            if (indicator !== rs.resource) throw new errors.InvalidTarget()
            return { scope: 'mcp:tools', accessTokenFormat: 'jwt' }
          },
        },
      }
    },
    ...(setup === undefined ? {} : { setup }),
  })
  issuer = op.issuer
  return {
    op,
    rs,
    async stop() {
      await op.stop()
      await rs.close()
    },
  }
}
