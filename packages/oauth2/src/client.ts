import type { AccessToken, AccessTokenOptions } from './access-token.js'
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
import { Authenticator, type AuthScheme } from './authenticator.js'
import {
  checkOptions,
  resolveOptions,
  transportOptions,
  type ClientOptions,
  type ClientOptionsFor,
  type ResolvedClientOptions,
} from './client-options.js'
import { systemClock, type Clock } from './clock.js'
import { currentConfiguration, type Configuration } from './config.js'
import { openConnection, type ConnectionBuilder } from './connection.js'
import { DebugFilter, type Logger } from './debug.js'
import { DPoP } from './dpop.js'
import { libraryError } from './error.js'
import {
  checkVerifyOptions,
  IdTokenVerifier,
  type IdTokenClaims,
  type VerifyIdTokenOptions,
} from './oidc/id-token.js'
import {
  checkIssuer,
  discoveredOptions,
  fetchMetadata,
  isSecureUrl,
  type AuthorizationServerMetadata,
} from './oidc/metadata.js'
import { SentNonces } from './oidc/sent-nonces.js'
import {
  authSchemeOf,
  readRegistration,
  type ClientMetadata,
  type ClientRegistration,
} from './registration.js'
import { fetchUserinfo, type UserinfoOptions } from './oidc/userinfo.js'
import { forResource, type ForResourceOptions, type ResourceAuthorization } from './for-resource.js'
import { systemRandom } from './random.js'
import { RequestObjectSigner } from './request-object.js'
import {
  lowerHeaders,
  Requester,
  type Endpoint,
  type HttpVerb,
  type RequestOptions,
  type RequestSigner,
} from './requester.js'
import type { Response } from './response.js'
import { Assertion } from './strategy/assertion.js'
import { AuthCode } from './strategy/auth-code.js'
import { ClientCredentials } from './strategy/client-credentials.js'
import { DeviceCode } from './strategy/device-code.js'
import { Implicit } from './strategy/implicit.js'
import { Password } from './strategy/password.js'
import { TokenExchange } from './strategy/token-exchange.js'
import { TokenEndpoint, type TokenParams, type TokenResult } from './token-endpoint.js'
import { resolveUrl, withQuery, type Params } from './url.js'

/**
 * `client_secret_jwt` signs with the secret, so it needs one; a public client (`none`) has none.
 *
 * @throws {TypeError} `ERR_INVALID_ARG_VALUE` naming `clientSecret`.
 */
function checkSecretForScheme(secret: string | undefined, scheme: AuthScheme | undefined): void {
  if (scheme === 'client_secret_jwt' && (secret === undefined || secret === '')) {
    throw invalidValue(
      'clientSecret',
      "is required with authScheme 'client_secret_jwt' (the assertion is signed with it)",
    )
  }
  if (scheme === 'none' && secret !== undefined) {
    throw invalidValue(
      'clientSecret',
      "must not be set with authScheme 'none' (a public client has no secret)",
    )
  }
}

/** Options of {@link Client.endSessionUrl} (OpenID Connect RP-Initiated Logout 1.0 §2). */
export interface EndSessionOptions {
  /** The ID token the user signed in with (`id_token_hint`). */
  readonly idTokenHint?: string | undefined
  /** Where the provider sends the browser after signing out (`post_logout_redirect_uri`). */
  readonly postLogoutRedirectUri?: string | undefined
  /** Sent back to `postLogoutRedirectUri` (`state`). */
  readonly state?: string | undefined
  /** The `client_id` to send. @default the client's id */
  readonly clientId?: string | undefined
  /** Other parameters (`logout_hint`, `ui_locales`, ...); the ones above win. */
  readonly params?: Readonly<Record<string, unknown>> | undefined
}

const END_SESSION_OPTION_KEYS = optionKeys<EndSessionOptions>({
  idTokenHint: true,
  postLogoutRedirectUri: true,
  state: true,
  clientId: true,
  params: true,
})

/** Options of {@link Client.register}: the returned client's options and the registration's. */
export type RegisterOptions<RaiseErrors extends boolean = true> = ClientOptionsFor<RaiseErrors> & {
  /**
   * The initial access token the server gave out of band, sent as a bearer token with the
   * registration request (RFC 7591 §3).
   */
  readonly initialAccessToken?: string | undefined
}

/** The registration endpoint: its requests carry the initial access token. */
const REGISTRATION: Endpoint = {
  name: 'registration endpoint',
  option: 'registration_endpoint',
  refusal:
    'registration requests carry the initial access token and are never redirected ' +
    '(RFC 7591 §3)',
}

/**
 * A client of a registration (RFC 7591 §3.2.1): the issued `client_id` and `client_secret`,
 * `authScheme` from `token_endpoint_auth_method` (`client_secret_basic` when absent),
 * `redirect_uri` when exactly one was registered (options win over both), and the discovered
 * endpoints.
 *
 * @throws {TypeError} `ERR_INVALID_ARG_VALUE` for a registered `token_endpoint_auth_method` that
 *   has no `authScheme` (unless `options.authScheme` is given).
 * @internal
 */
