import type { AccessToken, AccessTokenOptions } from '../access-token.js'
import { assertOptionalBoolean, assertRecord, assertString, invalidValue } from '../args.js'
import {
  callbackParams,
  checkCallbackChecks,
  validateCallback,
  type CallbackChecks,
  type CallbackInput,
} from '../callback.js'
import type { Client } from '../client.js'
import { invalidTokenResponse, libraryError, responseObject } from '../error.js'
import type { TokenParams, TokenResult } from '../token-endpoint.js'
import { resolveUrl, withQuery } from '../url.js'

/** Parameters of an authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3, OIDC Core §3.1.2.1). */
export interface AuthorizeParams {
  readonly redirect_uri?: string
  readonly scope?: string
  readonly state?: string
  readonly code_challenge?: string
  readonly code_challenge_method?: 'S256' | 'plain' | (string & {})
  /**
   * OpenID Connect replay protection (OIDC Core §3.1.2.1). With a PKCE `code_challenge`, the
   * client remembers it, and `token.idToken()` on the token of the matching
   * `authCode.getToken(code, { code_verifier })` expects it without being told; elsewhere (another
   * process) pass it as `idToken({ nonce })`.
   */
  readonly nonce?: string
  /**
   * Send the request as a signed request object (JAR, RFC 9101): every parameter goes in a JWT
   * signed with the client's `privateKey` (`iss` the client id, `aud` the issuer, 5-minute `exp`,
   * `typ` `oauth-authz-req+jwt`), and the URL carries only `client_id` and `request`. A library
   * option, never sent as such. `authorizeUrl` then returns a promise.
   */
  readonly requestObject?: boolean
  readonly [param: string]: unknown
}

/** Parameters of an authorization code exchange (RFC 6749 §4.1.3, RFC 7636 §4.5). */
export interface AuthCodeTokenParams extends TokenParams {
  readonly redirect_uri?: string
  readonly code_verifier?: string
}

/**
 * An authorization URL for `responseType` with `client_id` and `params` (which win); refuses
 * `client_secret`, which must never reach a browser.
 *
 * @internal
 */
export function authorizeUrlFor(
  client: Client<boolean>,
  responseType: string,
  params: AuthorizeParams,
  check?: (params: AuthorizeParams) => void,
): string {
  assertRecord('params', params)
  if (Object.hasOwn(params, 'client_secret')) {
    throw invalidValue('params.client_secret', 'must not be sent to the authorization endpoint')
  }
  check?.(params)
  return client.authorizeUrl({ response_type: responseType, client_id: client.id, ...params })
}

/** The `requirePkce` checks of an authorization request's parameters. */
function checkPkce(client: Client<boolean>, params: AuthorizeParams): void {
  if (!client.options.requirePkce) return
  if (typeof params.code_challenge !== 'string' || params.code_challenge === '') {
    throw invalidValue('params.code_challenge', 'is required (requirePkce): use pkce()')
  }
  if (params.code_challenge_method !== 'S256') {
    throw invalidValue('params.code_challenge_method', "must be 'S256' (requirePkce)")
  }
}

/**
 * The Authorization Code grant (RFC 6749 §4.1), with PKCE (RFC 7636) and pushed authorization
 * requests (RFC 9126); reach it as `client.authCode`.
 *
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-4.1
 */
export class AuthCode<RaiseErrors extends boolean = true> {
  readonly #client: Client<RaiseErrors>

  /** @param client The client. */
  constructor(client: Client<RaiseErrors>) {
    this.#client = client
  }

