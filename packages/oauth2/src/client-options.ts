import { AccessToken } from './access-token.js'
import {
  assertKnownKeys,
  assertOneOf,
  assertOptionalBoolean,
  assertRecord,
  invalidType,
  invalidValue,
  isRecord,
  optionKeys,
} from './args.js'
import { AUTH_SCHEMES, type AuthScheme, type BasicAuthEncoding } from './authenticator.js'
import type { Clock } from './clock.js'
import type { ConnectionOptions, FetchLike, TlsOptions } from './connection.js'
import type { Logger } from './debug.js'
import { checkDpopOption, type DPoPAlgorithm, type DPoPKeyPair, type DPoPOptions } from './dpop.js'
import { assertSigningAlgorithm, SIGNING_OPTION_KEYS, type SigningOptions } from './jwt.js'
import type { AuthorizationServerMetadata } from './oidc/metadata.js'

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
  /**
   * Pushed authorization request endpoint (RFC 9126 §5, `pushed_authorization_request_endpoint`),
   * relative to `site` or absolute; set by {@link Client.discover}. Needed by
   * `authCode.pushAuthorizationRequest()`.
   */
  readonly pushedAuthorizationRequestUrl?: string | undefined
  /**
   * Device authorization endpoint (RFC 8628 §4, `device_authorization_endpoint`), relative to
   * `site` or absolute; set by {@link Client.discover}. Needed by `deviceCode.start()`.
   */
  readonly deviceAuthorizationUrl?: string | undefined
  /**
   * End session endpoint (OpenID Connect RP-Initiated Logout 1.0 §2.1, `end_session_endpoint`),
   * relative to `site` or absolute; set by {@link Client.discover}. Needed by
   * `client.endSessionUrl()`.
   */
  readonly endSessionUrl?: string | undefined
  /** Redirect URI added to authorization URLs and code exchanges. */
  readonly redirect_uri?: string | undefined
  /** How token requests carry parameters. @default 'post' */
  readonly tokenMethod?: TokenMethod | undefined
  /**
   * Client authentication at the token endpoint (and revocation, introspection, PAR, device
   * authorization): see {@link AuthScheme}. `'client_secret_jwt'` needs the client secret;
   * `'none'` (a public client) takes no secret and turns `requirePkce` on.
   *
   * @default 'basic_auth'
   */
  readonly authScheme?: AuthScheme | undefined
  /**
   * Encoding of id and secret in `basic_auth`: `'form'` (RFC 6749 §2.3.1) or `'raw'` (the gem).
   *
   * @default 'form'
   */
  readonly basicAuthEncoding?: BasicAuthEncoding | undefined
  /** HTTP connection options: `timeout` (ms), `headers`, `proxy`, `tls`, `maxResponseBytes`. */
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
  /**
   * Refuse authorization-code URLs without a S256 `code_challenge` and exchanges without a
   * `code_verifier` (OAuth 2.1 §7.5.1). Always on for public clients (`authScheme: 'none'`).
   *
   * @default false (true with `authScheme: 'none'`)
   */
  readonly requirePkce?: boolean | undefined
  /**
   * Refuse `authCode.authorizeUrl()` (OAuth2Error `par_required`): authorization requests go
   * through `authCode.pushAuthorizationRequest()` only (RFC 9126 §5). {@link Client.discover} turns
   * it on when the server metadata has `require_pushed_authorization_requests: true`.
   *
   * @default false
   */
  readonly requirePar?: boolean | undefined
  /**
   * Refuse authorization requests that are not signed request objects (RFC 9101 §10.5):
   * `authCode.authorizeUrl()` then throws `request_object_required` unless called with
   * `requestObject: true`, and `pushAuthorizationRequest()` signs by itself. {@link Client.discover}
   * turns it on when the server metadata has `require_signed_request_object: true`.
   *
   * @default false
   */
  readonly requireSignedRequestObject?: boolean | undefined
  /**
   * Sender-constrained tokens with DPoP (RFC 9449): `true` for a generated ES256 key pair, or
   * {@link DPoPOptions} (`keyPair`, `algorithm`). Token requests (every grant, refresh included)
   * and pushed authorization requests then carry a DPoP proof; tokens issued with `token_type`
   * `DPoP` are sent with `Authorization: DPoP` and a proof (with `ath`) on every resource request,
   * never as bearer tokens. Server nonces (`use_dpop_nonce`, `DPoP-Nonce`) are kept per server and
   * a refused request is resent once with the new nonce.
   *
   * @see https://www.rfc-editor.org/rfc/rfc9449
   */
  readonly dpop?: true | DPoPOptions | undefined
  /** Metadata of the authorization server (set by {@link Client.discover}); used for OIDC. */
  readonly metadata?: AuthorizationServerMetadata | undefined
  /**
   * Where {@link Client.discover} reads the metadata instead of the issuer's well-known locations
   * (a provider that publishes it elsewhere): https, or http on a loopback host. The document
   * must still name the issuer given to `discover`.
   */
  readonly discoveryUrl?: string | undefined
  /** The class of tokens built by `getToken`. @default AccessToken */
  readonly accessTokenClass?: typeof AccessToken | undefined
  /** Time source for token expiry and assertions (epoch ms). @default Date */
  readonly clock?: Clock | undefined
}

