/**
 * The package's error vocabulary, all of it:
 *
 * - {@link OAuth2Error}, for everything the server or this library reports about an exchange
 *   or a token, with `code` from {@link OAuth2ErrorCode} (callers `switch` on it).
 *   Library errors are built by {@link libraryError} or from a response, never with a free string.
 * - {@link ConnectionError} (`ERR_OAUTH2_CONNECTION`) and {@link TimeoutError}
 *   (`ERR_OAUTH2_TIMEOUT`): the transport failed. Siblings of `OAuth2Error`, as in the gem.
 * - Coded `TypeError`s (`ERR_INVALID_ARG_TYPE`, `ERR_INVALID_ARG_VALUE`) for bad arguments, all
 *   built in `args.ts`; errors of jose or `node:crypto` about a caller's key are wrapped there too.
 *
 * Let through on purpose, as the gem does: the `SyntaxError` of `Response#parsed` and
 * `SnakyHash.load` for invalid JSON, and whatever the caller's own callbacks throw (middleware,
 * parsers, `mode` functions, `fetch`).
 *
 * @module
 */
import { assertKnownKeys, isRecord, optionKeys } from './args.js'
import { Response } from './response.js'

/**
 * Error codes: the RFC 6749 §5.2 / RFC 7009 / RFC 6750 / RFC 8628 / RFC 8693 / RFC 9449 ones a
 * server sends in `error`, and the ones this library sets itself when there is no server error to
 * report. Any other string a server sends is passed through.
 */
export type OAuth2ErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'access_denied'
  | 'unsupported_response_type'
  | 'server_error'
  | 'temporarily_unavailable'
  | 'unsupported_token_type'
  | 'invalid_token'
  | 'insufficient_scope'
  /** RFC 8628 §3.5: the user has not yet approved the device; `poll()` keeps polling. */
  | 'authorization_pending'
  /** RFC 8628 §3.5: poll more slowly; `poll()` adds 5 seconds to the interval. */
  | 'slow_down'
  /**
   * RFC 8628 §3.5: the device code expired. Also set by `poll()` itself when `expires_in` has passed
   * without an answer (no request is sent then).
   */
  | 'expired_token'
  /** RFC 8693 §2.2.2: the requested audience or resource is not acceptable. */
  | 'invalid_target'
  /** RFC 9449 §5: the DPoP proof was refused. */
  | 'invalid_dpop_proof'
  /**
   * RFC 9449 §8, §9: the server wants its nonce in the DPoP proof. Requests are resent once with
   * the nonce it sent; the error reaches the caller when the server refuses the retry as well.
   */
  | 'use_dpop_nonce'
  /** The token response was not a non-empty JSON object or form. */
  | 'invalid_token_response'
  /** A token has neither an access token nor a refresh token (and `raiseErrors` is on). */
  | 'no_token'
  /** `refresh()` was called on a token without a refresh token. */
  | 'no_refresh_token'
  /** `revoke()` was called without the token it should revoke, or with a bad hint. */
  | 'unrevocable_token'
  /** A redirect had no `Location` header, or one that is not a URL. */
  | 'missing_location'
  /**
   * A redirect was not followed: any 3xx of a token, revocation or introspection request (they
   * carry credentials), or a resource request's redirect from `https:` to `http:`, to a scheme
   * other than http(s), or to another origin with a body.
   */
  | 'redirect_not_followed'
  /** The server answered with a status outside 200-599. */
  | 'unhandled_status'
  /**
   * A response body was larger than `connectionOpts.maxResponseBytes` (declared by
   * `Content-Length`, or counted while it streamed); it was not read further.
   */
  | 'response_too_large'
  /** An ID token failed validation (signature, `iss`, `aud`, `azp`, `exp`, `iat`, `nonce`, `auth_time`). */
  | 'invalid_id_token'
  /** Discovery metadata is missing, malformed, or for another issuer. */
  | 'invalid_metadata'
  /** The UserInfo response was not a JSON object, or its `sub` did not match. */
  | 'invalid_userinfo'
  /**
   * A DPoP-bound token (`token_type` `DPoP`, RFC 9449 §5) was used through a client without the
   * `dpop` option: it is never sent as a bearer token.
   */
  | 'dpop_key_required'
  /**
   * `authCode.authorizeUrl()` on a client with `requirePar` (or whose server metadata sets
   * `require_pushed_authorization_requests`): use `authCode.pushAuthorizationRequest()`.
   */
  | 'par_required'
  /** RFC 7591 §3.2.2: a redirection URI of the client metadata was refused. */
  | 'invalid_redirect_uri'
  /** RFC 7591 §3.2.2: a field of the client metadata was refused. */
  | 'invalid_client_metadata'
  /** RFC 7591 §3.2.2: the software statement is invalid. */
  | 'invalid_software_statement'
  /** RFC 7591 §3.2.2: the software statement is not approved for this server. */
  | 'unapproved_software_statement'
  /**
   * The registration response (RFC 7591 §3.2.1) was not a 201 with a JSON object holding
   * `client_id` (and `client_secret_expires_at` with a secret).
   */
  | 'invalid_registration_response'
  /**
   * `authCode.authorizeUrl()` without `requestObject: true` on a client with
   * `requireSignedRequestObject` (or whose server metadata sets `require_signed_request_object`):
   * the request must be a signed request object (RFC 9101 §10.5).
   */
  | 'request_object_required'
  /**
   * Protected resource metadata (RFC 9728) is missing, malformed, for another resource, or names
   * an authorization server that is not https; or `Client.forResource` cannot go on with what the
   * resource and its authorization server advertise.
   */
  | 'invalid_resource_metadata'
  /**
   * A token sharing its refreshes through a `TokenStore` waited `waitTimeoutMs` for another
   * process's refresh, and neither found a new token in the store nor could take the lease.
   */
  | 'token_store_timeout'
  /** The pushed authorization response (RFC 9126 §2.2) lacked `request_uri` or `expires_in`. */
  | 'invalid_par_response'
  /** The device authorization response (RFC 8628 §3.2) lacked or mistyped a required field. */
  | 'invalid_device_authorization_response'
  /**
   * The `state` of an authorization response differs from the one the request sent, is missing,
   * or is present when none was sent (RFC 6749 §10.12, compared in constant time).
   */
  | 'state_mismatch'
  /**
   * The `iss` of an authorization response differs from the issuer the request went to, or is
   * missing while the server's metadata says it sends one (RFC 9207 §2.4: a mix-up attack).
   */
  | 'issuer_mismatch'
  /**
   * An authorization response is unusable: no `code`, a parameter sent twice (RFC 6749 §3.1), an
   * `error` that is not an RFC 6749 error code, tokens in a code flow's response, or a response
   * only in the URL fragment.
   */
  | 'invalid_callback'

