import { base64url } from 'jose'
import { invalidValue } from './args.js'
import { importSigningKey, signJwt, type SigningOptions } from './jwt.js'
import type { Random } from './random.js'
import { formUrlEncode } from './url.js'

/**
 * How the client authenticates to the token endpoint and the other client-authenticated
 * endpoints (OpenID Connect Core §9 names in brackets):
 *
 * - `'basic_auth'` (`client_secret_basic`, RFC 6749 §2.3.1): HTTP Basic with id and secret;
 * - `'request_body'` (`client_secret_post`): `client_id` and `client_secret` in the body;
 * - `'client_secret_jwt'` (RFC 7523 §2.2): an HS256 assertion signed with the client secret;
 * - `'private_key_jwt'` (RFC 7523 §2.2): an assertion signed with the client's `privateKey`;
 * - `'tls_client_auth'` (RFC 8705 §2): `client_id` in the body, the TLS certificate authenticates;
 * - `'none'` (a public client, RFC 6749 §2.1): only `client_id` in the body; PKCE is then
 *   required (OAuth 2.1 §7.5.1, `requirePkce`).
 */
export type AuthScheme =
  | 'basic_auth'
  | 'request_body'
  | 'client_secret_jwt'
  | 'private_key_jwt'
  | 'tls_client_auth'
  | 'none'

/** All {@link AuthScheme} values. @internal */
export const AUTH_SCHEMES: readonly AuthScheme[] = [
  'basic_auth',
  'request_body',
  'client_secret_jwt',
  'private_key_jwt',
  'tls_client_auth',
  'none',
]

/** The JWS algorithm of `client_secret_jwt` assertions (RFC 7518 §3.2: HMAC with SHA-256). */
const CLIENT_SECRET_JWT_ALGORITHM = 'HS256'

/**
 * How `basic_auth` encodes id and secret before Base64: `'form'` applies
 * `application/x-www-form-urlencoded` to each (RFC 6749 §2.3.1, what oidc-provider and most
 * servers expect); `'raw'` sends them as they are (the Ruby gem's behaviour).
 */
export type BasicAuthEncoding = 'form' | 'raw'

/** `client_assertion_type` of RFC 7523 §2.2. */
export const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'

/** Lifetime of a `private_key_jwt` assertion, seconds. */
const ASSERTION_LIFETIME = 60

/** Base64 (RFC 4648 §4, padded) of the UTF-8 bytes of `text`: jose's base64url, standard alphabet. */
function base64(text: string): string {
  const url = base64url.encode(text)
  return url
    .replaceAll('-', '+')
    .replaceAll('_', '/')
    .padEnd(Math.ceil(url.length / 4) * 4, '=')
}

/**
 * Adds client authentication to a token, revocation or introspection request (the gem's
 * `OAuth2::Authenticator`). Holds the secret; never prints it.
 *
 * @internal
 */
export class Authenticator {
  readonly #id: string
  readonly #secret: string | undefined
  readonly #scheme: AuthScheme
  readonly #encoding: BasicAuthEncoding
  readonly #privateKey: SigningOptions | undefined
  readonly #now: () => number
  readonly #random: Random
  #key: ReturnType<typeof importSigningKey> | undefined
  #basic: string | undefined

  constructor(
    id: string,
    secret: string | undefined,
    scheme: AuthScheme,
    options: {
      basicAuthEncoding: BasicAuthEncoding
      privateKey: SigningOptions | undefined
      now: () => number
      random: Random
    },
  ) {
    this.#id = id
    this.#secret = secret
    this.#scheme = scheme
    this.#encoding = options.basicAuthEncoding
    this.#privateKey = options.privateKey
    this.#now = options.now
    this.#random = options.random
  }

  /** The `Authorization` value for HTTP Basic, per the configured encoding. */
  basicAuthHeader(): string {
    if (this.#basic === undefined) {
      const enc = this.#encoding === 'form' ? formUrlEncode : (s: string) => s
      this.#basic = `Basic ${base64(`${enc(this.#id)}:${enc(this.#secret ?? '')}`)}`
    }
    return this.#basic
  }

  /**
   * Adds credentials to `params` and `headers` (both mutated; caller values win). Synchronous
   * except for `private_key_jwt`, which returns a promise (it signs).
   *
   * @param audience The token endpoint URL (`aud` of a `private_key_jwt` assertion).
   */
  apply(
    params: Record<string, unknown>,
    headers: Record<string, string>,
    audience: string,
  ): Promise<void> | undefined {
    switch (this.#scheme) {
      case 'basic_auth':
        if (!('authorization' in headers)) headers.authorization = this.basicAuthHeader()
        return
      case 'request_body':
        params.client_id ??= this.#id
        if (this.#secret !== undefined) params.client_secret ??= this.#secret
        return
      case 'tls_client_auth':
      case 'none':
        params.client_id ??= this.#id
        return
      case 'client_secret_jwt':
      case 'private_key_jwt':
        if (params.client_assertion !== undefined) return
        return this.#assertion(audience).then((assertion) => {
          params.client_assertion_type = CLIENT_ASSERTION_TYPE
          params.client_assertion = assertion
        })
    }
  }

  /** The signing options of the client assertion: the private key, or HS256 over the secret. */
  #signing(): { name: string; options: SigningOptions } {
    if (this.#scheme === 'client_secret_jwt') {
      // The constructor of Client refuses client_secret_jwt without a secret.
      return {
        name: 'clientSecret',
        options: { algorithm: CLIENT_SECRET_JWT_ALGORITHM, key: this.#secret ?? '' },
      }
    }
    const options = this.#privateKey
    if (options === undefined) {
      throw invalidValue(
        'options.privateKey',
        "is required for authScheme 'private_key_jwt' unless params carry client_assertion",
      )
    }
    return { name: 'options.privateKey', options }
  }

  /**
   * Builds the RFC 7523 §2.2 client assertion (`private_key_jwt`, `client_secret_jwt`): iss = sub
   * = client_id, aud, jti, iat, exp.
   */
  async #assertion(audience: string): Promise<string> {
    const { name, options } = this.#signing()
    this.#key ??= importSigningKey(name, options)
    const key = await this.#key
    const now = Math.floor(this.#now() / 1000)
    return signJwt(
      name,
      {
        iss: this.#id,
        sub: this.#id,
        aud: audience,
        jti: this.#random.uuid(),
        iat: now,
        exp: now + ASSERTION_LIFETIME,
      },
      options,
      key,
    )
  }
}
