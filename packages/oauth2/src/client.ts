import { AccessToken, type AccessTokenOptions } from './access-token.js'
import {
  assertOneOf,
  assertOptionalBoolean,
  assertRecord,
  assertString,
  invalidType,
  invalidValue,
  isRecord,
  show,
} from './args.js'
import {
  AUTH_SCHEMES,
  Authenticator,
  type AuthScheme,
  type BasicAuthEncoding,
} from './authenticator.js'
import { systemClock, type Clock } from './clock.js'
import { currentConfiguration, debugEnabled, type Configuration } from './config.js'
import {
  compose,
  ConnectionBuilder,
  fetchTransport,
  undiciTransport,
  type ConnectionOptions,
  type FetchLike,
  type HttpMethod,
  type HttpRequest,
  type RequestEncoding,
  type Transport,
} from './connection.js'
import { DebugFilter, debugLogging, type Logger } from './debug.js'
import { invalidTokenResponse, libraryError, OAuth2Error } from './error.js'
import { SIGNING_ALGORITHMS, type SigningOptions } from './jwt.js'
import {
  fetchMetadata,
  IdTokenVerifier,
  isSecureUrl,
  type AuthorizationServerMetadata,
  type IdTokenClaims,
  type VerifyIdTokenOptions,
} from './oidc.js'
import { systemRandom } from './random.js'
import { Response, type ParseOption } from './response.js'
import type { SnakyHash } from './snaky-hash.js'
import { Assertion } from './strategy/assertion.js'
import { AuthCode } from './strategy/auth-code.js'
import { ClientCredentials } from './strategy/client-credentials.js'
import { Implicit } from './strategy/implicit.js'
import { Password } from './strategy/password.js'
import { encodeParams, resolveLocation, resolveUrl, withQuery, type Params } from './url.js'

/** HTTP verbs of {@link Client.request}, lowercase (uppercase is accepted too). */
export type HttpVerb = 'get' | 'post' | 'put' | 'patch' | 'delete' | 'head' | 'options'

/**
 * How token requests carry their parameters: `'post'` as a form body (JSON when the caller sets
 * `Content-Type: application/json`), `'get'` in the query of a GET, `'post_with_query_string'` in
 * the query of a POST.
 */
export type TokenMethod = 'post' | 'get' | 'post_with_query_string'