/** Options after defaults; what {@link Client.options} holds. */
export interface ResolvedClientOptions {
  /** The site when the client was created, as a string (see `Client#site` for the current one). */
  readonly site: string | undefined
  /** Authorization endpoint (see {@link ClientOptions.authorizeUrl}). */
  readonly authorizeUrl: string
  /** Token endpoint (see {@link ClientOptions.tokenUrl}). */
  readonly tokenUrl: string
  /** Revocation endpoint (see {@link ClientOptions.revokeUrl}). */
  readonly revokeUrl: string
  /** Introspection endpoint (see {@link ClientOptions.introspectUrl}). */
  readonly introspectUrl: string
  /** UserInfo endpoint, if set (see {@link ClientOptions.userinfoUrl}). */
  readonly userinfoUrl: string | undefined
  /** Pushed authorization request endpoint, if set (see {@link ClientOptions.pushedAuthorizationRequestUrl}). */
  readonly pushedAuthorizationRequestUrl: string | undefined
  /** Device authorization endpoint, if set (see {@link ClientOptions.deviceAuthorizationUrl}). */
  readonly deviceAuthorizationUrl: string | undefined
  /** End session endpoint, if set (see {@link ClientOptions.endSessionUrl}). */
  readonly endSessionUrl: string | undefined
  /** Redirect URI, if set (see {@link ClientOptions.redirect_uri}). */
  readonly redirect_uri: string | undefined
  /** How token requests carry parameters (see {@link ClientOptions.tokenMethod}). */
  readonly tokenMethod: TokenMethod
  /** Client authentication (see {@link ClientOptions.authScheme}). */
  readonly authScheme: AuthScheme
  /** Encoding of `basic_auth` credentials (see {@link ClientOptions.basicAuthEncoding}). */
  readonly basicAuthEncoding: BasicAuthEncoding
  /** HTTP connection options (see {@link ClientOptions.connectionOpts}). */
  readonly connectionOpts: ConnectionOptions
  /** Whether error responses throw (see {@link ClientOptions.raiseErrors}). */
  readonly raiseErrors: boolean
  /** Redirects of resource requests followed (see {@link ClientOptions.maxRedirects}). */
  readonly maxRedirects: number
  /** Whether PKCE is required (see {@link ClientOptions.requirePkce}). */
  readonly requirePkce: boolean
  /** Whether pushed authorization requests are required (see {@link ClientOptions.requirePar}). */
  readonly requirePar: boolean
  /** Whether request objects are required (see {@link ClientOptions.requireSignedRequestObject}). */
  readonly requireSignedRequestObject: boolean
  /**
   * The DPoP key pair (when given) and the proofs' algorithm, if DPoP is on (see
   * {@link ClientOptions.dpop}; a generated key pair is never shown here).
   */
  readonly dpop:
    Readonly<{ keyPair: DPoPKeyPair | undefined; algorithm: DPoPAlgorithm }> | undefined
  /** Authorization server metadata, if known (see {@link ClientOptions.metadata}). */
  readonly metadata: AuthorizationServerMetadata | undefined
  /** Class of the tokens `getToken` builds (see {@link ClientOptions.accessTokenClass}). */
  readonly accessTokenClass: typeof AccessToken
}

