/**
 * Validation of an authorization response (the redirect back to the client, RFC 6749 §4.1.2):
 * what `authCode.getTokenFromCallback` checks before it exchanges the code.
 *
 * @module
 */
import { sha256 } from '@noble/hashes/sha2.js'
import { assertKnownKeys, invalidType, invalidValue, isRecord, optionKeys, show } from './args.js'
import { libraryError, OAuth2Error } from './error.js'

/**
 * An authorization response: the URL the browser was sent back to (query response mode), as a
 * string or `URL`, or the parameters themselves as `URLSearchParams` (the form body of a
 * `response_mode=form_post` callback, OAuth 2.0 Form Post Response Mode §2).
 */
export type CallbackInput = string | URL | URLSearchParams

/**
 * What the callback must match, kept from the authorization request (in the user's session).
 */
export interface CallbackChecks {
  /**
   * The `state` the authorization request sent; `null` when it sent none (then a callback that
   * carries one is refused). Compared in constant time.
   */
  readonly state: string | null
  /**
   * The `nonce` the authorization request sent (OpenID Connect): the token response must then
   * carry an ID token with this nonce, which is validated before the token is returned.
   */
  readonly nonce?: string | undefined
  /** `max_age` of the authorization request, in seconds: checked against the ID token's `auth_time`. */
  readonly maxAge?: number | undefined
  /** The PKCE `code_verifier` of the request (RFC 7636 §4.5). */
  readonly codeVerifier?: string | undefined
  /**
   * The `redirect_uri` of the request, sent with the code exchange (RFC 6749 §4.1.3). Default: the
   * client's `redirect_uri`, else the callback URL without query and fragment.
   */
  readonly redirectUri?: string | undefined
}

/** What the issuer check needs from the client's server metadata (RFC 9207 §3). @internal */
export interface IssuerExpectation {
  /** The issuer identifier the authorization request went to; `undefined` when not known. */
  readonly issuer: string | undefined
  /** `authorization_response_iss_parameter_supported`: `iss` must then be present. */
  readonly required: boolean
}

const CHECK_KEYS = optionKeys<CallbackChecks>({
  state: true,
  nonce: true,
  maxAge: true,
  codeVerifier: true,
  redirectUri: true,
})

/** Parameters of an authorization response that must appear at most once (RFC 6749 §3.1). */
const SINGLE = ['code', 'state', 'iss', 'error', 'error_description', 'error_uri'] as const
/** The characters RFC 6749 §4.1.2.1 allows in `error` (and `error_description`). */
const ERROR_CODE = /^[\x20\x21\x23-\x5B\x5D-\x7E]{1,128}$/
/** Longest `error_description` kept; the rest of an attacker's text is cut. */
const MAX_DESCRIPTION = 512

/**
 * Whether two strings are equal, in time that does not depend on where they differ: their SHA-256
 * digests are compared byte for byte without stopping early (RFC 6749 §10.12's `state` must not
 * leak through timing). Runtime-neutral (`node:crypto` is Node's).
 *
 * @internal
 */
export function constantTimeEqual(a: string, b: string): boolean {
  const encoder = new TextEncoder()
  const x = sha256(encoder.encode(a))
  const y = sha256(encoder.encode(b))
  let difference = 0
  for (let i = 0; i < x.length; i++) difference |= (x[i] ?? 0) ^ (y[i] ?? 0)
  return difference === 0
}

/**
 * The parameters of a callback, and the redirect URI it arrived at (a URL without query and
 * fragment), when it is a URL.
 *
 * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` when `input` is none of
 *   {@link CallbackInput}, or a string that is not an absolute URL.
 * @throws {OAuth2Error} `invalid_callback` when the response is only in the URL's fragment.
 * @internal
 */
export function callbackParams(input: CallbackInput): {
  params: URLSearchParams
  redirectUri: string | undefined
} {
  if (input instanceof URLSearchParams) return { params: input, redirectUri: undefined }
  let url: URL
  if (input instanceof URL) url = input
  else if (typeof input === 'string') {
    if (!URL.canParse(input)) {
      throw invalidValue(
        'callback',
        'must be the absolute URL the browser was sent back to, or the URLSearchParams of a ' +
          'form_post body',
      )
    }
    url = new URL(input)
  } else {
    throw invalidType('callback', 'a URL string, a URL or URLSearchParams', input)
  }
  const params = url.searchParams
  if (params.size === 0 && url.hash.length > 1) {
    const fragment = new URLSearchParams(url.hash.slice(1))
    if (fragment.has('code') || fragment.has('error') || fragment.has('state')) {
      throw libraryError(
        'invalid_callback',
        'the authorization response is in the URL fragment (response_mode=fragment), which ' +
          'the server never receives: use the query or form_post response mode',
      )
    }
  }
  return { params, redirectUri: `${url.origin}${url.pathname}` }
}

