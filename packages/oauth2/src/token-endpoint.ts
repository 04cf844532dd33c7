import type { AccessToken, AccessTokenOptions } from './access-token.js'
import { assertOneOf, assertRecord, assertString, invalidType, isRecord } from './args.js'
import type { Authenticator } from './authenticator.js'
import type { Client } from './client.js'
import { TOKEN_METHODS, type TokenMethod } from './client-options.js'
import type { DPoP } from './dpop.js'
import { invalidTokenResponse, OAuth2Error } from './error.js'
import { lowerHeaders, type Endpoint, type Requester } from './requester.js'
import type { ParseOption, Response } from './response.js'
import type { SnakyHash } from './snaky-hash.js'
import { resolveUrl } from './url.js'

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

const RESERVED_TOKEN_KEYS = new Set([
  'headers',
  'snaky',
  'snakyHashClass',
  'parse',
  'tokenMethod',
  'tokenName',
])
const TOKEN_ENDPOINT: Endpoint = { name: 'token endpoint', option: 'tokenUrl' }
const REVOCATION_ENDPOINT: Endpoint = { name: 'revocation endpoint', option: 'revokeUrl' }
const INTROSPECTION_ENDPOINT: Endpoint = { name: 'introspection endpoint', option: 'introspectUrl' }
const PAR_ENDPOINT: Endpoint = {
  name: 'pushed authorization request endpoint',
  option: 'pushedAuthorizationRequestUrl',
}
const DEVICE_ENDPOINT: Endpoint = {
  name: 'device authorization endpoint',
  option: 'deviceAuthorizationUrl',
}

/**
 * A client's requests to its token endpoint and the others that take the same client
 * authentication: revocation (RFC 7009), introspection (RFC 7662), pushed authorization requests
 * (RFC 9126) and device authorization (RFC 8628). Reserved keys kept off the wire, client
 * authentication per `authScheme`, parameters per `tokenMethod`, a DPoP proof on token and pushed
 * authorization requests when the client has DPoP, no redirect followed; and the token built from
 * a token response.
 *
 * @internal
 */
export class TokenEndpoint {
  readonly #client: Client<boolean>
  readonly #requester: Requester
  readonly #authenticator: Authenticator
  readonly #dpop: DPoP | undefined

  /**
   * @param client The client: its URLs, options and the class of its tokens.
   * @param requester Sends the requests.
   * @param authenticator Adds the client authentication.
   * @param dpop The client's DPoP key, if it has one.
   */
  constructor(
    client: Client<boolean>,
    requester: Requester,
    authenticator: Authenticator,
    dpop: DPoP | undefined,
  ) {
    this.#client = client
    this.#requester = requester
    this.#authenticator = authenticator
    this.#dpop = dpop
  }

  /**
   * Sends client-authenticated parameters to an endpoint per the token method.
   *
   * @param options `raiseErrors` (default: the client's), `dpop`: add a DPoP proof.
   */
  async #request(
    url: string,
    params: Readonly<Record<string, unknown>>,
    defaultMethod: TokenMethod,
    endpoint: Endpoint,
    options: { raiseErrors?: boolean; dpop?: boolean } = {},
  ) {
    const wire: Record<string, unknown> = {}
    for (const key of Object.keys(params))
      if (!RESERVED_TOKEN_KEYS.has(key)) wire[key] = params[key]
    const headers: Record<string, string> = {}
    lowerHeaders('params.headers', params.headers, headers)
    const tokenMethod = params.tokenMethod ?? defaultMethod
    assertOneOf('params.tokenMethod', tokenMethod, TOKEN_METHODS)
    const pending = this.#authenticator.apply(wire, headers, this.#client.tokenUrl())
    if (pending !== undefined) await pending
    const common = {
      headers,
      snaky: params.snaky as boolean | undefined,
      snakyHashClass: params.snakyHashClass as typeof SnakyHash | undefined,
      parse: params.parse as ParseOption | undefined,
      raiseErrors: options.raiseErrors ?? this.#client.options.raiseErrors,
    }
    const signer = options.dpop === true ? this.#dpop?.signer() : undefined
    if (tokenMethod === 'post')
      return this.#requester.send('post', url, { ...common, body: wire }, endpoint, signer)
    const verb = tokenMethod === 'get' ? 'get' : 'post'
    return this.#requester.send(verb, url, { ...common, params: wire }, endpoint, signer)
  }

  /**
   * `Client#getToken`, also handing back the response when there is no token (for
   * `AccessToken#refresh`).
   */
  async requestToken(
    params: TokenParams,
    accessTokenOpts: AccessTokenOptions = {},
  ): Promise<{ response: Response; token: AccessToken | undefined }> {
    if (!isRecord(params)) throw invalidType('params', 'an object', params)
    if (!isRecord(accessTokenOpts))
      throw invalidType('accessTokenOpts', 'an object', accessTokenOpts)
    const client = this.#client
    const raiseErrors = client.options.raiseErrors
    const response = await this.#request(
      client.tokenUrl(),
      params,
      client.options.tokenMethod,
      TOKEN_ENDPOINT,
      { dpop: true },
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
    // A 200 that carries an error and no token (GitHub's bad_verification_code, Slack's
    // {"ok":false,"error":…}) is that error, as the gem raises it.
    const tokenName = typeof params.tokenName === 'string' ? params.tokenName : 'access_token'
    if (raiseErrors && typeof data.error === 'string' && data[tokenName] === undefined) {
      throw new OAuth2Error(response)
    }
    const fields = { ...data, ...accessTokenOpts }
    if (typeof params.tokenName === 'string') fields.tokenName ??= params.tokenName
    const token = client.options.accessTokenClass.fromHash(client, fields)
    token.response = response
    return { response, token }
  }

  /**
   * Pushes an authorization request to `url` (RFC 9126 §2.1), with a DPoP proof when the client
   * has DPoP (RFC 9449 §10.1). Error responses always throw: there is no URL to return.
   */
  push(url: string, params: Readonly<Record<string, unknown>>): Promise<Response> {
    return this.#request(url, params, 'post', PAR_ENDPOINT, { raiseErrors: true, dpop: true })
  }

  /**
   * Sends a device authorization request to `url` (RFC 8628 §3.1). Error responses always throw:
   * there is nothing to poll.
   */
  deviceAuthorization(url: string, params: Readonly<Record<string, unknown>>): Promise<Response> {
    return this.#request(url, params, 'post', DEVICE_ENDPOINT, { raiseErrors: true })
  }

  /** Revokes `token` at the client's `revokeUrl` (RFC 7009 §2.1). */
  revoke(token: string, tokenTypeHint: string | undefined, params: TokenParams): Promise<Response> {
    return this.#operation(
      this.#client.revokeUrl(),
      token,
      tokenTypeHint,
      params,
      REVOCATION_ENDPOINT,
    )
  }

  /** Introspects `token` at the client's `introspectUrl` (RFC 7662 §2.1). */
  introspect(
    token: string,
    tokenTypeHint: string | undefined,
    params: TokenParams,
  ): Promise<Response> {
    const client = this.#client
    const url = resolveUrl(client.site, client.options.introspectUrl, 'options.introspectUrl').href
    return this.#operation(url, token, tokenTypeHint, params, INTROSPECTION_ENDPOINT)
  }

  /** Sends `token` (and its hint) to a client-authenticated endpoint (RFC 7009, RFC 7662). */
  async #operation(
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
    return this.#request(url, { ...params, token, ...hint }, 'post', endpoint)
  }
}
