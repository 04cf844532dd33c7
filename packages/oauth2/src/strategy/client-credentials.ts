import type { AccessTokenOptions } from '../access-token.js'
import { assertRecord } from '../args.js'
import type { Client } from '../client.js'
import type { TokenParams, TokenResult } from '../token-endpoint.js'

/**
 * The Client Credentials grant (RFC 6749 §4.4); reach it as `client.clientCredentials`.
 *
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-4.4
 */
export class ClientCredentials<RaiseErrors extends boolean = true> {
  readonly #client: Client<RaiseErrors>

  /** @param client The client. */
  constructor(client: Client<RaiseErrors>) {
    this.#client = client
  }

  /**
   * Gets a token for the client itself. `grant_type` is always `client_credentials`.
   *
   * @param params `scope`, `resource` (RFC 8707), `headers`, extra parameters.
   * @param accessTokenOpts Options of the token.
   * @returns The token; with `raiseErrors: false`, see {@link Client.getToken}.
   * @throws {OAuth2Error} The server's error (with `raiseErrors`, the default).
   */
  async getToken(
    params: TokenParams = {},
    accessTokenOpts?: AccessTokenOptions,
  ): Promise<TokenResult<RaiseErrors>> {
    assertRecord('params', params)
    return this.#client.getToken({ ...params, grant_type: 'client_credentials' }, accessTokenOpts)
  }
}
