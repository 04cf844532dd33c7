/**
 * One call from a protected resource's URL to a token for it (the chain an MCP client walks):
 * resource metadata → authorization server metadata → a client id → PAR + PKCE with a resource
 * indicator → a callback that yields a token bound to the resource.
 *
 * @module
 */
import type { AccessToken } from './access-token.js'
import {
  assertKnownKeys,
  assertRecord,
  assertString,
  invalidType,
  invalidValue,
  isRecord,
  optionKeys,
  show,
} from './args.js'
import type { CallbackInput } from './callback.js'
import type { Client } from './client.js'
import { transportOptions, type ClientOptions } from './client-options.js'
import type { ConnectionBuilder } from './connection.js'
import { libraryError, OAuth2Error } from './error.js'
import {
  discoveredOptions,
  fetchMetadata,
  isSecureUrl,
  type AuthorizationServerMetadata,
} from './oidc/metadata.js'
import { pkce } from './pkce.js'
import { readRegistration, type ClientMetadata, type ClientRegistration } from './registration.js'
import { checkResourceUrl, resolveResource, type ProtectedResourceMetadata } from './resource.js'

/**
 * Where `Client.forResource` keeps the clients it registered, per authorization server (issuer),
 * so that it registers once per server. A `Map<string, ClientRegistration>` is one; keep it in a
 * database to survive restarts (the registration holds the client secret, when one was issued).
 */
export interface RegistrationCache {
  /** The registration made at `issuer`, if any. */
  get(issuer: string): ClientRegistration | undefined | Promise<ClientRegistration | undefined>
  /** Keeps the registration made at `issuer` (the return value is awaited, then ignored). */
  set(issuer: string, registration: ClientRegistration): unknown
}

/** Options of {@link Client.forResource}. */
export interface ForResourceOptions extends Pick<
  ClientOptions,
  'fetch' | 'connectionOpts' | 'logger' | 'clock' | 'dpop' | 'accessTokenClass' | 'maxRedirects'
> {
  /** The client's redirect URI (the callback), registered or in the metadata document. */
  readonly redirectUri: string
  /**
   * Metadata for dynamic client registration (RFC 7591 §2), used when the server has no client ID
   * metadata document support (or none was given). Default: a public client
   * (`token_endpoint_auth_method: 'none'`) with `redirect_uris: [redirectUri]` and the
   * `authorization_code` and `refresh_token` grants; these fields override it.
   */
  readonly clientMetadata?: ClientMetadata | undefined
  /**
   * The URL of the client's metadata document (draft-ietf-oauth-client-id-metadata-document),
   * used as `client_id` (a public client) when the server's metadata has
   * `client_id_metadata_document_supported: true`. https with a path (http only on a loopback
   * host).
   */
  readonly clientIdMetadataDocument?: string | undefined
  /**
   * The scope to ask for. Default: the `scope` of the resource's `401` challenge, else its
   * `scopes_supported`, else none.
   */
  readonly scope?: string | undefined
  /** Where registrations are kept, per issuer. Default: none (register on every call). */
  readonly registrations?: RegistrationCache | undefined
  /** Initial access token for dynamic registration (RFC 7591 §3). */
  readonly initialAccessToken?: string | undefined
  /** The `WWW-Authenticate` of a `401` the resource already answered (see `discoverResource`). */
  readonly challenge?: string | undefined
}

const FOR_RESOURCE_OPTION_KEYS = optionKeys<ForResourceOptions>({
  fetch: true,
  connectionOpts: true,
  logger: true,
  clock: true,
  dpop: true,
  accessTokenClass: true,
  maxRedirects: true,
  redirectUri: true,
  clientMetadata: true,
  clientIdMetadataDocument: true,
  scope: true,
  registrations: true,
  initialAccessToken: true,
  challenge: true,
})

/** What `Client.forResource` resolves with: where to send the user, and how to finish. */
export interface ResourceAuthorization {
  /** The URL to send the user's browser to (a pushed request's URL when the server takes PAR). */
  readonly authorizeUrl: string
  /** The `state` sent (keep it with `codeVerifier` if `complete` runs elsewhere). */
  readonly state: string
  /** The PKCE `code_verifier` of the request (a secret: keep it server side). */
  readonly codeVerifier: string
  /** The resource indicator asked for (RFC 8707): the metadata's `resource`. */
  readonly resource: string
  /** The resource's metadata (RFC 9728). */
  readonly resourceMetadata: ProtectedResourceMetadata
  /** The client, with the id it got (registered or its metadata document's URL). */
  readonly client: Client
  /**
   * Validates the callback (see `authCode.getTokenFromCallback`: `iss`, `state`, `error`,
   * `code`), exchanges the code with the verifier and `resource`, and resolves with a token bound
   * to the resource (see {@link AccessTokenOptions.resource}): its `fetch` goes only there,
   * DPoP-bound when the client has `dpop`, and its refreshes ask for the same resource.
   *
   * @throws {OAuth2Error} As `getTokenFromCallback`; `invalid_token_response` when the token
   *   response names another `resource`.
   */
  complete(callback: CallbackInput): Promise<AccessToken>
}

/**
 * Checks the options of {@link Client.forResource}.
 *
 * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` naming the option.
 */