  /**
   * The URL to send the user's browser to: the client's authorize endpoint with `response_type=code`,
   * `client_id`, the client's `redirect_uri` (if set) and `params` (which win), sorted by key.
   *
   * With `requestObject: true` (JAR, RFC 9101 §5.1) the parameters are signed as a request object
   * with the client's `privateKey` and the URL is `<authorize endpoint>?client_id=…&request=<jwt>`;
   * signing is asynchronous, so the call then returns a promise. A client with
   * `requireSignedRequestObject` (set by discovery from `require_signed_request_object`) refuses
   * plain URLs.
   *
   * @throws {TypeError} `ERR_INVALID_ARG_VALUE` when `params` holds `client_secret` (it must never
   *   reach a browser), or when the client has `requirePkce` and `code_challenge` or
   *   `code_challenge_method` is missing; with `requestObject`, when the client has no
   *   `privateKey` (the promise rejects).
   * @throws {OAuth2Error} `par_required` when the client has `requirePar` (set by discovery when
   *   the server requires pushed authorization requests): use
   *   {@link AuthCode.pushAuthorizationRequest}; `request_object_required` without
   *   `requestObject: true` on a client with `requireSignedRequestObject`.
   * @see https://www.rfc-editor.org/rfc/rfc6749#section-4.1.1
   * @see https://www.rfc-editor.org/rfc/rfc9101#section-5
   *
   * @example
   * ```ts
   * import { pkce, type Client } from '@gatehouse/oauth2'
   * let client!: Client // with a privateKey
   * const { code_challenge, code_challenge_method } = pkce()
   * const plain = client.authCode.authorizeUrl({ scope: 'openid', state: 's', code_challenge, code_challenge_method })
   * const signed = await client.authCode.authorizeUrl({
   *   scope: 'openid',
   *   state: 's',
   *   code_challenge,
   *   code_challenge_method,
   *   requestObject: true,
   * })
   * ```
   */
  authorizeUrl(params: AuthorizeParams & { readonly requestObject: true }): Promise<string>
  authorizeUrl(params?: AuthorizeParams): string
  authorizeUrl(params: AuthorizeParams = {}): string | Promise<string> {
    if (this.#client.options.requirePar) {
      throw libraryError(
        'par_required',
        'authorization requests must be pushed (requirePar, or the server metadata sets ' +
          'require_pushed_authorization_requests): use ' +
          'await client.authCode.pushAuthorizationRequest(params) instead of authorizeUrl(params)',
      )
    }
    assertRecord('params', params)
    const { requestObject, ...rest } = params
    assertOptionalBoolean('params.requestObject', requestObject)
    if (requestObject === true) return this.#signedUrl(rest)
    if (this.#client.options.requireSignedRequestObject) {
      throw libraryError(
        'request_object_required',
        'authorization requests must be signed request objects (requireSignedRequestObject, or ' +
          'the server metadata sets require_signed_request_object, RFC 9101 §10.5): pass ' +
          'requestObject: true (and await the URL), or push the request',
      )
    }
    const url = authorizeUrlFor(this.#client, 'code', rest, (p) => {
      checkPkce(this.#client, p)
    })
    this.#client.sentNonces.remember(rest)
    return url
  }

  /** The parameters of a code-flow authorization request, checked (`client_secret`, PKCE). */
  #requestParams(params: AuthorizeParams): Record<string, unknown> {
    if (Object.hasOwn(params, 'client_secret')) {
      throw invalidValue('params.client_secret', 'must not be sent to the authorization endpoint')
    }
    checkPkce(this.#client, params)
    const client = this.#client
    return { response_type: 'code', client_id: client.id, ...client.redirectionParams(), ...params }
  }

  /** The authorize endpoint URL of a request object: `client_id` and `request` (RFC 9101 §5.2). */
  async #signedUrl(params: AuthorizeParams): Promise<string> {
    const client = this.#client
    const request = await client.signRequestObject(this.#requestParams(params))
    client.sentNonces.remember(params)
    const endpoint = resolveUrl(client.site, client.options.authorizeUrl, 'options.authorizeUrl')
    return withQuery(endpoint, { client_id: client.id, request })
  }