/** Options of {@link Client}. Library options are camelCase; wire names keep their RFC spelling. */
export interface ClientOptions {
  /** Base URL of the provider, e.g. `https://auth.example/tenant`. */
  readonly site?: string | URL | undefined
  /** Authorization endpoint, relative to `site` or absolute. @default 'oauth/authorize' */
  readonly authorizeUrl?: string | undefined
  /** Token endpoint, relative to `site` or absolute. @default 'oauth/token' */
  readonly tokenUrl?: string | undefined
  /** Revocation endpoint (RFC 7009). @default 'oauth/revoke' */
  readonly revokeUrl?: string | undefined
  /** Introspection endpoint (RFC 7662). @default 'oauth/introspect' */
  readonly introspectUrl?: string | undefined
  /** UserInfo endpoint (OIDC Core §5.3); set by {@link Client.discover}. */
  readonly userinfoUrl?: string | undefined
  /** Redirect URI added to authorization URLs and code exchanges. */
  readonly redirect_uri?: string | undefined
  /** How token requests carry parameters. @default 'post' */
  readonly tokenMethod?: TokenMethod | undefined
  /** Client authentication at the token endpoint. @default 'basic_auth' */
  readonly authScheme?: AuthScheme | undefined
  /**
   * Encoding of id and secret in `basic_auth`: `'form'` (RFC 6749 §2.3.1) or `'raw'` (the gem).
   *
   * @default 'form'
   */
  readonly basicAuthEncoding?: BasicAuthEncoding | undefined
  /** HTTP connection options: `timeout` (ms), `headers`, `proxy`, `tls`. */
  readonly connectionOpts?: ConnectionOptions | undefined
  /**
   * Throw {@link OAuth2Error} for 400-599 responses (else set `response.error` and return, also
   * from `getToken`, `revokeToken` and `introspectToken`; see {@link TokenResult}).
   *
   * @default true
   */
  readonly raiseErrors?: boolean | undefined
  /**
   * Redirects of resource requests followed before the 3xx response is returned as is (token,
   * revocation and introspection requests are never redirected). @default 5
   */
  readonly maxRedirects?: number | undefined
  /**
   * Receives debug output (`OAUTH_DEBUG=true`) and enabled warnings: any value with callable
   * `debug` and `warn` (an object, a class instance, a function with those methods).
   *
   * @default console
   */
  readonly logger?: Logger | undefined
  /** Send requests with this `fetch` instead of undici (other runtimes, tests). */
  readonly fetch?: FetchLike | undefined
  /** Key for `private_key_jwt`: `{ key, algorithm, kid? }`. */
  readonly privateKey?: SigningOptions | undefined
  /** Refuse authorization-code URLs without a S256 `code_challenge` and exchanges without a `code_verifier` (OAuth 2.1). @default false */
  readonly requirePkce?: boolean | undefined
  /** Metadata of the authorization server (set by {@link Client.discover}); used for OIDC. */
  readonly metadata?: AuthorizationServerMetadata | undefined
  /** The class of tokens built by `getToken`. @default AccessToken */
  readonly accessTokenClass?: typeof AccessToken | undefined
  /** Time source for token expiry and assertions (epoch ms). @default Date */
  readonly clock?: Clock | undefined
}

/** Options after defaults; what {@link Client.options} holds. */
export interface ResolvedClientOptions {
  readonly site: string | undefined
  readonly authorizeUrl: string
  readonly tokenUrl: string
  readonly revokeUrl: string
  readonly introspectUrl: string
  readonly userinfoUrl: string | undefined
  readonly redirect_uri: string | undefined
  readonly tokenMethod: TokenMethod
  readonly authScheme: AuthScheme
  readonly basicAuthEncoding: BasicAuthEncoding
  readonly connectionOpts: ConnectionOptions
  readonly raiseErrors: boolean
  readonly maxRedirects: number
  readonly requirePkce: boolean
  readonly metadata: AuthorizationServerMetadata | undefined
  readonly accessTokenClass: typeof AccessToken
}

/** Options of {@link Client.request}. */
export interface RequestOptions {
  /** Query parameters, added to the URL's own (sorted, `%20` for spaces). */
  readonly params?: Readonly<Record<string, unknown>> | undefined
  /** Body: a string or bytes as is, an object encoded as form (default) or JSON. */
  readonly body?: string | Uint8Array | Readonly<Record<string, unknown>> | undefined
  /** Request headers (case-insensitive names). */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Overrides the client's `raiseErrors` for this request. */
  readonly raiseErrors?: boolean | undefined
  /** How to parse the body (see {@link Response}). */
  readonly parse?: ParseOption | undefined
  /** snake_case parsed objects. @default true */
  readonly snaky?: boolean | undefined
  /** Class of parsed objects. @default SnakyHash */
  readonly snakyHashClass?: typeof SnakyHash | undefined
}

/**
 * Parameters of a token request: wire parameters (`grant_type`, `scope`, ...) plus the reserved
 * keys below, which are never sent.
 */
export interface TokenParams {
  /** Extra request headers. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** snake_case the parsed response. @default true */
  readonly snaky?: boolean | undefined
  /** Class of the parsed response. */
  readonly snakyHashClass?: typeof SnakyHash | undefined
  /** How to parse the response. */
  readonly parse?: ParseOption | undefined
  /** Overrides the client's `tokenMethod`. */
  readonly tokenMethod?: TokenMethod | undefined
  /** The response field holding the token (see `AccessToken.fromHash`). */
  readonly tokenName?: string | undefined
  readonly [param: string]: unknown
}