/** Fields of an error built without a response (the gem's `OAuth2::Error.new(hash)`). */
export interface OAuth2ErrorFields {
  /** The error code (`error` in RFC 6749 §5.2). */
  readonly error?: string | undefined
  /** A human-readable description (`error_description`). */
  readonly error_description?: string | undefined
  /** A page about the error (`error_uri`). */
  readonly error_uri?: string | undefined
  readonly [field: string]: unknown
}

/** Options of the {@link OAuth2Error} constructor. */
export interface OAuth2ErrorOptions {
  /** Replaces the message built from code, description and body. */
  readonly message?: string
  /** Overrides the code read from the response body. */
  readonly code?: OAuth2ErrorCode
  /** Overrides the description read from the response body. */
  readonly description?: string
  /** The underlying error. */
  readonly cause?: unknown
}

const ERROR_OPTION_KEYS = optionKeys<OAuth2ErrorOptions>({
  message: true,
  code: true,
  description: true,
  cause: true,
})

/**
 * An error reported by the authorization or resource server, or a token that cannot be used.
 *
 * Thrown by `Client#request` (and everything built on it) for responses with status 400-599 when
 * `raiseErrors` is on (the default); with `raiseErrors` off it is set as `response.error` instead.
 * `code` and `description` come from the standard `error` and `error_description` fields of the
 * body (RFC 6749 §5.2). The message is `"<code>: <description>"` followed by a newline and the
 * body, or just the body when the body carries neither (the gem's format).
 *
 * For example, this exchange throws an `OAuth2Error` with `code` `invalid_grant`:
 * ```
 * HTTP/1.1 400 Bad Request
 * Content-Type: application/json
 *
 * {"error":"invalid_grant","error_description":"grant request is invalid"}
 * ```
 *
 * @example
 * ```ts
 * import { OAuth2Error, type Client } from '@gatehouse/oauth2'
 * let client!: Client
 * try {
 *   await client.authCode.getToken('code', { redirect_uri: 'https://app.example/cb' })
 * } catch (error) {
 *   if (error instanceof OAuth2Error && error.code === 'invalid_grant') {
 *     // start the authorization again
 *   }
 * }
 * ```
 */
export class OAuth2Error extends Error {
  /** The `error` field of the body, or a code of this library (see {@link OAuth2ErrorCode}). */
  readonly code: OAuth2ErrorCode | (string & {}) | undefined
  /** The `error_description` field of the body. */
  readonly description: string | undefined
  /** The `error_uri` field of the body (RFC 6749 §5.2, §4.1.2.1): a page about the error. */
  readonly errorUri: string | undefined
  /** The HTTP response, when the error came from one. */
  readonly response: Response | undefined
  /** The response body, or the JSON of the fields the error was built from. */
  readonly body: string

