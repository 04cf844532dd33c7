/**
 * Protected resource metadata (RFC 9728): which authorization servers issue tokens for a
 * resource, read from the resource's well-known document or from the `resource_metadata` of its
 * `401` challenge.
 *
 * @module
 */
import {
  assertKnownKeys,
  assertRecord,
  invalidType,
  invalidValue,
  isRecord,
  optionKeys,
  show,
} from './args.js'
import type { Clock } from './clock.js'
import type { ConnectionOptions, FetchLike } from './connection.js'
import type { Logger } from './debug.js'
import { libraryError } from './error.js'
import { isSecureUrl } from './oidc/metadata.js'
import type { Response } from './response.js'
import { parseWwwAuthenticate } from './www-authenticate.js'

/**
 * Protected resource metadata (RFC 9728 §2), field names as on the wire. Other fields are kept
 * as sent.
 */
export interface ProtectedResourceMetadata {
  /** The resource identifier (RFC 8707): what a token for this resource is asked for with. */
  readonly resource: string
  /** Issuer identifiers of the authorization servers that issue tokens for the resource. */
  readonly authorization_servers?: readonly string[]
  /** Scopes the resource understands. */
  readonly scopes_supported?: readonly string[]
  /** How the resource takes bearer tokens: `header`, `body`, `query` (RFC 6750). */
  readonly bearer_methods_supported?: readonly string[]
  /** The resource's keys (for signed responses). */
  readonly jwks_uri?: string
  /** A name to show the user. */
  readonly resource_name?: string
  /** JWS algorithms the resource accepts in DPoP proofs (RFC 9449). */
  readonly dpop_signing_alg_values_supported?: readonly string[]
  /** The resource accepts only DPoP-bound tokens (RFC 9728 §2). */
  readonly dpop_bound_access_tokens_required?: boolean
  readonly [field: string]: unknown
}

/** The transport options of {@link discoverResource} (those of `new Client`). */
export interface DiscoverResourceOptions {
  /** Send requests with this `fetch` instead of undici. */
  readonly fetch?: FetchLike | undefined
  /** `timeout`, `headers`, `proxy`, `tls`, `maxResponseBytes`, as for `new Client`. */
  readonly connectionOpts?: ConnectionOptions | undefined
  /** Receives debug output. @default console */
  readonly logger?: Logger | undefined
  /** Time source. @default Date */
  readonly clock?: Clock | undefined
  /**
   * The `WWW-Authenticate` header of a `401` the resource already answered: its
   * `resource_metadata` is read instead of asking the resource again.
   */
  readonly challenge?: string | undefined
}

/** The keys of {@link DiscoverResourceOptions}. @internal */
export const DISCOVER_RESOURCE_OPTION_KEYS = optionKeys<DiscoverResourceOptions>({
  fetch: true,
  connectionOpts: true,
  logger: true,
  clock: true,
  challenge: true,
})

/** What resource discovery needs from a client: GETs that follow no redirect. @internal */
export interface ResourceHost {
  /** GETs `url` without credentials; no redirect followed, no status raised. */
  discoveryRequest(url: string): Promise<Response>
}

/** The metadata and what the resource's challenge said. @internal */
export interface ResolvedResource {
  readonly metadata: ProtectedResourceMetadata
  /** The `scope` of the `401` challenge (RFC 6750 §3), the scopes the resource wants. */
  readonly scope: string | undefined
}

/**
 * Checks a resource URL (RFC 8707 §2: absolute, no fragment) and that it is https (http only on a
 * loopback host).
 *
 * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` naming `resourceUrl`.
 * @internal
 */
export function checkResourceUrl(resourceUrl: unknown): URL {
  if (typeof resourceUrl !== 'string' && !(resourceUrl instanceof URL)) {
    throw invalidType('resourceUrl', 'a URL string or URL', resourceUrl)
  }
  const text = String(resourceUrl)
  if (!URL.canParse(text))
    throw invalidValue('resourceUrl', `must be an absolute URL (got '${text}')`)
  const url = new URL(text)
  if (url.hash !== '' || text.includes('#')) {
    throw invalidValue('resourceUrl', 'must not have a fragment (RFC 8707 §2)')
  }
  if (!isSecureUrl(text)) {
    throw invalidValue('resourceUrl', `must be https; http only on a loopback host (got '${text}')`)
  }
  return url
}

/** `href` without the `/` of an empty path: `https://a.example` and `https://a.example/` are one. */
function normalized(url: URL): string {
  return url.pathname === '/' && url.search === '' ? url.origin : url.href
}

/**
 * Whether `resource` may describe `requested`: the same URL, or (as
 * draft-mcguinness-oauth-rfc9728bis relaxes RFC 9728 §3.3 for metadata found through a challenge
 * or at the origin's root) the same origin with a path that is a prefix of the requested path, by
 * whole segments.
 */
function describes(resource: URL, requested: URL, prefix: boolean): boolean {
  if (normalized(resource) === normalized(requested)) return true
  if (!prefix || resource.origin !== requested.origin || resource.search !== '') return false
  const base = resource.pathname.replace(/\/$/, '')
  return requested.pathname === base || requested.pathname.startsWith(`${base}/`)
}

function stringArray(value: unknown): value is readonly string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string')
}

/**
 * Reads and checks a metadata document (RFC 9728 §3.2, §3.3): a 200 with a JSON object whose
 * `resource` describes `requested`, `authorization_servers` https URLs, `jwks_uri` https.
 */
