import { assertString, invalidValue, isRecord, show } from '../args.js'
import type { ClientOptions } from '../client-options.js'
import { libraryError } from '../error.js'
import type { Response } from '../response.js'

/**
 * Authorization server metadata (RFC 8414 §2, OpenID Connect Discovery §3), as returned by
 * `Client.discover`. Field names as on the wire.
 */
export interface AuthorizationServerMetadata {
  readonly issuer: string
  readonly authorization_endpoint?: string
  readonly token_endpoint?: string
  readonly revocation_endpoint?: string
  readonly introspection_endpoint?: string
  readonly userinfo_endpoint?: string
  readonly jwks_uri?: string
  readonly end_session_endpoint?: string
  readonly scopes_supported?: readonly string[]
  readonly code_challenge_methods_supported?: readonly string[]
  readonly token_endpoint_auth_methods_supported?: readonly string[]
  readonly id_token_signing_alg_values_supported?: readonly string[]
  /** RFC 8414 §2: the grant types the server supports (token exchange, device code, ...). */
  readonly grant_types_supported?: readonly string[]
  /** RFC 9126 §5: where pushed authorization requests go. */
  readonly pushed_authorization_request_endpoint?: string
  /** RFC 9126 §5: authorization requests must be pushed (wired to `requirePar`). */
  readonly require_pushed_authorization_requests?: boolean
  /** RFC 8628 §4: where device authorization requests go. */
  readonly device_authorization_endpoint?: string
  /** RFC 9101 §10.5: authorization requests must be signed request objects. */
  readonly require_signed_request_object?: boolean
  /** draft-ietf-oauth-client-id-metadata-document: a client id may be its metadata document's URL. */
  readonly client_id_metadata_document_supported?: boolean
  /** RFC 7591 §3: where dynamic client registration requests go. */
  readonly registration_endpoint?: string
  /** RFC 9207 §3: authorization responses carry `iss` (then required by the callback check). */
  readonly authorization_response_iss_parameter_supported?: boolean
  /** RFC 9449 §5.1: the JWS algorithms the server accepts for DPoP proofs. */
  readonly dpop_signing_alg_values_supported?: readonly string[]
  readonly [field: string]: unknown
}

/** What the OIDC helpers need from the client. @internal */
export interface OidcHost {
  readonly id: string
  readonly secret: string | undefined
  readonly clock: { now(): number }
  request(verb: 'get', url: string, opts: { snaky: false; raiseErrors: boolean }): Promise<Response>
  /**
   * GETs a discovery document without following redirects (a 3xx is returned with
   * `response.error` set to `redirect_not_followed`); never throws for a status.
   */
  discoveryRequest(url: string): Promise<Response>
}

/** What the metadata's endpoints may be, for error messages. */
const SECURE_URL_RULE = 'https (http only on a loopback host: localhost, 127.0.0.0/8, [::1])'

function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(hostname)
}

/**
 * Whether `url` may identify an issuer or serve its keys: `https:`, or `http:` on a loopback host
 * (`localhost`, `127.0.0.0/8`, `[::1]`) for development and tests.
 *
 * @internal
 */
export function isSecureUrl(url: string): boolean {
  if (!URL.canParse(url)) return false
  const { protocol, hostname } = new URL(url)
  return protocol === 'https:' || (protocol === 'http:' && isLoopbackHost(hostname))
}

/**
 * Whether a metadata field names an endpoint or another URL the client sends requests to: every
 * `*_endpoint` (RFC 8414 §2, OIDC Discovery §3, RFC 7009, RFC 7662, RFC 9126, RFC 8628, OIDC
 * RP-Initiated Logout) and `jwks_uri`.
 */
function isEndpointField(key: string): boolean {
  return key.endsWith('_endpoint') || key === 'jwks_uri'
}

/**
 * Checks a discovered endpoint: a URL, https (http only on a loopback host), so that a document
 * cannot send the client's secret, grants or tokens in clear or to a link-local metadata service
 * (RFC 8414 §2: endpoints "MUST use the https scheme"; OIDC Discovery §3).
 *
 * @throws {OAuth2Error} `invalid_metadata` naming `field` and the document.
 */
function checkEndpoint(document: string, field: string, value: unknown): void {
  if (typeof value !== 'string' || !URL.canParse(value)) {
    throw libraryError('invalid_metadata', `${field} of ${document} is not a URL`)
  }
  if (!isSecureUrl(value)) {
    const { protocol, host } = new URL(value)
    throw libraryError(
      'invalid_metadata',
      `${field} of ${document} is on ${protocol}//${host}: discovered endpoints must be ` +
        `${SECURE_URL_RULE} (RFC 8414 §2)`,
    )
  }
}

/**
 * Checks the `issuer` argument of `Client.discover`: an absolute URL, https (http only on a
 * loopback host).
 *
 * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` naming `issuer`.
 * @internal
 */
export function checkIssuer(issuer: unknown): asserts issuer is string {
  assertString('issuer', issuer)
  if (!URL.canParse(issuer))
    throw invalidValue('issuer', `must be an absolute URL (got '${issuer}')`)
  if (!isSecureUrl(issuer)) {
    throw invalidValue(
      'issuer',
      `must be an https URL; http only on a loopback host: localhost, 127.0.0.1, [::1] (got '${issuer}')`,
    )
  }
}