  /**
   * @param source The response (code and description are read from its parsed body) or the error
   *   fields.
   * @param options Overrides and the cause.
   */
  constructor(source: Response | OAuth2ErrorFields, options: OAuth2ErrorOptions = {}) {
    assertKnownKeys('options', options, ERROR_OPTION_KEYS)
    let code: string | undefined
    let description: string | undefined
    let errorUri: string | undefined
    let body: string
    let response: Response | undefined
    if (source instanceof Response) {
      response = source
      body = source.body
      const parsed = safeParsed(source)
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
        const fields = parsed as Record<string, unknown>
        code = asString(fields.error)
        description = asString(fields.error_description)
        errorUri = asString(fields.error_uri)
      }
    } else {
      code = asString(source.error)
      description = asString(source.error_description)
      errorUri = asString(source.error_uri)
      body = JSON.stringify(source)
    }
    code = options.code ?? code
    description = options.description ?? description
    super(options.message ?? errorMessage(code, description, body), { cause: options.cause })
    this.name = 'OAuth2Error'
    this.code = code
    this.description = description
    this.errorUri = errorUri
    this.response = response
    this.body = body
  }
}

function asString(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined
  return typeof value === 'string' ? value : JSON.stringify(value)
}

/** A body that fails to parse still makes an error; only its code and description are lost. */
function safeParsed(response: Response): unknown {
  try {
    return response.parsed
  } catch {
    return undefined
  }
}

function errorMessage(code: string | undefined, description: string | undefined, body: string) {
  if (code === undefined && description === undefined) return body
  const head = `${code === undefined ? '' : `${code}: `}${description ?? ''}`
  return `${head}\n${body}`
}

/**
 * The connection to the server failed (refused, reset, DNS, TLS handshake); the gem's
 * `OAuth2::ConnectionError`. The message is the transport's; `cause` is the transport's error.
 */
export class ConnectionError extends Error {
  /** Always `ERR_OAUTH2_CONNECTION`. */
  readonly code = 'ERR_OAUTH2_CONNECTION'
  /**
   * @param message The transport's message.
   * @param options `cause`: the transport's error.
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'ConnectionError'
  }
}

/**
 * The server did not answer within `connectionOpts.timeout`; the gem's `OAuth2::TimeoutError`.
 * Not a subclass of {@link ConnectionError} (as in the gem): catch both for "transport failed".
 */
export class TimeoutError extends Error {
  /** Always `ERR_OAUTH2_TIMEOUT`. */
  readonly code = 'ERR_OAUTH2_TIMEOUT'
  /**
   * @param message The transport's message.
   * @param options `cause`: the transport's error.
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'TimeoutError'
  }
}

/**
 * An error of this library's own, with no response to read it from (the gem's
 * `OAuth2::Error.new(error: …, error_description: …)`): `code` must be one of
 * {@link OAuth2ErrorCode}; the body is the JSON of `error` and `error_description`.
 *
 * @internal
 */
export function libraryError(
  code: OAuth2ErrorCode,
  description: string,
  cause?: unknown,
): OAuth2Error {
  return new OAuth2Error({ error: code, error_description: description }, { cause })
}

/**
 * The `invalid_token_response` error: a token response that holds no token (not a non-empty JSON
 * object or form).
 *
 * @internal
 */
export function invalidTokenResponse(response: Response, cause?: unknown): OAuth2Error {
  return new OAuth2Error(response, {
    code: 'invalid_token_response',
    description: 'the token response is not a JSON object or form',
    cause,
  })
}

/**
 * The body of `response` as a JSON object, for a response whose fields the library reads itself
 * (a pushed authorization response, a device authorization response); otherwise `code`, with a
 * description naming the response (`what`), the problem and the RFC section, and the parse error
 * as `cause`. `check` reports a problem with the fields (e.g. `has no request_uri string`).
 *
 * @internal
 */
export function responseObject(
  response: Response,
  code: OAuth2ErrorCode,
  what: string,
  section: string,
  check: (fields: Record<string, unknown>) => string | undefined,
): Record<string, unknown> {
  const invalid = (problem: string, cause?: unknown) =>
    new OAuth2Error(response, { code, description: `the ${what} ${problem} (${section})`, cause })
  let parsed: unknown
  try {
    parsed = response.parsed
  } catch (error) {
    throw invalid('is not JSON', error)
  }
  if (!isRecord(parsed)) throw invalid('is not a JSON object')
  const fields = { ...parsed }
  const problem = check(fields)
  if (problem !== undefined) throw invalid(problem)
  return fields
}