function checkForResourceOptions(options: ForResourceOptions): void {
  if (!isRecord(options)) throw invalidType('options', 'an object with redirectUri', options)
  assertKnownKeys('options', options, FOR_RESOURCE_OPTION_KEYS)
  assertString('options.redirectUri', options.redirectUri)
  if (!URL.canParse(options.redirectUri)) {
    throw invalidValue('options.redirectUri', 'must be an absolute URL')
  }
  for (const key of ['scope', 'initialAccessToken', 'challenge'] as const) {
    if (options[key] !== undefined) assertString(`options.${key}`, options[key])
  }
  assertRecord('options.clientMetadata', options.clientMetadata)
  const document = options.clientIdMetadataDocument
  if (document !== undefined) {
    assertString('options.clientIdMetadataDocument', document)
    if (!isSecureUrl(document) || new URL(document).pathname === '/') {
      throw invalidValue(
        'options.clientIdMetadataDocument',
        'must be an https URL with a path (http only on a loopback host)',
      )
    }
  }
  const cache: unknown = options.registrations
  if (
    cache !== undefined &&
    (typeof cache !== 'object' ||
      cache === null ||
      typeof (cache as { get?: unknown }).get !== 'function' ||
      typeof (cache as { set?: unknown }).set !== 'function')
  ) {
    throw invalidType('options.registrations', 'an object with get() and set()', cache)
  }
}

/** A client of the server, by client ID metadata document or by (cached) registration. */
async function clientOf(
  ClientClass: typeof Client,
  probe: Client,
  issuer: string,
  metadata: AuthorizationServerMetadata,
  options: ForResourceOptions,
  clientOptions: ClientOptions,
  buildConnection: ((connection: ConnectionBuilder) => void) | undefined,
): Promise<Client> {
  const document = options.clientIdMetadataDocument
  if (document !== undefined && metadata.client_id_metadata_document_supported === true) {
    return new ClientClass(
      document,
      undefined,
      discoveredOptions({ ...clientOptions, authScheme: 'none' }, issuer, metadata),
      buildConnection,
    )
  }
  const endpoint = metadata.registration_endpoint
  if (typeof endpoint !== 'string') {
    throw libraryError(
      'invalid_metadata',
      `${issuer} has no way to give this client an id: no client_id_metadata_document_supported ` +
        `${document === undefined ? '(and no clientIdMetadataDocument was given) ' : ''}and no ` +
        'registration_endpoint',
    )
  }
  let registration = await options.registrations?.get(issuer)
  if (registration === undefined) {
    const response = await probe.registrationRequest(
      endpoint,
      {
        redirect_uris: [options.redirectUri],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        ...options.clientMetadata,
      },
      options.initialAccessToken,
    )
    registration = readRegistration(response)
    await options.registrations?.set(issuer, registration)
  }
  return ClientClass.fromRegistration(
    registration,
    clientOptions,
    issuer,
    metadata,
    buildConnection,
  )
}

/**
 * `Client.forResource`: see there.
 *
 * @internal
 */
export async function forResource(
  ClientClass: typeof Client,
  resourceUrl: string | URL,
  options: ForResourceOptions,
  buildConnection?: (connection: ConnectionBuilder) => void,
): Promise<ResourceAuthorization> {
  const url = checkResourceUrl(resourceUrl)
  checkForResourceOptions(options)
  const {
    redirectUri,
    clientMetadata: _metadata,
    clientIdMetadataDocument: _document,
    scope,
    registrations: _registrations,
    initialAccessToken: _token,
    challenge,
    ...rest
  } = options
  const clientOptions: ClientOptions = { ...rest, redirect_uri: redirectUri, requirePkce: true }
  const probe = new ClientClass('', undefined, transportOptions(rest, url.origin), buildConnection)
  let resourceMetadata: ProtectedResourceMetadata
  let challengeScope: string | undefined
  let client: Client
  try {
    const resolved = await resolveResource(probe, url, challenge)
    resourceMetadata = resolved.metadata
    challengeScope = resolved.scope
    const issuer = resourceMetadata.authorization_servers?.[0]
    if (issuer === undefined) {
      throw libraryError(
        'invalid_resource_metadata',
        `the metadata of ${resourceMetadata.resource} names no authorization_servers (RFC 9728 §2)`,
      )
    }
    const metadata = await fetchMetadata(probe, issuer)
    // OAuth 2.1 §7.5.2 and MCP: a server that does not say it does S256 is not used.
    if (!(metadata.code_challenge_methods_supported ?? []).includes('S256')) {
      throw libraryError(
        'invalid_metadata',
        `${issuer} does not list S256 in code_challenge_methods_supported: PKCE cannot be relied on`,
      )
    }
    client = await clientOf(
      ClientClass,
      probe,
      issuer,
      metadata,
      options,
      clientOptions,
      buildConnection,
    )
  } finally {
    await probe.close()
  }
  const resource = resourceMetadata.resource
  const { code_verifier: codeVerifier, code_challenge, code_challenge_method } = pkce()
  const state = crypto.randomUUID()
  const requestScope = scope ?? challengeScope ?? resourceMetadata.scopes_supported?.join(' ')
  const params = {
    ...(requestScope === undefined || requestScope === '' ? {} : { scope: requestScope }),
    state,
    code_challenge,
    code_challenge_method,
    resource,
  }
  const authorizeUrl =
    client.options.pushedAuthorizationRequestUrl === undefined
      ? client.authCode.authorizeUrl(params)
      : await client.authCode.pushAuthorizationRequest(params)
  const bound = client
  return {
    authorizeUrl,
    state,
    codeVerifier,
    resource,
    resourceMetadata,
    client,
    async complete(callback) {
      const token = await bound.authCode.getTokenFromCallback(
        callback,
        { state, codeVerifier },
        { resource },
        { resource },
      )
      const parsed: unknown = token.response?.parsed
      const named = isRecord(parsed) ? parsed.resource : undefined
      if (named !== undefined && named !== resource) {
        throw new OAuth2Error(token.response ?? { error: 'invalid_token_response' }, {
          code: 'invalid_token_response',
          description: `the token is for resource ${show(named)}, not ${resource}`,
        })
      }
      return token
    },
  }
}