/**
 * The discovery documents to try, in order: OpenID Connect Discovery §4
 * (`<issuer>/.well-known/openid-configuration`), then RFC 8414 §3.1
 * (`<origin>/.well-known/oauth-authorization-server<path>`).
 *
 * @internal
 */
export function discoveryUrls(issuer: string): string[] {
  const url = new URL(issuer)
  const path = url.pathname.replace(/\/$/, '')
  return [
    `${url.origin}${path}/.well-known/openid-configuration`,
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
  ]
}

/**
 * Fetches and checks the metadata of `issuer`: the document is read only at the URLs the issuer
 * gives, or at `urls` (the `discoveryUrl` option) (no redirect followed, as oauth4webapi), must be a JSON object whose `issuer` equals the
 * given one exactly (OIDC Discovery §4.3, RFC 8414 §3.3), and whose endpoints (every `*_endpoint`,
 * `jwks_uri`, `mtls_endpoint_aliases`) are https, or http on a loopback host.
 *
 * @throws {OAuth2Error} `invalid_metadata` naming the field or the problem.
 *
 * @internal
 */
export async function fetchMetadata(
  host: OidcHost,
  issuer: string,
  urls: readonly string[] = discoveryUrls(issuer),
): Promise<AuthorizationServerMetadata> {
  checkIssuer(issuer)
  let last: Response | undefined
  for (const url of urls) {
    // Derived from a checked issuer, so https or loopback; and read there only (no redirect).
    const response = await host.discoveryRequest(url)
    if (response.status !== 200) {
      last = response
      continue
    }
    let parsed: unknown
    try {
      parsed = response.parsed
    } catch (error) {
      throw libraryError('invalid_metadata', `${url} is not JSON`, error)
    }
    if (!isRecord(parsed)) throw libraryError('invalid_metadata', `${url} is not a JSON object`)
    if (parsed.issuer !== issuer) {
      throw libraryError(
        'invalid_metadata',
        `${url} is for issuer ${show(parsed.issuer)}, not '${issuer}'`,
      )
    }
    for (const key of Object.keys(parsed)) {
      if (isEndpointField(key)) checkEndpoint(url, key, parsed[key])
    }
    // RFC 8705 §5: the endpoints to use with mutual TLS, by their metadata names.
    const aliases = parsed.mtls_endpoint_aliases
    if (aliases !== undefined) {
      if (!isRecord(aliases)) {
        throw libraryError('invalid_metadata', `mtls_endpoint_aliases of ${url} is not an object`)
      }
      for (const key of Object.keys(aliases)) {
        checkEndpoint(url, `mtls_endpoint_aliases.${key}`, aliases[key])
      }
    }
    // The fields the client acts on (the endpoints are checked above).
    if (!isStringArray(parsed.dpop_signing_alg_values_supported ?? [])) {
      throw libraryError(
        'invalid_metadata',
        `dpop_signing_alg_values_supported of ${url} is not an array of strings`,
      )
    }
    for (const flag of [
      'require_pushed_authorization_requests',
      'require_signed_request_object',
      'authorization_response_iss_parameter_supported',
    ]) {
      if (parsed[flag] !== undefined && typeof parsed[flag] !== 'boolean') {
        throw libraryError('invalid_metadata', `${flag} of ${url} is not a boolean`)
      }
    }
    return parsed as AuthorizationServerMetadata
  }
  const refused =
    last?.error?.code === 'redirect_not_followed' ? `: ${String(last.error.description)}` : ''
  throw libraryError(
    'invalid_metadata',
    `no discovery document for ${issuer} (last status ${String(last?.status)})${refused}`,
  )
}

function isStringArray(value: unknown): value is readonly string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string')
}

/**
 * The options of a discovered client: `options` with `site` set to the issuer, the `metadata`, the
 * endpoints the metadata names (`authorizeUrl`, `tokenUrl`, `revokeUrl`, `introspectUrl`,
 * `userinfoUrl`, `pushedAuthorizationRequestUrl`, `deviceAuthorizationUrl`, `endSessionUrl`; an
 * endpoint it does not
 * name keeps the option's value), `requirePar` when the server requires pushed authorization
 * requests, and `requireSignedRequestObject` when it requires request objects. The DPoP algorithm is settled against `dpop_signing_alg_values_supported` by the
 * client.
 *
 * @internal
 */
export function discoveredOptions<O extends ClientOptions>(
  options: O,
  issuer: string,
  metadata: AuthorizationServerMetadata,
): O {
  return {
    ...options,
    site: issuer,
    metadata,
    authorizeUrl: metadata.authorization_endpoint ?? options.authorizeUrl,
    tokenUrl: metadata.token_endpoint ?? options.tokenUrl,
    revokeUrl: metadata.revocation_endpoint ?? options.revokeUrl,
    introspectUrl: metadata.introspection_endpoint ?? options.introspectUrl,
    userinfoUrl: metadata.userinfo_endpoint ?? options.userinfoUrl,
    pushedAuthorizationRequestUrl:
      metadata.pushed_authorization_request_endpoint ?? options.pushedAuthorizationRequestUrl,
    deviceAuthorizationUrl:
      metadata.device_authorization_endpoint ?? options.deviceAuthorizationUrl,
    endSessionUrl: metadata.end_session_endpoint ?? options.endSessionUrl,
    requirePar:
      options.requirePar === true || metadata.require_pushed_authorization_requests === true,
    requireSignedRequestObject:
      options.requireSignedRequestObject === true ||
      metadata.require_signed_request_object === true,
  }
}