export function clientFor<RaiseErrors extends boolean>(
  ClientClass: new (
    clientId: string,
    clientSecret: string | undefined,
    options: ClientOptionsFor<RaiseErrors>,
    buildConnection?: (connection: ConnectionBuilder) => void,
  ) => Client<RaiseErrors>,
  registration: ClientRegistration,
  options: ClientOptionsFor<RaiseErrors>,
  issuer: string,
  metadata: AuthorizationServerMetadata,
  buildConnection?: (connection: ConnectionBuilder) => void,
): Client<RaiseErrors> {
  const authScheme = options.authScheme ?? authSchemeOf(registration.token_endpoint_auth_method)
  if (authScheme === undefined) {
    throw invalidValue(
      'options.authScheme',
      `is needed: the registered token_endpoint_auth_method ` +
        `${show(registration.token_endpoint_auth_method)} has no authScheme of its own`,
    )
  }
  const redirects = registration.redirect_uris
  const redirect =
    Array.isArray(redirects) && redirects.length === 1 && typeof redirects[0] === 'string'
      ? redirects[0]
      : undefined
  return new ClientClass(
    registration.client_id,
    authScheme === 'none' ? undefined : registration.client_secret,
    discoveredOptions(
      { ...(redirect === undefined ? {} : { redirect_uri: redirect }), ...options, authScheme },
      issuer,
      metadata,
    ),
    buildConnection,
  )
}

/** Discovery documents are read where the issuer says, never through a redirect. */
const DISCOVERY: Endpoint = {
  name: 'discovery document',
  option: 'issuer',
  refusal:
    'discovery documents are read only at the URLs the issuer gives (OIDC Discovery §4, ' +
    'RFC 8414 §3.1), never through a redirect',
}

/**
 * An OAuth 2.0 client (the gem's `OAuth2::Client`): builds authorization URLs, requests tokens
 * with any grant, and sends requests; a base for the grant strategies `authCode` (with pushed
 * authorization requests), `implicit`, `password`, `clientCredentials`, `assertion`, `deviceCode`
 * and `tokenExchange`. With the `dpop` option its tokens are sender-constrained (RFC 9449).
 *
 * `util.inspect` and `JSON.stringify` show the client without its secret or private keys.
 *
 * @example
 * ```ts
 * import { Client } from '@gatehouse/oauth2'
 * const client = new Client('my-id', 'my-secret', { site: 'https://auth.example' })
 * const token = await client.clientCredentials.getToken({ scope: 'api' })
 * const response = await token.get('/api/things')
 * ```
 *
 * @typeParam RaiseErrors The `raiseErrors` option, inferred from the options (`true` when absent):
 *   it decides whether `getToken` may resolve `undefined` (see {@link TokenResult}).
 */
export class Client<RaiseErrors extends boolean = true> {
  /** The client identifier (`client_id`). */
  readonly id: string
  /** Options after defaults. */
  readonly options: ResolvedClientOptions
  /** Library settings in force when the client was created (see {@link configure}). */
  readonly config: Configuration
  /** Time source (epoch ms). */
  readonly clock: Clock
  /** Receiver of debug output and warnings. */
  readonly logger: Logger
  readonly #secret: string | undefined
  #site: string | undefined
  readonly #requester: Requester
  readonly #tokens: TokenEndpoint
  readonly #dpop: DPoP | undefined
  readonly #close: () => Promise<void>
  readonly #sentNonces = new SentNonces()
  readonly #requestObjects: RequestObjectSigner
  #verifier: IdTokenVerifier | undefined
  #tokenUrl: string | undefined