  /**
   * Pushes the authorization request to the server (RFC 9126 §2) and returns the URL to send the
   * user's browser to: the authorize endpoint with only `client_id` and the `request_uri` the
   * server gave (§4). The parameters travel server to server, with client authentication (per
   * `authScheme`) and, when the client has DPoP, a DPoP proof (RFC 9449 §10.1), so they cannot be
   * read or changed in the browser.
   *
   * The pushed parameters are `response_type=code`, `client_id`, the client's `redirect_uri` and
   * `params` (which win), checked as {@link AuthCode.authorizeUrl} checks them (`requirePkce`).
   * The `request_uri` is valid for the `expires_in` the server chose (often 60 seconds): redirect
   * at once, and push again for a new attempt.
   *
   * With `requestObject: true`, or on a client with `requireSignedRequestObject`, the parameters
   * are pushed as a signed request object (RFC 9126 §3, RFC 9101): `client_id` and `request`.
   *
   * @param params `scope`, `state`, `nonce`, `code_challenge`, `code_challenge_method`,
   *   `redirect_uri`, `headers`, extra parameters.
   * @returns The authorization URL, `<authorize endpoint>?client_id=…&request_uri=…`.
   * @throws {OAuth2Error} The server's error (always, whatever `raiseErrors`: there is no URL to
   *   return); `invalid_par_response` when the response lacks `request_uri` or `expires_in`;
   *   `invalid_metadata` when the client has no `pushedAuthorizationRequestUrl` (use
   *   `Client.discover()` or set it); `redirect_not_followed` for a 3xx.
   * @throws {TypeError} `ERR_INVALID_ARG_VALUE` for `requirePkce` violations and bad parameters.
   * @throws {ConnectionError} When the connection fails.
   * @throws {TimeoutError} When `connectionOpts.timeout` elapses.
   * @see https://www.rfc-editor.org/rfc/rfc9126#section-2
   *
   * @example
   * ```ts
   * import { pkce, type Client } from '@gatehouse/oauth2'
   * let client!: Client
   * const { code_verifier, code_challenge, code_challenge_method } = pkce()
   * const url = await client.authCode.pushAuthorizationRequest({
   *   scope: 'openid',
   *   state: 'xyz',
   *   code_challenge,
   *   code_challenge_method,
   * })
   * // redirect to url; in the callback: client.authCode.getToken(code, { code_verifier })
   * ```
   */
  async pushAuthorizationRequest(params: AuthorizeParams = {}): Promise<string> {
    assertRecord('params', params)
    const { requestObject, headers, ...rest } = params
    assertOptionalBoolean('params.requestObject', requestObject)
    const client = this.#client
    const pushed = this.#requestParams(rest)
    const signed = requestObject === true || client.options.requireSignedRequestObject
    const response = await client.pushAuthorization({
      ...(signed
        ? { client_id: client.id, request: await client.signRequestObject(pushed) }
        : pushed),
      ...(headers === undefined ? {} : { headers }),
    })
    const { request_uri: requestUri } = responseObject(
      response,
      'invalid_par_response',
      'pushed authorization response',
      'RFC 9126 §2.2',
      ({ request_uri: uri, expires_in: expiresIn }) => {
        if (typeof uri !== 'string' || uri === '') return 'has no request_uri string'
        if (typeof expiresIn !== 'number' || !(expiresIn > 0)) {
          return 'has no positive expires_in number'
        }
        return undefined
      },
    )
    client.sentNonces.remember(rest)
    const endpoint = resolveUrl(client.site, client.options.authorizeUrl, 'options.authorizeUrl')
    return withQuery(endpoint, { client_id: client.id, request_uri: requestUri as string })
  }

  /**
   * Exchanges an authorization code for a token (RFC 6749 §4.1.3): sends `grant_type`, `code`,
   * the client's `redirect_uri` and `params` (which win).
   *
   * The token knows which nonce its ID token must carry: when this client built the authorization
   * request (`authorizeUrl` or `pushAuthorizationRequest` with the `code_challenge` of
   * `params.code_verifier`), the `nonce` that request sent, or none if it sent none; otherwise
   * `token.idToken()` requires `options.nonce` (the nonce kept with the state, or `null` when the
   * request sent none), so an ID token whose nonce was stripped is never accepted by default.
   *
   * @param code The `code` of the callback.
   * @param params `redirect_uri`, `code_verifier`, `headers`, extra parameters.
   * @param accessTokenOpts Options of the token (override response fields).
   * @throws {TypeError} `ERR_INVALID_ARG_VALUE` when the client has `requirePkce` and
   *   `code_verifier` is missing.
   * @returns The token; with `raiseErrors: false`, see {@link Client.getToken}.
   * @throws {OAuth2Error} The server's error, or `invalid_token_response` (with `raiseErrors`, the
   *   default).
   */
  async getToken(
    code: string,
    params: AuthCodeTokenParams = {},
    accessTokenOpts?: AccessTokenOptions,
  ): Promise<TokenResult<RaiseErrors>> {
    const { token } = await this.#exchange(code, params, accessTokenOpts)
    return token as TokenResult<RaiseErrors>
  }