/**
 * What `getToken` resolves with, by the client's `raiseErrors`: always an {@link AccessToken} when
 * errors are raised (the default); with `raiseErrors: false`, the token built from an error
 * response (its `response.error` is set) or `undefined` when the response holds no token at all
 * (the gem's `nil`). A client whose `raiseErrors` is not known statically gets the union.
 */
export type TokenResult<RaiseErrors extends boolean> = RaiseErrors extends true
  ? AccessToken
  : AccessToken | undefined

/** The options of a client whose `raiseErrors` is the type parameter (for inference). */
export type ClientOptionsFor<RaiseErrors extends boolean> = ClientOptions & {
  readonly raiseErrors?: RaiseErrors | undefined
}

const TOKEN_METHODS: readonly TokenMethod[] = ['post', 'get', 'post_with_query_string']
const BASIC_ENCODINGS: readonly BasicAuthEncoding[] = ['form', 'raw']
const VERBS: Readonly<Record<string, HttpMethod>> = {
  get: 'GET',
  post: 'POST',
  put: 'PUT',
  patch: 'PATCH',
  delete: 'DELETE',
  head: 'HEAD',
  options: 'OPTIONS',
}
const REDIRECTS = new Set([301, 302, 303, 307])
const RESERVED_TOKEN_KEYS = new Set([
  'headers',
  'snaky',
  'snakyHashClass',
  'parse',
  'tokenMethod',
  'tokenName',
])

/** An endpoint whose requests carry credentials, and the option that sets its URL. */
interface Endpoint {
  readonly name: string
  readonly option: string
}
const TOKEN_ENDPOINT: Endpoint = { name: 'token endpoint', option: 'tokenUrl' }
const REVOCATION_ENDPOINT: Endpoint = { name: 'revocation endpoint', option: 'revokeUrl' }
const INTROSPECTION_ENDPOINT: Endpoint = { name: 'introspection endpoint', option: 'introspectUrl' }

/** ` (Location: <origin><path>)`, without query or fragment (they may carry secrets). */
function describeLocation(location: string | undefined, current: string): string {
  const url = location === undefined ? undefined : resolveLocation(location, new URL(current))
  return url === undefined ? '' : ` (Location: ${url.origin}${url.pathname})`
}

function lowerHeaders(name: string, headers: unknown, into: Record<string, string>): void {
  if (headers === undefined) return
  if (!isRecord(headers)) throw invalidType(name, 'an object', headers)
  for (const key of Object.keys(headers)) {
    const value = headers[key]
    if (typeof value !== 'string') throw invalidType(`${name}.${key}`, 'a string', value)
    into[key.toLowerCase()] = value
  }
}

/** Any value with callable `debug` and `warn`: an object, a class instance, or a function with those methods. */
function isLogger(value: unknown): value is Logger {
  if ((typeof value !== 'object' || value === null) && typeof value !== 'function') return false
  const candidate = value as { debug?: unknown; warn?: unknown }
  return typeof candidate.debug === 'function' && typeof candidate.warn === 'function'
}

function optionalUrlString(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string') throw invalidType(name, 'a string', value)
  return value
}

