import type { Client } from '../client.js'
import { authorizeUrlFor, type AuthorizeParams } from './auth-code.js'

/**
 * The Implicit grant (RFC 6749 §4.2); reach it as `client.implicit`. Omitted from OAuth 2.1: kept
 * for 2.0 compatibility. The token comes back in the callback's fragment: read it with
 * `AccessToken.fromKvform(client, fragment)`.
 *
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-4.2
 */
export class Implicit {
  readonly #client: Client<boolean>

  /** @param client The client. */
  constructor(client: Client<boolean>) {
    this.#client = client
  }

  /**
   * The URL to send the user's browser to, with `response_type=token`, `client_id`, the client's
   * `redirect_uri` and `params` (which win).
   *
   * @throws {TypeError} `ERR_INVALID_ARG_VALUE` when `params` holds `client_secret`.
   */
  authorizeUrl(params: AuthorizeParams = {}): string {
    return authorizeUrlFor(this.#client, 'token', params)
  }
}
