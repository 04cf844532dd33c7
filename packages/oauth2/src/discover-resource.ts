import { Client } from './client.js'
import { transportOptions } from './client-options.js'
import type { ConnectionBuilder } from './connection.js'
import {
  checkDiscoverResourceOptions,
  checkResourceUrl,
  resolveResource,
  type DiscoverResourceOptions,
  type ProtectedResourceMetadata,
} from './resource.js'

/**
 * Reads the metadata of a protected resource (RFC 9728): which authorization servers issue its
 * tokens, the scopes it understands, whether it wants DPoP.
 *
 * 1. The resource's challenge: `options.challenge` (the `WWW-Authenticate` of a `401` you got),
 *    or the `WWW-Authenticate` of a `401` to a GET without credentials; its `resource_metadata`
 *    parameter (RFC 9728 §5.1) names the document, which must be https (http on loopback).
 * 2. Otherwise `/.well-known/oauth-protected-resource` inserted before the resource's path
 *    (RFC 9728 §3.1), then at the origin's root when the resource has a path.
 *
 * The document's `resource` must be the requested URL (RFC 9728 §3.3: otherwise its data must not
 * be used); for a document found through a challenge or at the root, a `resource` on the same
 * origin whose path is a prefix of the requested one is accepted too
 * (draft-mcguinness-oauth-rfc9728bis). `authorization_servers` must be https (http on loopback).
 * No request follows a redirect.
 *
 * @param resourceUrl The resource: https (http only on a loopback host), no fragment.
 * @param options The transport options (`fetch`, `connectionOpts`, `logger`, `clock`) and
 *   `challenge`.
 * @param buildConnection The connection builder callback.
 * @returns The metadata, fields as on the wire.
 * @throws {OAuth2Error} `invalid_resource_metadata` naming the problem.
 * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` for bad arguments.
 * @see https://www.rfc-editor.org/rfc/rfc9728#section-3
 * @see https://www.rfc-editor.org/rfc/rfc9728#section-5.1
 *
 * @example
 * ```ts
 * import { discoverResource } from '@gatehouse/oauth2'
 * const metadata = await discoverResource('https://mcp.example.com/mcp')
 * console.log(metadata.authorization_servers, metadata.scopes_supported)
 * ```
 */
export async function discoverResource(
  resourceUrl: string | URL,
  options: DiscoverResourceOptions = {},
  buildConnection?: (connection: ConnectionBuilder) => void,
): Promise<ProtectedResourceMetadata> {
  const url = checkResourceUrl(resourceUrl)
  checkDiscoverResourceOptions(options)
  const probe = new Client('', undefined, transportOptions(options, url.origin), buildConnection)
  try {
    return (await resolveResource(probe, url, options.challenge)).metadata
  } finally {
    await probe.close()
  }
}