function checkOptions(options: ClientOptions): void {
  assertRecord('options', options)
  for (const key of [
    'authorizeUrl',
    'tokenUrl',
    'revokeUrl',
    'introspectUrl',
    'userinfoUrl',
    'redirect_uri',
  ]) {
    optionalUrlString(`options.${key}`, (options as Record<string, unknown>)[key])
  }
  const { site } = options
  if (site !== undefined && typeof site !== 'string' && !(site instanceof URL)) {
    throw invalidType('options.site', 'a string or URL', site)
  }
  if (typeof site === 'string' && site !== '' && !URL.canParse(site)) {
    throw invalidValue('options.site', `must be an absolute URL (got '${site}')`)
  }
  if (options.tokenMethod !== undefined)
    assertOneOf('options.tokenMethod', options.tokenMethod, TOKEN_METHODS)
  if (options.authScheme !== undefined)
    assertOneOf('options.authScheme', options.authScheme, AUTH_SCHEMES)
  if (options.basicAuthEncoding !== undefined) {
    assertOneOf('options.basicAuthEncoding', options.basicAuthEncoding, BASIC_ENCODINGS)
  }
  assertRecord('options.connectionOpts', options.connectionOpts)
  const timeout = options.connectionOpts?.timeout
  if (timeout !== undefined && (typeof timeout !== 'number' || !(timeout > 0))) {
    throw invalidType(
      'options.connectionOpts.timeout',
      'a positive number of milliseconds',
      timeout,
    )
  }
  assertOptionalBoolean('options.raiseErrors', options.raiseErrors)
  assertOptionalBoolean('options.requirePkce', options.requirePkce)
  const max = options.maxRedirects
  if (max !== undefined && (!Number.isInteger(max) || max < 0)) {
    throw invalidType('options.maxRedirects', 'a non-negative integer', max)
  }
  const logger: unknown = options.logger
  if (logger !== undefined && !isLogger(logger)) {
    throw invalidType('options.logger', 'a value with debug() and warn() methods', logger)
  }
  if (options.fetch !== undefined && typeof options.fetch !== 'function') {
    throw invalidType('options.fetch', 'a function', options.fetch)
  }
  if (
    options.clock !== undefined &&
    (!isRecord(options.clock) || typeof options.clock.now !== 'function')
  ) {
    throw invalidType('options.clock', 'an object with now()', options.clock)
  }
  const { privateKey } = options
  if (privateKey !== undefined) {
    if (!isRecord(privateKey)) throw invalidType('options.privateKey', 'an object', privateKey)
    if (!(SIGNING_ALGORITHMS as readonly unknown[]).includes(privateKey.algorithm)) {
      throw invalidValue(
        'options.privateKey.algorithm',
        `must be one of ${SIGNING_ALGORITHMS.join(', ')}`,
      )
    }
  }
  if (
    options.metadata !== undefined &&
    (!isRecord(options.metadata) || typeof options.metadata.issuer !== 'string')
  ) {
    throw invalidType('options.metadata', 'an object with issuer', options.metadata)
  }
}