/** Removes control characters and cuts an attacker-sized text. */
function plainText(value: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what is removed
  const text = value.replace(/[\u0000-\u001f\u007f]/g, ' ')
  return text.length > MAX_DESCRIPTION ? `${text.slice(0, MAX_DESCRIPTION)}…` : text
}

/**
 * Checks an authorization response and returns its `code`. In this order (oauth4webapi's):
 *
 * 1. every parameter of {@link SINGLE} at most once (RFC 6749 §3.1), else `invalid_callback`;
 * 2. `iss` (RFC 9207 §2.4): equal to the issuer when present, required when the metadata says
 *    the server sends it, else `issuer_mismatch`; an `iss` the client cannot check (no metadata)
 *    is let through;
 * 3. `state` equal (constant time) to the expected one, absent when none was sent, else
 *    `state_mismatch`, so that a forged error response is reported as the forgery it is;
 * 4. an `error` becomes an {@link OAuth2Error} with the response's `error` as `code`,
 *    `error_description` (as plain text: control characters removed, cut at 512 characters; it
 *    comes from the browser, never render it as HTML) and `error_uri`; an `error` that is not an
 *    RFC 6749 §4.1.2.1 code is `invalid_callback`;
 * 5. `code` present and non-empty, and no `access_token` or `id_token` (a code flow's response
 *    carries neither), else `invalid_callback`.
 *
 * @throws {OAuth2Error} As above.
 * @internal
 */
export function validateCallback(
  params: URLSearchParams,
  state: string | null,
  issuer: IssuerExpectation,
): string {
  for (const name of SINGLE) {
    if (params.getAll(name).length > 1) {
      throw libraryError(
        'invalid_callback',
        `the authorization response has ${name} more than once (RFC 6749 §3.1)`,
      )
    }
  }
  const iss = params.get('iss')
  if (issuer.issuer !== undefined) {
    if (iss === null && issuer.required) {
      throw libraryError(
        'issuer_mismatch',
        'the authorization response has no iss, but the server metadata says it sends one ' +
          '(authorization_response_iss_parameter_supported, RFC 9207 §2.4)',
      )
    }
    if (iss !== null && iss !== issuer.issuer) {
      throw libraryError(
        'issuer_mismatch',
        `the authorization response comes from issuer ${show(iss.slice(0, 200))}, not ` +
          `'${issuer.issuer}' where the request went (RFC 9207 §2.4)`,
      )
    }
  }
  const received = params.get('state')
  if (state === null) {
    if (received !== null) {
      throw libraryError(
        'state_mismatch',
        'the authorization response has a state, but the request sent none',
      )
    }
  } else if (received === null || !constantTimeEqual(received, state)) {
    throw libraryError(
      'state_mismatch',
      received === null
        ? 'the authorization response has no state (RFC 6749 §4.1.2)'
        : 'the state of the authorization response is not the one the request sent',
    )
  }
  const error = params.get('error')
  if (error !== null) {
    if (!ERROR_CODE.test(error)) {
      throw libraryError(
        'invalid_callback',
        'the authorization response has an error that is not an RFC 6749 §4.1.2.1 error code',
      )
    }
    const description = params.get('error_description')
    const uri = params.get('error_uri')
    throw new OAuth2Error({
      error,
      ...(description === null ? {} : { error_description: plainText(description) }),
      ...(uri === null ? {} : { error_uri: plainText(uri) }),
    })
  }
  for (const token of ['access_token', 'id_token']) {
    if (params.has(token)) {
      throw libraryError(
        'invalid_callback',
        `the authorization response carries ${token}: a code flow's response has only code ` +
          'and state (implicit and hybrid responses are not accepted here)',
      )
    }
  }
  const code = params.get('code')
  if (code === null || code === '') {
    throw libraryError('invalid_callback', 'the authorization response has no code')
  }
  return code
}

/**
 * Checks the options of `getTokenFromCallback`.
 *
 * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` naming the option.
 * @internal
 */
export function checkCallbackChecks(checks: CallbackChecks): void {
  if (!isRecord(checks)) {
    throw invalidType('checks', 'an object with state', checks)
  }
  assertKnownKeys('checks', checks, CHECK_KEYS)
  if (!Object.hasOwn(checks, 'state')) {
    throw invalidValue(
      'checks.state',
      'is required: the state the authorization request sent, or null if it sent none',
    )
  }
  if (checks.state !== null && (typeof checks.state !== 'string' || checks.state === '')) {
    throw invalidType('checks.state', 'a non-empty string or null', checks.state)
  }
  for (const key of ['nonce', 'codeVerifier', 'redirectUri'] as const) {
    const value = checks[key]
    if (value !== undefined && typeof value !== 'string') {
      throw invalidType(`checks.${key}`, 'a string', value)
    }
  }
  const { maxAge } = checks
  if (maxAge !== undefined && (typeof maxAge !== 'number' || !(maxAge >= 0))) {
    throw invalidType('checks.maxAge', 'a non-negative number of seconds', maxAge)
  }
}
