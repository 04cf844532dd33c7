import type { AccessTokenOptions } from '../access-token.js'
import { assertRecord, assertString, invalidValue } from '../args.js'
import type { Client } from '../client.js'
import type { TokenParams, TokenResult } from '../token-endpoint.js'

/** Parameters of an authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3, OIDC Core §3.1.2.1). */
export interface AuthorizeParams {
  readonly redirect_uri?: string
  readonly scope?: string
  readonly state?: string
  readonly code_challenge?: string
  readonly code_challenge_method?: 'S256' | 'plain' | (string & {})
  /** OpenID Connect replay protection; check it with `verifyIdToken(…, { nonce })`. */
  readonly nonce?: string
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

/**
 * The Authorization Code grant (RFC 6749 §4.1), with PKCE (RFC 7636); reach it as
 * `client.authCode`.
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
   * @throws {TypeError} `ERR_INVALID_ARG_VALUE` when `params` holds `client_secret` (it must never
   *   reach a browser), or when the client has `requirePkce` and `code_challenge` or
   *   `code_challenge_method` is missing.
   */
  authorizeUrl(params: AuthorizeParams = {}): string {
    const requirePkce = this.#client.options.requirePkce
    return authorizeUrlFor(this.#client, 'code', params, (p) => {
      if (!requirePkce) return
      if (typeof p.code_challenge !== 'string' || p.code_challenge === '') {
        throw invalidValue('params.code_challenge', 'is required (requirePkce): use pkce()')
      }
      if (p.code_challenge_method !== 'S256') {
        throw invalidValue('params.code_challenge_method', "must be 'S256' (requirePkce)")
      }
    })
  }

  /**
   * Exchanges an authorization code for a token (RFC 6749 §4.1.3): sends `grant_type`, `code`,
   * the client's `redirect_uri` and `params` (which win).
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
    assertString('code', code)
    assertRecord('params', params)
    if (this.#client.options.requirePkce && typeof params.code_verifier !== 'string') {
      throw invalidValue('params.code_verifier', 'is required (requirePkce)')
    }
    return this.#client.getToken(
      {
        grant_type: 'authorization_code',
        code,
        ...this.#client.redirectionParams(),
        ...params,
      },
      accessTokenOpts,
    )
  }
}