/**
 * An OAuth 2.0 client (the gem's `OAuth2::Client`): builds authorization URLs, requests tokens
 * with any grant, and sends requests; a base for the grant strategies `authCode`, `implicit`,
 * `password`, `clientCredentials` and `assertion`.
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
  readonly #authenticator: Authenticator
  readonly #send: Transport
  readonly #close: () => Promise<void>
  readonly #encoding: RequestEncoding
  readonly #defaultHeaders: Readonly<Record<string, string>>
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
    if (buildConnection !== undefined && typeof buildConnection !== 'function') {
      throw invalidType('buildConnection', 'a function', buildConnection)
    }
    this.id = clientId
    this.#secret = clientSecret ?? undefined
    this.config = currentConfiguration()
    this.clock = options.clock ?? systemClock
    this.logger = options.logger ?? console
    this.#site = options.site === undefined ? undefined : String(options.site)
    const connectionOpts = options.connectionOpts ?? {}
    this.options = Object.freeze({
      site: this.#site,
      authorizeUrl: options.authorizeUrl ?? 'oauth/authorize',
      tokenUrl: options.tokenUrl ?? 'oauth/token',
      revokeUrl: options.revokeUrl ?? 'oauth/revoke',
      introspectUrl: options.introspectUrl ?? 'oauth/introspect',
      userinfoUrl: options.userinfoUrl,
      redirect_uri: options.redirect_uri,
      tokenMethod: options.tokenMethod ?? 'post',
      authScheme: options.authScheme ?? 'basic_auth',
      basicAuthEncoding: options.basicAuthEncoding ?? 'form',
      connectionOpts,
      raiseErrors: options.raiseErrors ?? true,
      maxRedirects: options.maxRedirects ?? 5,
      requirePkce: options.requirePkce ?? false,
      metadata: options.metadata,
      accessTokenClass: options.accessTokenClass ?? AccessToken,
    })
    this.#authenticator = new Authenticator(clientId, this.#secret, this.options.authScheme, {
      basicAuthEncoding: this.options.basicAuthEncoding,
      privateKey: options.privateKey,
      now: () => this.clock.now(),
      random: systemRandom,
    })
    const defaultHeaders: Record<string, string> = {}
    lowerHeaders('options.connectionOpts.headers', connectionOpts.headers, defaultHeaders)
    this.#defaultHeaders = defaultHeaders
    const builder = new ConnectionBuilder()
    buildConnection?.(builder)
    let transport = builder.transport
    let close = async (): Promise<void> => {}
    if (transport === undefined) {
      if (options.fetch !== undefined) {
        transport = fetchTransport(options.fetch, connectionOpts.timeout)
      } else {
        const undici = undiciTransport(connectionOpts)
        transport = undici.transport
        close = undici.close
      }
    }
    const middleware = [...builder.middleware]
    if (debugEnabled()) {
      middleware.push(debugLogging(this.logger, this.config, Object.keys(defaultHeaders)))
    }
    this.#send = compose(middleware, transport)
    this.#close = close
    this.#encoding = builder.encoding
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
   * `revokeUrl`, `introspectUrl`, `userinfoUrl`) and `metadata` (for ID token validation).
   *
   * @param issuer The issuer identifier, e.g. `https://auth.example`; must equal the metadata's
   *   `issuer` exactly, and be https (http only on a loopback host, for development).
   * @param clientId The client identifier.
   * @param clientSecret The client secret, if any.
   * @param options Other client options (endpoint options are overridden by the metadata).
   * @param buildConnection The connection builder callback.
   * @throws {OAuth2Error} `invalid_metadata` when no document is found, it is not a JSON object,
   *   or its `issuer` differs.
   * @throws {TypeError} `ERR_INVALID_ARG_VALUE` when `issuer` is not a URL, or not https outside
   *   loopback hosts.
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
    assertString('issuer', issuer)
    if (!URL.canParse(issuer))
      throw invalidValue('issuer', `must be an absolute URL (got '${issuer}')`)
    if (!isSecureUrl(issuer)) {
      throw invalidValue(
        'issuer',
        `must be an https URL; http only on a loopback host: localhost, 127.0.0.1, [::1] (got '${issuer}')`,
      )
    }
    const probe = new this(clientId, clientSecret, { ...options, site: issuer }, buildConnection)
    let metadata: AuthorizationServerMetadata
    try {
      metadata = await fetchMetadata(probe, issuer)
    } finally {
      await probe.close()
    }
    return new this(
      clientId,
      clientSecret,
      {
        ...options,
        site: issuer,
        metadata,
        authorizeUrl: metadata.authorization_endpoint ?? options.authorizeUrl,
        tokenUrl: metadata.token_endpoint ?? options.tokenUrl,
        revokeUrl: metadata.revocation_endpoint ?? options.revokeUrl,
        introspectUrl: metadata.introspection_endpoint ?? options.introspectUrl,
        userinfoUrl: metadata.userinfo_endpoint ?? options.userinfoUrl,
      },
      buildConnection,
    )
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
   *   Location.
   * @throws {ConnectionError} When the connection fails.
   * @throws {TimeoutError} When `connectionOpts.timeout` elapses.
   */
  request(
    verb: HttpVerb | Uppercase<HttpVerb>,
    url: string | URL,
    opts: RequestOptions = {},
  ): Promise<Response> {
    // Not async: no extra promise on the hot path; #request rejects rather than throws.
    return this.#request(verb, url, opts, undefined)
  }

  /**
   * {@link Client.request}; for an `endpoint` (token, revocation, introspection), no redirect is
   * followed: the request carries client credentials, grants or tokens.
   */
  async #request(
    verb: HttpVerb | Uppercase<HttpVerb>,
    url: string | URL,
    opts: RequestOptions,
    endpoint: Endpoint | undefined,
  ): Promise<Response> {
    let method = typeof verb === 'string' ? VERBS[verb.toLowerCase()] : undefined
    if (method === undefined) {
      throw invalidValue(
        'verb',
        `must be one of ${Object.keys(VERBS).join(', ')} (got ${show(verb)})`,
      )
    }
    if (typeof url !== 'string' && !(url instanceof URL))
      throw invalidType('url', 'a string or URL', url)
    assertRecord('opts', opts)
    let target = withQuery(
      url instanceof URL ? new URL(url) : resolveUrl(this.#site, url),
      opts.params,
    )
    let headers: Record<string, string> = { ...this.#defaultHeaders }
    lowerHeaders('opts.headers', opts.headers, headers)
    let body = this.#encodeBody(opts.body, headers)
    const raiseErrors = opts.raiseErrors ?? this.options.raiseErrors
    const responseOptions = {
      parse: opts.parse,
      snaky: opts.snaky,
      snakyHashClass: opts.snakyHashClass,
    }
    for (let redirects = 0; ; redirects++) {
      const request: HttpRequest = { method, url: target, headers, body }
      const raw = await this.#send(request)
      const response = new Response(raw, responseOptions)
      const status = raw.status
      if (status >= 200 && status < 300) return response
      if (status >= 300 && status < 400) {
        const refuse = (description: string): Response => {
          const error = new OAuth2Error(response, { code: 'redirect_not_followed', description })
          if (raiseErrors) throw error
          response.error = error
          return response
        }
        if (endpoint !== undefined) {
          return refuse(
            `the ${endpoint.name} answered ${String(status)}${describeLocation(raw.headers.location, target)}; ` +
              `requests that carry client credentials, grants or tokens are never redirected: ` +
              `set ${endpoint.option} to the endpoint's final URL`,
          )
        }
        if (!REDIRECTS.has(status) || redirects >= this.options.maxRedirects) return response
        const location = raw.headers.location
        if (location === undefined || location === '') {
          throw new OAuth2Error(response, {
            code: 'missing_location',
            message: `Got ${String(status)} status code, but no Location header was present`,
          })
        }
        const current = new URL(target)
        const next = resolveLocation(location, current)
        if (next === undefined) {
          throw new OAuth2Error(response, {
            code: 'missing_location',
            message: `Got ${String(status)} status code, but the Location header is not a valid URL`,
          })
        }
        if (next.protocol !== 'http:' && next.protocol !== 'https:') {
          return refuse(`${String(status)} to a ${next.protocol} URL: only http(s) is followed`)
        }
        if (current.protocol === 'https:' && next.protocol === 'http:') {
          return refuse(
            `${String(status)} from ${current.origin} to ${next.origin} would leave https: ` +
              `never followed`,
          )
        }
        if (status === 303) {
          method = 'GET'
          body = undefined
          headers = { ...headers }
          delete headers['content-type']
          delete headers['content-length']
        }
        if (next.origin !== current.origin) {
          if (body !== undefined) {
            return refuse(
              `${String(status)} to ${next.origin} would send the request body to another ` +
                `origin: not followed (send the request there yourself if you trust it)`,
            )
          }
          // Nothing configured or given travels to another origin: credentials, cookies,
          // connectionOpts.headers, opts.headers. Middleware runs again for the new request.
          headers = {}
        }
        target = next.href
        continue
      }
      if (status >= 400 && status < 600) {
        const error = new OAuth2Error(response)
        if (raiseErrors) throw error
        response.error = error
        return response
      }
      throw new OAuth2Error(response, {
        code: 'unhandled_status',
        message: `Unhandled status code value of ${String(status)}`,
      })
    }
  }

  #encodeBody(
    body: RequestOptions['body'],
    headers: Record<string, string>,
  ): string | Uint8Array | undefined {
    if (body === undefined || typeof body === 'string' || body instanceof Uint8Array) return body
    if (!isRecord(body)) throw invalidType('opts.body', 'a string, bytes or an object', body)
    const type = headers['content-type']
    if (type === undefined ? this.#encoding === 'json' : /[/+]json\b/i.test(type)) {
      headers['content-type'] ??= 'application/json'
      return JSON.stringify(body)
    }
    headers['content-type'] ??= 'application/x-www-form-urlencoded'
    return encodeParams(body, 'body')
  }

  /**
   * Sends client-authenticated parameters to an endpoint per the token method.
   *
   * @internal
   */
  async #endpointRequest(
    url: string,
    params: Readonly<Record<string, unknown>>,
    defaultMethod: TokenMethod,
    endpoint: Endpoint,
  ) {
    const wire: Record<string, unknown> = {}
    for (const key of Object.keys(params))
      if (!RESERVED_TOKEN_KEYS.has(key)) wire[key] = params[key]
    const headers: Record<string, string> = {}
    lowerHeaders('params.headers', params.headers, headers)
    const tokenMethod = params.tokenMethod ?? defaultMethod
    assertOneOf('params.tokenMethod', tokenMethod, TOKEN_METHODS)
    const pending = this.#authenticator.apply(wire, headers, this.tokenUrl())
    if (pending !== undefined) await pending
    const common = {
      headers,
      snaky: params.snaky as boolean | undefined,
      snakyHashClass: params.snakyHashClass as typeof SnakyHash | undefined,
      parse: params.parse as ParseOption | undefined,
      raiseErrors: this.options.raiseErrors,
    }
    if (tokenMethod === 'post')
      return this.#request('post', url, { ...common, body: wire }, endpoint)
    const verb = tokenMethod === 'get' ? 'get' : 'post'
    return this.#request(verb, url, { ...common, params: wire }, endpoint)
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
  async requestToken(
    params: TokenParams,
    accessTokenOpts: AccessTokenOptions = {},
  ): Promise<{ response: Response; token: AccessToken | undefined }> {
    if (!isRecord(params)) throw invalidType('params', 'an object', params)
    if (!isRecord(accessTokenOpts))
      throw invalidType('accessTokenOpts', 'an object', accessTokenOpts)
    const raiseErrors = this.options.raiseErrors
    const response = await this.#endpointRequest(
      this.tokenUrl(),
      params,
      this.options.tokenMethod,
      TOKEN_ENDPOINT,
    )
    let data: unknown
    try {
      data = response.parsed
    } catch (error) {
      if (raiseErrors) throw invalidTokenResponse(response, error)
      return { response, token: undefined }
    }
    if (!isRecord(data) || Object.keys(data).length === 0) {
      if (raiseErrors) throw invalidTokenResponse(response)
      return { response, token: undefined }
    }
    const fields = { ...data, ...accessTokenOpts }
    if (typeof params.tokenName === 'string') fields.tokenName ??= params.tokenName
    const token = this.options.accessTokenClass.fromHash(this, fields)
    token.response = response
    return { response, token }
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
    return this.#tokenOperation(this.revokeUrl(), token, tokenTypeHint, params, REVOCATION_ENDPOINT)
  }

  /** Sends `token` (and its hint) to a client-authenticated endpoint (RFC 7009, RFC 7662). */
  async #tokenOperation(
    url: string,
    token: string,
    tokenTypeHint: string | undefined,
    params: TokenParams,
    endpoint: Endpoint,
  ): Promise<Response> {
    assertString('token', token)
    if (tokenTypeHint !== undefined) assertString('tokenTypeHint', tokenTypeHint)
    assertRecord('params', params)
    const hint = tokenTypeHint === undefined ? {} : { token_type_hint: tokenTypeHint }
    return this.#endpointRequest(url, { ...params, token, ...hint }, 'post', endpoint)
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
    const url = resolveUrl(this.#site, this.options.introspectUrl, 'options.introspectUrl').href
    return this.#tokenOperation(url, token, tokenTypeHint, params, INTROSPECTION_ENDPOINT)
  }

  /**
   * Verifies an ID token (OpenID Connect Core §3.1.3.7): `alg` is one of the provider's
   * `id_token_signing_alg_values_supported` (RS256 when the metadata has none; never `none`);
   * signature with the provider's JWKS (fetched from `jwks_uri`, cached, refetched on an unknown
   * `kid`) or, for HS*, the client secret; `iss` equals the metadata's issuer, which must be https
   * (http only on loopback hosts), as must `jwks_uri`; `aud` contains the client id; `azp`
   * (required with several audiences) equals it; `exp` and `iat` present and valid; `nonce` equals
   * `options.nonce`, and a token carrying a `nonce` is refused without one; `at_hash` and `c_hash`,
   * when present, match `options.accessToken` and `options.code` (§3.1.3.6, §3.3.2.11);
   * `auth_time` with `maxAge`. Needs `metadata` (from {@link Client.discover}).
   *
   * @param idToken The compact JWS.
   * @param options `nonce`, `maxAge` (seconds), `clockTolerance` (seconds), `accessToken`, `code`.
   * @returns The claims.
   * @throws {OAuth2Error} `invalid_id_token` on any failed check; `invalid_metadata` without
   *   metadata, or with an insecure issuer or `jwks_uri`, or malformed algorithms.
   * @throws {TypeError} `ERR_INVALID_ARG_TYPE` for bad options.
   * @see https://openid.net/specs/openid-connect-core-1_0.html#IDTokenValidation
   */
  async verifyIdToken(idToken: string, options: VerifyIdTokenOptions = {}): Promise<IdTokenClaims> {
    assertString('idToken', idToken)
    assertRecord('options', options)
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
   * @param options `expectedSubject`: the `sub` of the ID token, which the response must match.
   * @returns The claims (a SnakyHash).
   * @throws {OAuth2Error} The server's error; `invalid_userinfo` when the body is not a JSON
   *   object or `sub` differs.
   */
  async userinfo(
    token: AccessToken | string,
    options: { expectedSubject?: string } = {},
  ): Promise<Record<string, unknown>> {
    const url = this.options.userinfoUrl ?? this.options.metadata?.userinfo_endpoint
    if (url === undefined) {
      throw libraryError(
        'invalid_metadata',
        'no UserInfo endpoint: use Client.discover() or options.userinfoUrl',
      )
    }
    let response: Response
    if (token instanceof AccessToken) response = await token.get(url, { raiseErrors: true })
    else {
      assertString('token', token)
      response = await this.request('get', url, {
        headers: { authorization: `Bearer ${token}` },
        raiseErrors: true,
      })
    }
    let claims: unknown
    try {
      claims = response.parsed
    } catch (error) {
      throw new OAuth2Error(response, {
        code: 'invalid_userinfo',
        description: 'not JSON',
        cause: error,
      })
    }
    if (!isRecord(claims))
      throw new OAuth2Error(response, {
        code: 'invalid_userinfo',
        description: 'not a JSON object',
      })
    if (options.expectedSubject !== undefined && claims.sub !== options.expectedSubject) {
      throw new OAuth2Error(response, {
        code: 'invalid_userinfo',
        description: 'sub does not match the ID token',
      })
    }
    return claims
  }

  /** Releases the connection pool the client created (only when `tls` or `proxy` is set). */
  async close(): Promise<void> {
    await this.#close()
  }

  /** The client without secrets, for `JSON.stringify`. */
  toJSON(): Record<string, unknown> {
    const label = this.config.filteredLabel
    const { connectionOpts, ...rest } = this.options
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
