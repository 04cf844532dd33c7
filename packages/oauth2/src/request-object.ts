/**
 * JWT-secured authorization requests (JAR, RFC 9101): the authorization request's parameters
 * signed as a request object with the client's `privateKey`.
 *
 * @module
 */
import { invalidValue } from './args.js'
import { importSigningKey, signJwt, type ImportedKey, type SigningOptions } from './jwt.js'
import type { Random } from './random.js'

/** The `typ` of a request object (RFC 9101 §10.8). */
export const REQUEST_OBJECT_TYPE = 'oauth-authz-req+jwt'
/** Lifetime of a request object, seconds (`exp` − `nbf`; FAPI 2.0 allows at most 60 minutes). */
const REQUEST_OBJECT_LIFETIME = 300

/**
 * Signs authorization requests as request objects with one key (imported once).
 *
 * @internal
 */
export class RequestObjectSigner {
  readonly #clientId: string
  readonly #options: SigningOptions | undefined
  readonly #now: () => number
  readonly #random: Random
  #key: Promise<ImportedKey> | undefined

  /**
   * @param clientId `iss` of the request objects.
   * @param options The client's `privateKey` option.
   * @param now Epoch ms.
   * @param random For `jti`.
   */
  constructor(
    clientId: string,
    options: SigningOptions | undefined,
    now: () => number,
    random: Random,
  ) {
    this.#clientId = clientId
    this.#options = options
    this.#now = now
    this.#random = random
  }

  /**
   * The request object of `params` (RFC 9101 §4): every authorization request parameter as a
   * claim, plus `iss` (the client id), `aud` (the authorization server's issuer identifier),
   * `iat`, `nbf`, `exp` (5 minutes later) and `jti`; header `typ` `oauth-authz-req+jwt`.
   *
   * @throws {TypeError} `ERR_INVALID_ARG_VALUE` naming `options.privateKey` when the client has no
   *   key, or jose cannot sign with it.
   */
  async sign(params: Readonly<Record<string, unknown>>, audience: string): Promise<string> {
    const options = this.#options
    if (options === undefined) {
      throw invalidValue(
        'options.privateKey',
        'is required to sign request objects (RFC 9101): the client has no private key',
      )
    }
    this.#key ??= importSigningKey('options.privateKey', options)
    const key = await this.#key
    const now = Math.floor(this.#now() / 1000)
    return signJwt(
      'options.privateKey',
      {
        ...params,
        iss: this.#clientId,
        aud: audience,
        iat: now,
        nbf: now,
        exp: now + REQUEST_OBJECT_LIFETIME,
        jti: this.#random.uuid(),
      },
      options,
      key,
      REQUEST_OBJECT_TYPE,
    )
  }
}