/** The options of a client whose `raiseErrors` is the type parameter (for inference). */
export type ClientOptionsFor<RaiseErrors extends boolean> = ClientOptions & {
  readonly raiseErrors?: RaiseErrors | undefined
}

const CLIENT_OPTION_KEYS = optionKeys<ClientOptions>({
  site: true,
  authorizeUrl: true,
  tokenUrl: true,
  revokeUrl: true,
  introspectUrl: true,
  userinfoUrl: true,
  pushedAuthorizationRequestUrl: true,
  deviceAuthorizationUrl: true,
  endSessionUrl: true,
  redirect_uri: true,
  tokenMethod: true,
  authScheme: true,
  basicAuthEncoding: true,
  connectionOpts: true,
  raiseErrors: true,
  maxRedirects: true,
  logger: true,
  fetch: true,
  privateKey: true,
  requirePkce: true,
  requirePar: true,
  requireSignedRequestObject: true,
  dpop: true,
  metadata: true,
  discoveryUrl: true,
  accessTokenClass: true,
  clock: true,
})
const CONNECTION_OPTION_KEYS = optionKeys<ConnectionOptions>({
  timeout: true,
  headers: true,
  proxy: true,
  tls: true,
  maxResponseBytes: true,
})
const TLS_OPTION_KEYS = optionKeys<TlsOptions>({ cert: true, key: true, ca: true })

/** All {@link TokenMethod} values. @internal */
export const TOKEN_METHODS: readonly TokenMethod[] = ['post', 'get', 'post_with_query_string']
const BASIC_ENCODINGS: readonly BasicAuthEncoding[] = ['form', 'raw']

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

/**
 * Checks the options of `new Client` (types and values; the headers of `connectionOpts` are checked
 * when the client lowercases them). A key that is not an option, in `options`, `connectionOpts`,
 * `connectionOpts.tls` or `privateKey` (and `dpop`, checked when resolved), is an error: an option
 * that is not understood is never silently ignored.
 *
 * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` naming the option.
 * @internal
 */
