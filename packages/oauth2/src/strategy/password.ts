import type { AccessTokenOptions } from '../access-token.js'
import { assertRecord, assertString } from '../args.js'
import type { Client } from '../client.js'
import type { TokenParams, TokenResult } from '../token-endpoint.js'

/**
 * The Resource Owner Password Credentials grant (RFC 6749 §4.3); reach it as `client.password`.
 * Omitted from OAuth 2.1: kept for 2.0 compatibility.
 *
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-4.3
 */
export class Password<RaiseErrors extends boolean = true> {
  readonly #client: Client<RaiseErrors>

  /** @param client The client. */
  constructor(client: Client<RaiseErrors>) {
    this.#client = client
  }

  /**
   * Gets a token for a username and password.
   *
   * @param username The resource owner's username.
   * @param password The resource owner's password.
   * @param params `scope`, `headers`, extra parameters.
   * @param accessTokenOpts Options of the token.
   * @returns The token; with `raiseErrors: false`, see {@link Client.getToken}.
   * @throws {OAuth2Error} The server's error (with `raiseErrors`, the default).
   */
  async getToken(
    username: string,
    password: string,
    params: TokenParams = {},
    accessTokenOpts?: AccessTokenOptions,
  ): Promise<TokenResult<RaiseErrors>> {
    assertString('username', username)
    assertString('password', password)
    assertRecord('params', params)
    return this.#client.getToken(
      { grant_type: 'password', username, password, ...params },
      accessTokenOpts,
    )
  }
}