  /**
   * @param clientId The client identifier.
   * @param clientSecret The client secret; `undefined`/`null` for public clients.
   * @param options See {@link ClientOptions}.
   * @param buildConnection Receives the {@link ConnectionBuilder}: request encoding, middleware,
   *   adapter.
   * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` naming the bad argument.
   */
  constructor(
    clientId: string,
    clientSecret: string | null | undefined,
    options: ClientOptionsFor<RaiseErrors> = {},
    buildConnection?: (connection: ConnectionBuilder) => void,
  ) {
    assertString('clientId', clientId)
    if (clientSecret !== undefined && clientSecret !== null && typeof clientSecret !== 'string') {
      throw invalidType('clientSecret', 'a string', clientSecret)
    }
    checkOptions(options)
    checkSecretForScheme(clientSecret ?? undefined, options.authScheme)
    if (buildConnection !== undefined && typeof buildConnection !== 'function') {
      throw invalidType('buildConnection', 'a function', buildConnection)
    }
    this.id = clientId
    this.#secret = clientSecret ?? undefined
    this.config = currentConfiguration()
    this.clock = options.clock ?? systemClock
    this.logger = options.logger ?? console
    this.#site = options.site === undefined ? undefined : String(options.site)
    this.options = resolveOptions(options, this.#site)
    const authenticator = new Authenticator(clientId, this.#secret, this.options.authScheme, {
      basicAuthEncoding: this.options.basicAuthEncoding,
      privateKey: options.privateKey,
      now: () => this.clock.now(),
      random: systemRandom,
    })
    const connectionOpts = this.options.connectionOpts
    const defaultHeaders: Record<string, string> = {}
    lowerHeaders('options.connectionOpts.headers', connectionOpts.headers, defaultHeaders)
    const connection = openConnection(
      {
        connectionOpts,
        fetch: options.fetch,
        logger: this.logger,
        config: this.config,
        configuredHeaders: Object.keys(defaultHeaders),
      },
      buildConnection,
    )
    this.#close = connection.close
    this.#requester = new Requester(this, connection, defaultHeaders)
    const dpop = this.options.dpop
    this.#dpop =
      dpop === undefined ? undefined : new DPoP(dpop, { clock: this.clock, random: systemRandom })
    this.#tokens = new TokenEndpoint(this, this.#requester, authenticator, this.#dpop)
    this.#requestObjects = new RequestObjectSigner(
      clientId,
      options.privateKey,
      () => this.clock.now(),
      systemRandom,
    )
  }

  /** The client secret (not shown by `util.inspect` or `JSON.stringify`). */
  get secret(): string | undefined {
    return this.#secret
  }

  /** Base URL of the provider; may be changed. */
  get site(): string | undefined {
    return this.#site
  }

  set site(value: string | URL | undefined) {
    if (value !== undefined && typeof value !== 'string' && !(value instanceof URL)) {
      throw invalidType('site', 'a string or URL', value)
    }
    this.#site = value === undefined ? undefined : String(value)
    this.#tokenUrl = undefined
  }

  /**
   * Discovers an OpenID Connect provider or OAuth 2.0 authorization server (OIDC Discovery 1.0,
   * RFC 8414) and returns a client configured with its endpoints (`authorizeUrl`, `tokenUrl`,
   * `revokeUrl`, `introspectUrl`, `userinfoUrl`, `pushedAuthorizationRequestUrl`,
   * `deviceAuthorizationUrl`, `endSessionUrl`), `requirePar` when the server has
   * `require_pushed_authorization_requests`, and `metadata` (for ID token validation, and the DPoP
   * algorithm: the first of `dpop_signing_alg_values_supported` a generated key can use, ES256
   * when listed).
   *
   * @param issuer The issuer identifier, e.g. `https://auth.example`; must equal the metadata's
   *   `issuer` exactly, and be https (http only on a loopback host, for development).
   * @param clientId The client identifier.
   * @param clientSecret The client secret, if any.
   * @param options Other client options (endpoint options are overridden by the metadata);
   *   `discoveryUrl` reads the document there instead of at the issuer's well-known locations.
   * @param buildConnection The connection builder callback.
   * @throws {OAuth2Error} `invalid_metadata` when no document is found (documents are read only at
   *   the discovery URLs, never through a redirect), it is not a JSON object, its `issuer` differs,
   *   or an endpoint it names (`token_endpoint`, `jwks_uri`, any `*_endpoint`,
   *   `mtls_endpoint_aliases`) is not https (http only on a loopback host; RFC 8414 §2): the
   *   description names the field.
   * @throws {TypeError} `ERR_INVALID_ARG_VALUE` when `issuer` is not a URL, or not https outside
   *   loopback hosts; or when the `dpop` option's algorithm is not one the server accepts.
   * @see https://openid.net/specs/openid-connect-discovery-1_0.html#ProviderConfig
   * @see https://www.rfc-editor.org/rfc/rfc8414#section-3
   */
  static async discover<RaiseErrors extends boolean = true>(
    issuer: string,
    clientId: string,
    clientSecret?: string | null,
    options: ClientOptionsFor<RaiseErrors> = {},
    buildConnection?: (connection: ConnectionBuilder) => void,
  ): Promise<Client<RaiseErrors>> {
    checkIssuer(issuer)
    const at = options.discoveryUrl
    if (at !== undefined && !(URL.canParse(at) && isSecureUrl(at))) {
      throw invalidValue(
        'discoveryUrl',
        `must be an https URL; http only on a loopback host (got '${at}')`,
      )
    }
    const probe = new this(clientId, clientSecret, { ...options, site: issuer }, buildConnection)
    let metadata: AuthorizationServerMetadata
    try {
      metadata = await fetchMetadata(probe, issuer, at === undefined ? undefined : [at])
    } finally {
      await probe.close()
    }
    return new this(
      clientId,
      clientSecret,
      discoveredOptions(options, issuer, metadata),
      buildConnection,
    )
  }

  /**
   * Registers a client with an authorization server (RFC 7591) and returns a client configured
   * with the issued credentials. Discovers the server (as {@link Client.discover}), POSTs
   * `clientMetadata` as JSON to its `registration_endpoint` (with `Authorization: Bearer
   * <initialAccessToken>` when given, RFC 7591 §3; never through a redirect), checks the response
   * (status 201, `client_id`, a `client_secret` with its `client_secret_expires_at`, a secure
   * `registration_client_uri`), and builds the client: the issued `client_id` and
   * `client_secret`, `authScheme` from the registered `token_endpoint_auth_method`
   * (`client_secret_basic` when absent), `redirect_uri` when exactly one was registered (options
   * win over both), and the discovered endpoints.
   *
   * @param issuer The issuer identifier (https; http only on a loopback host).
   * @param clientMetadata The client metadata to register (RFC 7591 §2), wire names.
   * @param options `initialAccessToken` (RFC 7591 §3, when the server requires one) and the
   *   options of the returned client.
   * @param buildConnection The connection builder callback.
   * @returns `{ client, registration }`: the client, and the registration response as sent (with
   *   `registration_access_token` and `registration_client_uri`, RFC 7592 §3, when the server
   *   issues them; keep them, with the secret, to manage the registration).
   * @throws {OAuth2Error} `invalid_metadata` (discovery, or no `registration_endpoint`); the
   *   server's error (`invalid_redirect_uri`, `invalid_client_metadata`,
   *   `invalid_software_statement`, `unapproved_software_statement`, RFC 7591 §3.2.2; or
   *   `invalid_token` for a bad initial access token); `invalid_registration_response`;
   *   `redirect_not_followed`.
   * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` for bad arguments, and for a
   *   registered `token_endpoint_auth_method` this library does not speak (pass `authScheme`).
   * @see https://www.rfc-editor.org/rfc/rfc7591#section-3
   *
   * @example
   * ```ts
   * import { Client } from '@gatehouse/oauth2'
   * const { client, registration } = await Client.register('https://auth.example', {
   *   client_name: 'My app',
   *   redirect_uris: ['https://app.example/callback'],
   *   grant_types: ['authorization_code', 'refresh_token'],
   * })
   * // keep client.id, client.secret and registration.registration_access_token
   * ```
   */
  static async register<RaiseErrors extends boolean = true>(
    issuer: string,
    clientMetadata: ClientMetadata,
    options: RegisterOptions<RaiseErrors> = {},
    buildConnection?: (connection: ConnectionBuilder) => void,
  ): Promise<{ client: Client<RaiseErrors>; registration: ClientRegistration }> {
    checkIssuer(issuer)
    if (!isRecord(clientMetadata)) throw invalidType('clientMetadata', 'an object', clientMetadata)
    assertRecord('options', options)
    const { initialAccessToken, ...clientOptions } = options
    if (initialAccessToken !== undefined) {
      assertString('options.initialAccessToken', initialAccessToken)
    }
    checkOptions(clientOptions)
    const probe = new this('', undefined, transportOptions(clientOptions, issuer), buildConnection)
    let metadata: AuthorizationServerMetadata
    let registration: ClientRegistration
    try {
      metadata = await fetchMetadata(probe, issuer)
      const endpoint = metadata.registration_endpoint
      if (typeof endpoint !== 'string') {
        throw libraryError(
          'invalid_metadata',
          `${issuer} has no registration_endpoint: it does not take dynamic client registration`,
        )
      }
      const response = await probe.registrationRequest(endpoint, clientMetadata, initialAccessToken)
      registration = readRegistration(response)
    } finally {
      await probe.close()
    }
    const client = clientFor(this, registration, clientOptions, issuer, metadata, buildConnection)
    return { client, registration }
  }

  /**
   * A client of a registration made elsewhere (for `Client.forResource`).
   *
   * @internal
   */
  static fromRegistration(
    registration: ClientRegistration,
    options: ClientOptions,
    issuer: string,
    metadata: AuthorizationServerMetadata,
    buildConnection?: (connection: ConnectionBuilder) => void,
  ): Client {
    return clientFor(this, registration, options, issuer, metadata, buildConnection)
  }

  /**
   * Walks the whole chain from a protected resource to a token for it, as an MCP client must
   * (MCP authorization; RFC 9728, RFC 8414, RFC 7591, RFC 9126, RFC 7636, RFC 8707):
   *
   * 1. the resource's metadata ({@link discoverResource}: the `resource_metadata` of its `401`,
   *    else its well-known document), `resource` checked;
   * 2. the metadata of the first of its `authorization_servers` (OpenID Connect discovery, then
   *    RFC 8414), which must list `S256` in `code_challenge_methods_supported`;
   * 3. a client id: the `clientIdMetadataDocument` URL when the server has
   *    `client_id_metadata_document_supported`, else a dynamic registration (RFC 7591) with
   *    `clientMetadata` (a public client by default), kept per issuer in `registrations`;
   * 4. an authorization request with PKCE S256, a random `state`, the `scope` and the RFC 8707
   *    `resource`, pushed (RFC 9126) when the server takes PAR.
   *
   * It resolves with the URL to send the user to and `complete(callback)`, which validates the
   * callback, exchanges the code (with `resource`) and yields a token bound to the resource: its
   * `fetch` goes only to the resource, is DPoP-bound with the `dpop` option, and refreshes itself
   * asking for the same resource.
   *
   * @param resourceUrl The protected resource (an MCP server's URL): https, http only on a
   *   loopback host, no fragment.
   * @param options `redirectUri` (required), `clientMetadata` or `clientIdMetadataDocument`,
   *   `scope`, `dpop`, `registrations`, `initialAccessToken`, `challenge`, and the transport
   *   options (`fetch`, `connectionOpts`, `logger`, `clock`).
   * @param buildConnection The connection builder callback, for every client of the chain.
   * @returns `{ authorizeUrl, state, codeVerifier, resource, resourceMetadata, client, complete }`.
   * @throws {OAuth2Error} `invalid_resource_metadata` (no metadata, another `resource`, no
   *   `authorization_servers`, an authorization server that is not https); `invalid_metadata`
   *   (discovery; no S256; no way to get a client id); the registration's and the PAR's errors.
   * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` for bad arguments.
   * @see https://modelcontextprotocol.io/specification/draft/basic/authorization
   * @see https://www.rfc-editor.org/rfc/rfc9728
   * @see https://www.rfc-editor.org/rfc/rfc8707
   *
   * @example
   * ```ts
   * import { Client, type ClientRegistration } from '@gatehouse/oauth2'
   * const registrations = new Map<string, ClientRegistration>()
   * const flow = await Client.forResource('https://mcp.example.com/mcp', {
   *   redirectUri: 'http://127.0.0.1:8123/callback',
   *   clientIdMetadataDocument: 'https://app.example.com/oauth/client.json',
   *   dpop: true,
   *   registrations,
   * })
   * // send the user to flow.authorizeUrl; then, with the URL the browser came back to:
   * declare const callbackUrl: string
   * const token = await flow.complete(callbackUrl)
   * const tools = await token.fetch('', { method: 'POST', body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' })
   * ```
   */
  static forResource(
    resourceUrl: string | URL,
    options: ForResourceOptions,
    buildConnection?: (connection: ConnectionBuilder) => void,
  ): Promise<ResourceAuthorization> {
    return forResource(this, resourceUrl, options, buildConnection)
  }

  /** `{ redirect_uri }` from the options, or `{}` (the gem's `redirection_params`). */
  redirectionParams(): Params {
    const uri = this.options.redirect_uri
    return uri === undefined ? {} : { redirect_uri: uri }
  }

  /**
   * The authorize endpoint URL with `params` (and the client's `redirect_uri`) in the query,
   * sorted by key. Strategies add `response_type` and `client_id`.
   */
  authorizeUrl(params: Readonly<Record<string, unknown>> = {}): string {
    assertRecord('params', params)
    return withQuery(resolveUrl(this.#site, this.options.authorizeUrl, 'options.authorizeUrl'), {
      ...this.redirectionParams(),
      ...params,
    })
  }

  /** The token endpoint URL, with optional query `params`. */
  tokenUrl(params?: Readonly<Record<string, unknown>>): string {
    if (params !== undefined)
      return withQuery(resolveUrl(this.#site, this.options.tokenUrl, 'options.tokenUrl'), params)
    // Token requests are the hot path: resolve once per site.
    this.#tokenUrl ??= resolveUrl(this.#site, this.options.tokenUrl, 'options.tokenUrl').href
    return this.#tokenUrl
  }

  /** The revocation endpoint URL, with optional query `params`. */
  revokeUrl(params?: Readonly<Record<string, unknown>>): string {
    return withQuery(resolveUrl(this.#site, this.options.revokeUrl, 'options.revokeUrl'), params)
  }

  /** The Authorization Code grant (with PKCE). */
  get authCode(): AuthCode<RaiseErrors> {
    return new AuthCode(this)
  }

  /** The Implicit grant (OAuth 2.0 only). */
  get implicit(): Implicit {
    return new Implicit(this)
  }

  /** The Resource Owner Password Credentials grant (OAuth 2.0 only). */
  get password(): Password<RaiseErrors> {
    return new Password(this)
  }

  /** The Client Credentials grant. */
  get clientCredentials(): ClientCredentials<RaiseErrors> {
    return new ClientCredentials(this)
  }

  /** The JWT Bearer grant (RFC 7523). */
  get assertion(): Assertion<RaiseErrors> {
    return new Assertion(this)
  }

  /** The Device Authorization Grant (RFC 8628): sign-in on TVs and command lines. */
  get deviceCode(): DeviceCode<RaiseErrors> {
    return new DeviceCode(this)
  }

  /** Token Exchange (RFC 8693): delegation and impersonation between services. */
  get tokenExchange(): TokenExchange<RaiseErrors> {
    return new TokenExchange(this)
  }

  /**
   * The nonces of the authorization requests this client built, per PKCE challenge, until their
   * code exchange.
   *
   * @internal
   */
  get sentNonces(): SentNonces {
    return this.#sentNonces
  }

  /**
   * Signs authorization request parameters as a request object (RFC 9101 §4) with the client's
   * `privateKey`; `aud` is the server's issuer identifier (the metadata's, else `site`).
   *
   * @internal
   */
  signRequestObject(params: Readonly<Record<string, unknown>>): Promise<string> {
    const audience = this.options.metadata?.issuer ?? this.#site
    if (audience === undefined) {
      return Promise.reject(
        invalidValue(
          'options.site',
          'is needed to sign request objects (their aud is the issuer): use Client.discover()',
        ),
      )
    }
    return this.#requestObjects.sign(params, audience)
  }

  /** The client's DPoP key and server nonces, when it has the `dpop` option. @internal */
  get dpop(): DPoP | undefined {
    return this.#dpop
  }

  /**
   * The JWK SHA-256 thumbprint (RFC 7638) of the client's DPoP public key: the `cnf.jkt` of the
   * tokens bound to it (RFC 9449 §6), and the value of the `dpop_jkt` authorization request
   * parameter that binds an authorization code to the key (§10).
   *
   * @returns The base64url thumbprint.
   * @throws {TypeError} `ERR_INVALID_ARG_VALUE` when the client has no `dpop` option, or its key
   *   pair does not match.
   * @see https://www.rfc-editor.org/rfc/rfc9449#section-10
   *
   * @example
   * ```ts
   * import type { Client } from '@gatehouse/oauth2'
   * let client!: Client
   * const url = client.authCode.authorizeUrl({ scope: 'openid', dpop_jkt: await client.dpopJkt() })
   * ```
   */
  async dpopJkt(): Promise<string> {
    if (this.#dpop === undefined) {
      throw invalidValue('options.dpop', 'is not set: the client has no DPoP key')
    }
    return this.#dpop.thumbprint()
  }

  /**
   * Sends a request and wraps the response (the gem's `Client#request`).
   *
   * - URLs: relative to `site` (no leading `/`: under its path; leading `/`: from the host root),
   *   or absolute (used as given, no allow-list: never pass untrusted URLs to a token-bearing
   *   request).
   * - Redirects: 301, 302, 303 and 307 are followed up to `maxRedirects` (then the 3xx is
   *   returned); 303 becomes a GET without body. 308 is returned as is. Unlike the gem, a hop to
   *   another origin carries no header that was configured or given (`Authorization`,
   *   `Proxy-Authorization`, `Cookie`, `connectionOpts.headers`, `opts.headers`), and these
   *   redirects are not followed (`redirect_not_followed`): to another origin with a body (307, or
   *   301/302 of a request with a body), from `https:` to `http:`, or to a scheme other than
   *   `http:`/`https:`.
   * - Status: 200-399 resolve; 400-599 throw {@link OAuth2Error} (or set `response.error` with
   *   `raiseErrors: false`, also for redirects not followed); anything else throws
   *   `unhandled_status`.
   *
   * @param verb HTTP verb.
   * @param url Path or absolute URL.
   * @param opts Query, body, headers, parsing and error options.
   * @returns The response.
   * @throws {OAuth2Error} As described above; `missing_location` for a redirect without a valid
   *   Location; `response_too_large` for a body over `connectionOpts.maxResponseBytes`.
   * @throws {ConnectionError} When the connection fails.
   * @throws {TimeoutError} When `connectionOpts.timeout` elapses.
   */
  request(
    verb: HttpVerb | Uppercase<HttpVerb>,
    url: string | URL,
    opts: RequestOptions = {},
  ): Promise<Response> {
    // Not async: no extra promise on the hot path; send rejects rather than throws.
    return this.#requester.send(verb, url, opts, undefined)
  }

  /**
   * {@link Client.request} with credentials computed for each request sent (a DPoP proof and
   * `Authorization: DPoP`), for `AccessToken`.
   *
   * @internal
   */
  sendSigned(
    verb: HttpVerb | Uppercase<HttpVerb>,
    url: string | URL,
    opts: RequestOptions,
    signer: RequestSigner,
  ): Promise<Response> {
    return this.#requester.send(verb, url, opts, undefined, signer)
  }

  /**
   * GETs a discovery document at `url` as it is: no redirect followed (a 3xx comes back with
   * `response.error` `redirect_not_followed`), no status raised; for `Client.discover`.
   *
   * @internal
   */
  discoveryRequest(url: string): Promise<Response> {
    return this.#requester.send('get', url, { snaky: false, raiseErrors: false }, DISCOVERY)
  }

  /**
   * POSTs client metadata as JSON to a registration endpoint (RFC 7591 §3.1), with the initial
   * access token as a bearer token when given; never redirected; errors raised.
   *
   * @internal
   */
  registrationRequest(
    endpoint: string,
    clientMetadata: ClientMetadata,
    initialAccessToken: string | undefined,
  ): Promise<Response> {
    return this.#requester.send(
      'post',
      endpoint,
      {
        body: clientMetadata,
        headers: {
          'content-type': 'application/json',
          ...(initialAccessToken === undefined
            ? {}
            : { authorization: `Bearer ${initialAccessToken}` }),
        },
        snaky: false,
        raiseErrors: true,
      },
      REGISTRATION,
    )
  }

  /**
   * Pushes authorization request parameters to `pushedAuthorizationRequestUrl` (RFC 9126 §2.1)
   * with client authentication, for `AuthCode#pushAuthorizationRequest`.
   *
   * @internal
   */
  pushAuthorization(params: Readonly<Record<string, unknown>>): Promise<Response> {
    const url = this.#endpointUrl(
      'pushedAuthorizationRequestUrl',
      'pushed authorization request endpoint',
    )
    return this.#tokens.push(url, params)
  }

  /**
   * Sends a device authorization request to `deviceAuthorizationUrl` (RFC 8628 §3.1) with client
   * authentication, for `DeviceCode#start`.
   *
   * @internal
   */
  authorizeDevice(params: Readonly<Record<string, unknown>>): Promise<Response> {
    const url = this.#endpointUrl('deviceAuthorizationUrl', 'device authorization endpoint')
    return this.#tokens.deviceAuthorization(url, params)
  }

  /**
   * The URL to send the user's browser to for signing out at the OpenID provider (OpenID Connect
   * RP-Initiated Logout 1.0 §2): the discovered `end_session_endpoint` (or `endSessionUrl`) with
   * `client_id` (the client's, or `options.clientId`), `id_token_hint`,
   * `post_logout_redirect_uri`, `state` and `options.params` (`logout_hint`, `ui_locales`, ...) in
   * the query. Pass the ID token the user signed in with as `idTokenHint` (the provider then knows
   * whom to sign out and skips its confirmation where it may); `postLogoutRedirectUri` must be
   * registered with the provider, and `state` comes back to it.
   *
   * @param options `idTokenHint`, `postLogoutRedirectUri` (an absolute URL), `state`, `clientId`,
   *   `params`.
   * @returns The end session URL.
   * @throws {OAuth2Error} `invalid_metadata` when the client has no end session endpoint (use
   *   `Client.discover()` on a provider that has one, or set `endSessionUrl`).
   * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` for bad options.
   * @see https://openid.net/specs/openid-connect-rpinitiated-1_0.html#RPLogout
   *
   * @example
   * ```ts
   * import type { AccessToken, Client } from '@gatehouse/oauth2'
   * let client!: Client
   * let token!: AccessToken // from the sign-in, with its id_token
   * const url = client.endSessionUrl({
   *   idTokenHint: String(token.params.id_token),
   *   postLogoutRedirectUri: 'https://app.example/signed-out',
   *   state: 'after-logout',
   * })
   * ```
   */
  endSessionUrl(options: EndSessionOptions = {}): string {
    assertRecord('options', options)
    assertKnownKeys('options', options, END_SESSION_OPTION_KEYS)
    const { idTokenHint, postLogoutRedirectUri, state, clientId, params = {} } = options
    for (const [name, value] of Object.entries({
      idTokenHint,
      postLogoutRedirectUri,
      state,
      clientId,
    })) {
      if (value !== undefined) assertString(`options.${name}`, value)
    }
    if (postLogoutRedirectUri !== undefined && !URL.canParse(postLogoutRedirectUri)) {
      throw invalidValue('options.postLogoutRedirectUri', 'must be an absolute URL')
    }
    assertRecord('options.params', params)
    const url = this.#endpointUrl('endSessionUrl', 'end session endpoint')
    return withQuery(new URL(url), {
      ...params,
      client_id: clientId ?? this.id,
      ...(idTokenHint === undefined ? {} : { id_token_hint: idTokenHint }),
      ...(postLogoutRedirectUri === undefined
        ? {}
        : { post_logout_redirect_uri: postLogoutRedirectUri }),
      ...(state === undefined ? {} : { state }),
    })
  }

  /** An endpoint that has no default path: from the option or discovery, else `invalid_metadata`. */
  #endpointUrl(
    option: 'pushedAuthorizationRequestUrl' | 'deviceAuthorizationUrl' | 'endSessionUrl',
    what: string,
  ) {
    const path = this.options[option]
    if (path === undefined) {
      throw libraryError(
        'invalid_metadata',
        `the client has no ${what}: use Client.discover() or set options.${option}`,
      )
    }
    return resolveUrl(this.#site, path, `options.${option}`).href
  }

  /**
   * Requests a token with any grant (the gem's `get_token`): client authentication per
   * `authScheme`, parameters per `tokenMethod`, then builds the token from the parsed response
   * merged with `accessTokenOpts` (which win).
   *
   * With `raiseErrors: false` nothing is thrown for the server's answer, as in the gem: an error
   * response whose body is a JSON object or form gives a token built from it (empty `token`,
   * fields in `params`) whose `response.error` holds the {@link OAuth2Error}; any other body
   * (HTML, an array, `{}`, invalid JSON, also on 2xx) resolves `undefined`.
   *
   * @param params Wire parameters (`grant_type`, ...) and the reserved keys of {@link TokenParams}.
   * @param accessTokenOpts Options and fields of the token.
   * @returns The token (see {@link TokenResult}); `token.response` is the token response.
   * @throws {OAuth2Error} With `raiseErrors` (the default): the server's error (400-599);
   *   `invalid_token_response` when the body is not a non-empty JSON object or form;
   *   `redirect_not_followed` for any 3xx (token requests are never redirected). Always:
   *   `unhandled_status` for a status outside 200-599.
   * @throws {ConnectionError} When the connection fails.
   * @throws {TimeoutError} When `connectionOpts.timeout` elapses.
   * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` for bad arguments.
   * @see https://www.rfc-editor.org/rfc/rfc6749#section-5
   */
  async getToken(
    params: TokenParams,
    accessTokenOpts: AccessTokenOptions = {},
  ): Promise<TokenResult<RaiseErrors>> {
    const { token } = await this.requestToken(params, accessTokenOpts)
    return token as TokenResult<RaiseErrors>
  }

  /**
   * {@link Client.getToken} that also hands back the response when there is no token (for
   * `AccessToken#refresh`).
   *
   * @internal
   */
  requestToken(
    params: TokenParams,
    accessTokenOpts: AccessTokenOptions = {},
  ): Promise<{ response: Response; token: AccessToken | undefined }> {
    return this.#tokens.requestToken(params, accessTokenOpts)
  }

  /**
   * Revokes a token (RFC 7009 §2.1) at `revokeUrl`, with client authentication.
   *
   * Unlike the gem (which defaults to the query string), the token goes in a form POST body as
   * RFC 7009 requires; `params.tokenMethod: 'post_with_query_string'` restores the gem's way.
   *
   * @param token The token to revoke.
   * @param tokenTypeHint `'access_token'` or `'refresh_token'`.
   * @param params Extra parameters, `headers`, `tokenMethod`.
   * @returns The response (any 2xx is success; with `raiseErrors: false`, check `response.error`).
   * @throws {OAuth2Error} The server's error (with `raiseErrors`, the default).
   * @see https://www.rfc-editor.org/rfc/rfc7009#section-2.1
   */
  async revokeToken(
    token: string,
    tokenTypeHint?: string,
    params: TokenParams = {},
  ): Promise<Response> {
    return this.#tokens.revoke(token, tokenTypeHint, params)
  }

  /**
   * Asks the introspection endpoint about a token (RFC 7662 §2.1), with client authentication.
   *
   * @param token The token.
   * @param tokenTypeHint `'access_token'` or `'refresh_token'`.
   * @param params Extra parameters, `headers`.
   * @returns The response; `parsed.active` tells whether the token is active (with
   *   `raiseErrors: false`, check `response.error` first).
   * @throws {OAuth2Error} The server's error (with `raiseErrors`, the default).
   * @see https://www.rfc-editor.org/rfc/rfc7662#section-2.1
   */
  async introspectToken(
    token: string,
    tokenTypeHint?: string,
    params: TokenParams = {},
  ): Promise<Response> {
    return this.#tokens.introspect(token, tokenTypeHint, params)
  }

  /**
   * Verifies an ID token (OpenID Connect Core §3.1.3.7): `alg` is one of the provider's
   * `id_token_signing_alg_values_supported` (RS256 when the metadata has none; never `none`);
   * signature with the provider's JWKS (fetched from `jwks_uri`, cached, refetched on an unknown
   * `kid`) or, for HS*, the client secret; `iss` equals the metadata's issuer, which must be https
   * (http only on loopback hosts), as must `jwks_uri`; `aud` contains the client id (or one of
   * `options.audiences`, and then `azp` is not checked); `azp` (required with several audiences)
   * equals it; `exp` and `iat` present and valid; `nonce` equals
   * `options.nonce`, and a token carrying a `nonce` is refused without one; `at_hash` and `c_hash`,
   * when present, match `options.accessToken` and `options.code` (§3.1.3.6, §3.3.2.11; with
   * `accessTokenHash: 'when-given'`, `at_hash` only when `accessToken` is given);
   * `auth_time` with `maxAge`. Needs `metadata` (from {@link Client.discover}).
   *
   * @param idToken The compact JWS.
   * @param options `nonce`, `maxAge` (seconds), `clockTolerance` (seconds), `accessToken`, `code`,
   *   `audiences`, `accessTokenHash`.
   * @returns The claims.
   * @throws {OAuth2Error} `invalid_id_token` on any failed check; `invalid_metadata` without
   *   metadata, or with an insecure issuer or `jwks_uri`, or malformed algorithms.
   * @throws {TypeError} `ERR_INVALID_ARG_TYPE` for bad options.
   * @see https://openid.net/specs/openid-connect-core-1_0.html#IDTokenValidation
   */
  async verifyIdToken(idToken: string, options: VerifyIdTokenOptions = {}): Promise<IdTokenClaims> {
    assertString('idToken', idToken)
    assertRecord('options', options)
    checkVerifyOptions(options)
    const metadata = this.options.metadata
    if (metadata === undefined) {
      throw libraryError(
        'invalid_metadata',
        'verifyIdToken needs the server metadata: use Client.discover() or options.metadata',
      )
    }
    this.#verifier ??= new IdTokenVerifier(this, metadata)
    return this.#verifier.verify(idToken, options)
  }

  /**
   * Fetches the user's claims from the UserInfo endpoint (OpenID Connect Core §5.3) with the
   * access token.
   *
   * @param token An access token (sent per its mode) or the token string (sent as Bearer).
   * @param options `expectedSubject`: the `sub` of the ID token, which the response must match;
   *   `url`, `headers`, `params`: for a provider's own profile endpoint (GitHub's `/user`).
   * @returns The claims (a SnakyHash).
   * @throws {OAuth2Error} The server's error; `invalid_userinfo` when the body is not a JSON
   *   object or `sub` differs.
   */
  userinfo(
    token: AccessToken | string,
    options: UserinfoOptions = {},
  ): Promise<Record<string, unknown>> {
    // Not async: fetchUserinfo rejects rather than throws.
    return fetchUserinfo(this, token, options)
  }

  /** Releases the connection pool the client created (only when `tls` or `proxy` is set). */
  async close(): Promise<void> {
    await this.#close()
  }

  /** The client without secrets, for `JSON.stringify`. */
  toJSON(): Record<string, unknown> {
    const label = this.config.filteredLabel
    const { connectionOpts, dpop, ...rest } = this.options
    const { tls, headers, proxy } = connectionOpts
    const filter = new DebugFilter(this.config)
    return {
      id: this.id,
      secret: this.#secret === undefined ? undefined : label,
      ...rest,
      site: this.#site,
      accessTokenClass: rest.accessTokenClass.name,
      connectionOpts: {
        ...connectionOpts,
        ...(tls === undefined
          ? {}
          : { tls: { ...tls, ...(tls.key === undefined ? {} : { key: label }) } }),
        // Configured headers may carry API keys; a proxy URL may carry a password.
        ...(headers === undefined
          ? {}
          : { headers: Object.fromEntries(Object.keys(headers).map((k) => [k, label])) }),
        ...(proxy === undefined ? {} : { proxy: filter.url(proxy) }),
      },
      privateKey: this.#authenticatorHasKey() ? label : undefined,
      dpop:
        dpop === undefined
          ? undefined
          : {
              algorithm: dpop.algorithm,
              keyPair: dpop.keyPair === undefined ? 'generated' : label,
            },
    }
  }

  #authenticatorHasKey(): boolean {
    return this.options.authScheme === 'private_key_jwt'
  }

  /** `util.inspect` output without secrets. */
  [Symbol.for('nodejs.util.inspect.custom')](): unknown {
    return Object.assign(Object.create({ constructor: Client }) as object, this.toJSON())
  }
}