export function checkOptions(options: ClientOptions): void {
  assertRecord('options', options)
  assertKnownKeys('options', options, CLIENT_OPTION_KEYS)
  for (const key of [
    'authorizeUrl',
    'tokenUrl',
    'revokeUrl',
    'introspectUrl',
    'userinfoUrl',
    'pushedAuthorizationRequestUrl',
    'deviceAuthorizationUrl',
    'endSessionUrl',
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
  assertKnownKeys('options.connectionOpts', options.connectionOpts, CONNECTION_OPTION_KEYS)
  assertRecord('options.connectionOpts.tls', options.connectionOpts?.tls)
  assertKnownKeys('options.connectionOpts.tls', options.connectionOpts?.tls, TLS_OPTION_KEYS)
  const timeout = options.connectionOpts?.timeout
  if (timeout !== undefined && (typeof timeout !== 'number' || !(timeout > 0))) {
    throw invalidType(
      'options.connectionOpts.timeout',
      'a positive number of milliseconds',
      timeout,
    )
  }
  const maxResponseBytes = options.connectionOpts?.maxResponseBytes
  if (
    maxResponseBytes !== undefined &&
    !(
      typeof maxResponseBytes === 'number' &&
      (maxResponseBytes === Infinity ||
        (Number.isInteger(maxResponseBytes) && maxResponseBytes > 0))
    )
  ) {
    throw invalidType(
      'options.connectionOpts.maxResponseBytes',
      'a positive integer number of bytes or Infinity',
      maxResponseBytes,
    )
  }
  assertOptionalBoolean('options.raiseErrors', options.raiseErrors)
  assertOptionalBoolean('options.requirePkce', options.requirePkce)
  if (options.authScheme === 'none' && options.requirePkce === false) {
    throw invalidValue(
      'options.requirePkce',
      "cannot be false with authScheme 'none': a public client needs PKCE (OAuth 2.1 §7.5.1)",
    )
  }
  assertOptionalBoolean('options.requirePar', options.requirePar)
  assertOptionalBoolean('options.requireSignedRequestObject', options.requireSignedRequestObject)
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
  const sleep: unknown = (options.clock as { sleep?: unknown } | undefined)?.sleep
  if (sleep !== undefined && typeof sleep !== 'function') {
    throw invalidType('options.clock.sleep', 'a function (ms, signal) => Promise<void>', sleep)
  }
  const { privateKey } = options
  if (privateKey !== undefined) {
    if (!isRecord(privateKey)) throw invalidType('options.privateKey', 'an object', privateKey)
    assertKnownKeys('options.privateKey', privateKey, SIGNING_OPTION_KEYS)
    assertSigningAlgorithm('options.privateKey.algorithm', privateKey.algorithm)
  }
  if (
    options.metadata !== undefined &&
    (!isRecord(options.metadata) || typeof options.metadata.issuer !== 'string')
  ) {
    throw invalidType('options.metadata', 'an object with issuer', options.metadata)
  }
  const algs = options.metadata?.dpop_signing_alg_values_supported
  if (algs !== undefined && !(Array.isArray(algs) && algs.every((a) => typeof a === 'string'))) {
    throw invalidType(
      'options.metadata.dpop_signing_alg_values_supported',
      'an array of strings',
      algs,
    )
  }
}

/**
 * The options after defaults, frozen (what `client.options` holds).
 *
 * @param site The site as a string (the client keeps it apart, as it may change).
 * @internal
 */
export function resolveOptions(
  options: ClientOptions,
  site: string | undefined,
): ResolvedClientOptions {
  return Object.freeze({
    site,
    authorizeUrl: options.authorizeUrl ?? 'oauth/authorize',
    tokenUrl: options.tokenUrl ?? 'oauth/token',
    revokeUrl: options.revokeUrl ?? 'oauth/revoke',
    introspectUrl: options.introspectUrl ?? 'oauth/introspect',
    userinfoUrl: options.userinfoUrl,
    pushedAuthorizationRequestUrl: options.pushedAuthorizationRequestUrl,
    deviceAuthorizationUrl: options.deviceAuthorizationUrl,
    endSessionUrl: options.endSessionUrl,
    redirect_uri: options.redirect_uri,
    tokenMethod: options.tokenMethod ?? 'post',
    authScheme: options.authScheme ?? 'basic_auth',
    basicAuthEncoding: options.basicAuthEncoding ?? 'form',
    connectionOpts: options.connectionOpts ?? {},
    raiseErrors: options.raiseErrors ?? true,
    maxRedirects: options.maxRedirects ?? 5,
    requirePkce: options.requirePkce ?? options.authScheme === 'none',
    requirePar: options.requirePar ?? false,
    requireSignedRequestObject: options.requireSignedRequestObject ?? false,
    dpop:
      options.dpop === undefined
        ? undefined
        : Object.freeze(
            checkDpopOption(options.dpop, options.metadata?.dpop_signing_alg_values_supported),
          ),
    metadata: options.metadata,
    accessTokenClass: options.accessTokenClass ?? AccessToken,
  })
}

/**
 * The options of a client that only reads metadata and registers: the transport's, and `site`.
 *
 * @internal
 */
export function transportOptions(
  options: Pick<ClientOptions, 'fetch' | 'connectionOpts' | 'logger' | 'clock'>,
  site: string,
): ClientOptions {
  const { fetch, connectionOpts, logger, clock } = options
  return { site, fetch, connectionOpts, logger, clock }
}