  /**
   * Validates the authorization response the browser brought back and exchanges its code for a
   * token: what a callback handler does, in one call (openid-client's `authorizationCodeGrant`,
   * oauth4webapi's `validateAuthResponse`). In order:
   *
   * 1. parameters sent twice are refused (RFC 6749 §3.1, `invalid_callback`);
   * 2. `iss` (RFC 9207 §2.4) must equal the discovered issuer when present, and is required when
   *    the server metadata has `authorization_response_iss_parameter_supported`
   *    (`issuer_mismatch`); a client without metadata cannot check it;
   * 3. `state` must equal `checks.state`, compared in constant time (`state_mismatch`; with
   *    `state: null`, a callback carrying one is refused);
   * 4. an `error` parameter throws an {@link OAuth2Error} whose `code`, `description` and
   *    `errorUri` are the response's `error`, `error_description` (plain text from the browser:
   *    escape it before showing it) and `error_uri`;
   * 5. `code` is required (`invalid_callback`);
   * 6. the code is exchanged (with `checks.codeVerifier` and the `redirect_uri`), as
   *    {@link AuthCode.getToken}; errors always throw, whatever `raiseErrors`;
   * 7. with `checks.nonce`, the token response must carry an ID token whose `nonce` is that one;
   *    it is validated (OpenID Connect Core §3.1.3.7, `invalid_id_token`) before the token is
   *    returned.
   *
   * @param callback The URL the browser was sent back to, or the `URLSearchParams` of a
   *   `response_mode=form_post` body.
   * @param checks `state` (required; `null` when the request sent none), `nonce`, `maxAge`,
   *   `codeVerifier`, `redirectUri`: what the authorization request sent, kept in the user's
   *   session.
   * @param params Extra parameters of the code exchange, and `headers`.
   * @param accessTokenOpts Options of the token.
   * @returns The token.
   * @throws {OAuth2Error} `invalid_callback`, `issuer_mismatch`, `state_mismatch`, the response's
   *   `error`, the token endpoint's error, `invalid_token_response`, `invalid_id_token`.
   * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` for bad arguments
   *   (`checks.state` missing, a callback string that is not a URL, `requirePkce` without
   *   `codeVerifier`).
   * @see https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2
   * @see https://www.rfc-editor.org/rfc/rfc9207#section-2.4
   * @see https://openid.net/specs/oauth-v2-form-post-response-mode-1_0.html
   *
   * @example
   * ```ts
   * import type { Client } from '@gatehouse/oauth2'
   * let client!: Client
   * declare const session: { state: string; nonce: string; codeVerifier: string }
   * declare const requestUrl: string // the callback request's full URL
   * const token = await client.authCode.getTokenFromCallback(requestUrl, session)
   * // response_mode=form_post: the POSTed form body
   * declare const body: string
   * await client.authCode.getTokenFromCallback(new URLSearchParams(body), session)
   * ```
   */
  async getTokenFromCallback(
    callback: CallbackInput,
    checks: CallbackChecks,
    params: AuthCodeTokenParams = {},
    accessTokenOpts?: AccessTokenOptions,
  ): Promise<AccessToken> {
    checkCallbackChecks(checks)
    assertRecord('params', params)
    if (
      this.#client.options.requirePkce &&
      checks.codeVerifier === undefined &&
      params.code_verifier === undefined
    ) {
      throw invalidValue('checks.codeVerifier', 'is required (requirePkce)')
    }
    const { params: response, redirectUri } = callbackParams(callback)
    const metadata = this.#client.options.metadata
    const code = validateCallback(response, checks.state, {
      issuer: metadata?.issuer,
      required: metadata?.authorization_response_iss_parameter_supported === true,
    })
    const redirect = checks.redirectUri ?? this.#client.options.redirect_uri ?? redirectUri
    const { response: tokenResponse, token } = await this.#exchange(
      code,
      {
        ...(redirect === undefined ? {} : { redirect_uri: redirect }),
        ...(checks.codeVerifier === undefined ? {} : { code_verifier: checks.codeVerifier }),
        ...params,
      },
      accessTokenOpts,
    )
    // With raiseErrors: false the exchange hands back what it got; here errors always throw.
    if (token === undefined) throw invalidTokenResponse(tokenResponse)
    const failed = token.response?.error
    if (failed !== undefined) throw failed
    if (checks.nonce !== undefined) {
      await token.idToken({
        nonce: checks.nonce,
        ...(checks.maxAge === undefined ? {} : { maxAge: checks.maxAge }),
      })
    }
    return token
  }

  /** The code exchange of {@link AuthCode.getToken}, with the response. */
  async #exchange(
    code: string,
    params: AuthCodeTokenParams,
    accessTokenOpts: AccessTokenOptions | undefined,
  ) {
    assertString('code', code)
    assertRecord('params', params)
    if (this.#client.options.requirePkce && typeof params.code_verifier !== 'string') {
      throw invalidValue('params.code_verifier', 'is required (requirePkce)')
    }
    const result = await this.#client.requestToken(
      {
        grant_type: 'authorization_code',
        code,
        ...this.#client.redirectionParams(),
        ...params,
      },
      accessTokenOpts,
    )
    // Taken once the server answered: a transport failure leaves the request to retry.
    result.token?.expectNonce(this.#client.sentNonces.take(params.code_verifier))
    return result
  }
}