async function readMetadata(
  host: ResourceHost,
  url: string,
  requested: URL,
  prefix: boolean,
): Promise<ProtectedResourceMetadata | undefined> {
  const response = await host.discoveryRequest(url)
  if (response.status === 404) return undefined
  const invalid = (problem: string) =>
    libraryError('invalid_resource_metadata', `${url} ${problem} (RFC 9728 §3)`)
  if (response.status !== 200) throw invalid(`answered ${String(response.status)}`)
  let parsed: unknown
  try {
    parsed = response.parsed
  } catch {
    throw invalid('is not JSON')
  }
  if (!isRecord(parsed)) throw invalid('is not a JSON object')
  const { resource } = parsed
  if (typeof resource !== 'string' || !URL.canParse(resource)) throw invalid('has no resource URL')
  if (!describes(new URL(resource), requested, prefix)) {
    throw invalid(
      `describes resource ${show(resource)}, not ${requested.href}: its data must not be used ` +
        '(RFC 9728 §3.3)',
    )
  }
  const servers = parsed.authorization_servers
  if (servers !== undefined) {
    if (!stringArray(servers)) throw invalid('has authorization_servers that are not strings')
    const insecure = servers.find((server) => !isSecureUrl(server))
    if (insecure !== undefined) {
      throw invalid(`names authorization server ${show(insecure)}, which is not https`)
    }
  }
  for (const field of ['scopes_supported', 'bearer_methods_supported']) {
    if (parsed[field] !== undefined && !stringArray(parsed[field])) {
      throw invalid(`has ${field} that are not strings`)
    }
  }
  if (
    parsed.jwks_uri !== undefined &&
    !(typeof parsed.jwks_uri === 'string' && isSecureUrl(parsed.jwks_uri))
  ) {
    throw invalid('has a jwks_uri that is not https')
  }
  return parsed as ProtectedResourceMetadata
}

/**
 * The `resource_metadata` and `scope` of a Bearer or DPoP challenge (RFC 9728 §5.1), if any.
 *
 * @internal
 */
export function metadataChallenge(
  header: string | undefined,
): { url: string; scope: string | undefined } | undefined {
  if (header === undefined) return undefined
  for (const challenge of parseWwwAuthenticate(header)) {
    if (challenge.scheme !== 'bearer' && challenge.scheme !== 'dpop') continue
    const url = challenge.params.resource_metadata
    if (url !== undefined) return { url, scope: challenge.params.scope }
  }
  return undefined
}

/**
 * Finds and checks the metadata of a protected resource (RFC 9728):
 *
 * 1. the resource's challenge: `options.challenge`, or the `WWW-Authenticate` of a `401` to a GET
 *    without credentials (no redirect followed); its `resource_metadata` URL (§5.1) must be https
 *    (http on loopback);
 * 2. otherwise `/.well-known/oauth-protected-resource` inserted before the resource's path
 *    (§3.1), then at the origin's root when the resource has a path (as MCP clients do).
 *
 * The document's `resource` must be the requested URL; for metadata found through a challenge or
 * at the root, a `resource` on the same origin whose path is a prefix of the requested one is
 * accepted too (draft-mcguinness-oauth-rfc9728bis). Documents are never read through a redirect.
 *
 * @internal
 */
export async function resolveResource(
  host: ResourceHost,
  resourceUrl: URL,
  challengeHeader: string | undefined,
): Promise<ResolvedResource> {
  let header = challengeHeader
  if (header === undefined) {
    const response = await host.discoveryRequest(resourceUrl.href)
    if (response.status === 401) header = response.headers['www-authenticate']
  }
  const challenge = metadataChallenge(header)
  if (challenge !== undefined) {
    if (!isSecureUrl(challenge.url)) {
      throw libraryError(
        'invalid_resource_metadata',
        `the resource_metadata of the resource's challenge is not an https URL (RFC 9728 §5.1)`,
      )
    }
    const metadata = await readMetadata(host, challenge.url, resourceUrl, true)
    if (metadata === undefined) {
      throw libraryError(
        'invalid_resource_metadata',
        `${challenge.url} answered 404 (RFC 9728 §5.1)`,
      )
    }
    return { metadata, scope: challenge.scope }
  }
  const path = resourceUrl.pathname.replace(/\/$/, '')
  const wellKnown = `${resourceUrl.origin}/.well-known/oauth-protected-resource`
  const inserted = await readMetadata(
    host,
    `${wellKnown}${path}${resourceUrl.search}`,
    resourceUrl,
    false,
  )
  if (inserted !== undefined) return { metadata: inserted, scope: undefined }
  if (path !== '') {
    const root = await readMetadata(host, wellKnown, resourceUrl, true)
    if (root !== undefined) return { metadata: root, scope: undefined }
  }
  throw libraryError(
    'invalid_resource_metadata',
    `${resourceUrl.href} has no protected resource metadata: no resource_metadata in a 401 ` +
      'challenge and no /.well-known/oauth-protected-resource document (RFC 9728)',
  )
}

/**
 * Checks the options of {@link discoverResource}.
 *
 * @internal
 */
export function checkDiscoverResourceOptions(options: DiscoverResourceOptions): void {
  assertRecord('options', options)
  assertKnownKeys('options', options, DISCOVER_RESOURCE_OPTION_KEYS)
  if (options.challenge !== undefined && typeof options.challenge !== 'string') {
    throw invalidType('options.challenge', 'a string', options.challenge)
  }
}
