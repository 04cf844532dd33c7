import type { JWTPayload } from 'jose'
import type { AccessTokenOptions } from '../access-token.js'
import { assertRecord, invalidType, isRecord } from '../args.js'
import type { Client } from '../client.js'
import type { TokenParams, TokenResult } from '../token-endpoint.js'
import { importSigningKey, signJwt, type SigningOptions } from '../jwt.js'

/** `grant_type` of the JWT bearer grant (RFC 7523 §2.1). */
export const JWT_BEARER_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:jwt-bearer'

/** The claim set of an assertion (RFC 7523 §3); times are epoch seconds. */
export interface AssertionClaims extends JWTPayload {
  readonly iss: string
  readonly aud: string | string[]
  readonly sub: string
  /** Expiry, epoch seconds. */
  readonly exp: number
}

/**
 * The JWT Bearer grant (RFC 7523 §2.1); reach it as `client.assertion`. Signs the claim set with
 * jose and sends it as `assertion`.
 *
 * @see https://www.rfc-editor.org/rfc/rfc7523#section-2.1
 */
export class Assertion<RaiseErrors extends boolean = true> {
  readonly #client: Client<RaiseErrors>

  /** @param client The client. */
  constructor(client: Client<RaiseErrors>) {
    this.#client = client
  }

  /**
   * Signs `claims` and exchanges the assertion for a token.
   *
   * @param claims `iss`, `aud`, `sub`, `exp` (epoch seconds) and any other claims.
   * @param signing `algorithm` (HS*, RS*, PS*, ES*, EdDSA), `key` (PEM, JWK, KeyObject, CryptoKey or
   *   secret bytes) and optional `kid`.
   * @param params `scope`, `headers`, extra parameters.
   * @param accessTokenOpts Options of the token.
   * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` for bad claims or keys.
   * @returns The token; with `raiseErrors: false`, see {@link Client.getToken}.
   * @throws {OAuth2Error} The server's error (with `raiseErrors`, the default).
   */
  async getToken(
    claims: AssertionClaims,
    signing: SigningOptions,
    params: TokenParams = {},
    accessTokenOpts?: AccessTokenOptions,
  ): Promise<TokenResult<RaiseErrors>> {
    if (!isRecord(claims)) throw invalidType('claims', 'an object', claims)
    const exp: unknown = claims.exp
    if (exp !== undefined && typeof exp !== 'number') {
      throw invalidType('claims.exp', 'a number (epoch seconds)', claims.exp)
    }
    assertRecord('params', params)
    const key = await importSigningKey('signing', signing)
    const assertion = await signJwt('signing', claims, signing, key)
    return this.#client.getToken(
      { grant_type: JWT_BEARER_GRANT_TYPE, assertion, ...params },
      accessTokenOpts,
    )
  }
}
