import {
  base64url,
  decodeProtectedHeader,
  jwtVerify,
  type FlattenedJWSInput,
  type JSONWebKeySet,
  type JWTHeaderParameters,
  type JWTPayload,
} from 'jose'
import { assertKnownKeys, invalidType, isRecord, optionKeys } from '../args.js'
import { libraryError, OAuth2Error } from '../error.js'
import { JwksCache } from './jwks-cache.js'
import { isSecureUrl, type AuthorizationServerMetadata, type OidcHost } from './metadata.js'

/** Options of `Client#verifyIdToken`. */
export interface VerifyIdTokenOptions {
  /**
   * The `nonce` sent with the authorization request; the token must carry the same (OIDC Core
   * §3.1.3.7 step 11). `null` (or, for `verifyIdToken`, absent): the request sent none, and a
   * token that carries a `nonce` is refused (its request had one, which the caller must check).
   * `token.idToken()` on a token from `authCode.getToken` fills it in when its client built the
   * authorization request, and requires it otherwise.
   */
  readonly nonce?: string | null | undefined
  /** Seconds; when given, `auth_time` is required and must be at most this old. */
  readonly maxAge?: number | undefined
  /** Seconds of clock skew tolerated for `exp`, `iat`, `nbf` and `auth_time`. @default 0 */
  readonly clockTolerance?: number | undefined
  /**
   * The access token issued with the ID token, checked against `at_hash` (OIDC Core §3.1.3.6,
   * §3.2.2.9). Required when the token has `at_hash`; `token.idToken()` passes its own.
   */
  readonly accessToken?: string | undefined
  /**
   * The authorization code returned with the ID token (hybrid flow), checked against `c_hash`
   * (OIDC Core §3.3.2.11). Required when the token has `c_hash`.
   */
  readonly code?: string | undefined
  /**
   * The audiences a token may be issued to, instead of the client id: `aud` must contain one of
   * them, and `azp` is not compared with the client. For a server that accepts ID tokens its
   * apps obtained themselves (native sign-in: Google's Android SDK issues tokens whose `aud` is
   * the web client and whose `azp` is the Android app), as Supabase Auth's `id_token` grant
   * does. Not empty.
   */
  readonly audiences?: readonly string[] | undefined
  /**
   * `'when-given'`: `at_hash` is checked only when `accessToken` is given (a native sign-in SDK
   * hands the app an ID token without its access token), as Supabase Auth's `id_token` grant
   * does. @default 'required': a token with `at_hash` needs `accessToken`
   */
  readonly accessTokenHash?: 'required' | 'when-given' | undefined
}

/** Claims of a verified ID token (OpenID Connect Core §2). */
export interface IdTokenClaims extends JWTPayload {
  readonly iss: string
  readonly sub: string
  readonly aud: string | string[]
  /** Expiry, epoch seconds. */
  readonly exp: number
  /** Issued at, epoch seconds. */
  readonly iat: number
  /** Authentication time, epoch seconds. */
  readonly auth_time?: number
  readonly nonce?: string
  readonly azp?: string
}

/** The default of `id_token_signing_alg_values_supported` when the metadata has none (OIDC Discovery §3). */
const DEFAULT_ID_TOKEN_ALGS: readonly string[] = ['RS256']

/** The SHA-2 digest of a JWS alg, for `at_hash`/`c_hash` (OIDC Core §3.1.3.6); EdDSA is Ed25519 in jose. */
function hashOf(alg: string): string | undefined {
  if (alg.endsWith('256') && alg !== 'ES256K') return 'SHA-256'
  if (alg.endsWith('384')) return 'SHA-384'
  if (alg.endsWith('512') || alg === 'EdDSA' || alg === 'Ed25519') return 'SHA-512'
  return undefined
}

/** base64url of the left-most half of the alg's hash of `value` (`at_hash`, `c_hash`). */
async function leftHalfHash(alg: string, value: string): Promise<string> {
  const hash = hashOf(alg)
  if (hash === undefined)
    throw libraryError('invalid_id_token', `at_hash and c_hash cannot be checked for alg ${alg}`)
  const digest = new Uint8Array(await crypto.subtle.digest(hash, new TextEncoder().encode(value)))
  return base64url.encode(digest.subarray(0, digest.length / 2))
}

const VERIFY_OPTION_KEYS = optionKeys<VerifyIdTokenOptions>({
  nonce: true,
  maxAge: true,
  clockTolerance: true,
  accessToken: true,
  code: true,
  audiences: true,
  accessTokenHash: true,
})

/**
 * Checks the options of `Client#verifyIdToken` (before anything else is looked at).
 *
 * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` naming the option.
 * @internal
 */
export function checkVerifyOptions(options: VerifyIdTokenOptions): void {
  assertKnownKeys('options', options, VERIFY_OPTION_KEYS)
  const nonce: unknown = options.nonce
  if (nonce !== undefined && nonce !== null && typeof nonce !== 'string')
    throw invalidType('options.nonce', 'a string, or null for none', nonce)
  for (const key of ['accessToken', 'code'] as const) {
    const value: unknown = options[key]
    if (value !== undefined && typeof value !== 'string')
      throw invalidType(`options.${key}`, 'a string', value)
  }
  const audiences: unknown = options.audiences
  if (
    audiences !== undefined &&
    (!Array.isArray(audiences) ||
      audiences.length === 0 ||
      !audiences.every((a) => typeof a === 'string' && a !== ''))
  )
    throw invalidType('options.audiences', 'a non-empty array of non-empty strings', audiences)
  const hash: unknown = options.accessTokenHash
  if (hash !== undefined && hash !== 'required' && hash !== 'when-given')
    throw invalidType('options.accessTokenHash', "'required' or 'when-given'", hash)
  for (const key of ['maxAge', 'clockTolerance'] as const) {
    const value: unknown = options[key]
    if (value !== undefined && (typeof value !== 'number' || !(value >= 0) || value === Infinity))
      throw invalidType(`options.${key}`, 'a non-negative number of seconds', value)
  }
}

/**
 * Verifies ID tokens of one client (OpenID Connect Core §3.1.3.7): `alg` among the provider's
 * `id_token_signing_alg_values_supported` (RS256 when absent), signature (JWKS from `jwks_uri`, or
 * the client secret for HS*), `iss`, `aud`, `azp`, `exp`, `iat`, `nonce` (also refused when
 * present but not expected), `at_hash`/`c_hash` when present, `auth_time` with `maxAge`. The
 * issuer and `jwks_uri` must be https (http only on loopback hosts).
 *
 * @internal
 */
export class IdTokenVerifier {
  readonly #host: OidcHost
  readonly #metadata: AuthorizationServerMetadata
  readonly #jwks: JwksCache | undefined
  readonly #algorithms: readonly string[]

  /**
   * @throws {OAuth2Error} `invalid_metadata` for an issuer or `jwks_uri` that is not https (or
   *   http on a loopback host), or a malformed `id_token_signing_alg_values_supported`.
   */
  constructor(host: OidcHost, metadata: AuthorizationServerMetadata) {
    this.#host = host
    this.#metadata = metadata
    if (!isSecureUrl(metadata.issuer)) {
      throw libraryError(
        'invalid_metadata',
        `issuer '${metadata.issuer}' must be an https URL (http only on a loopback host)`,
      )
    }
    const advertised: unknown = metadata.id_token_signing_alg_values_supported
    if (
      advertised !== undefined &&
      (!Array.isArray(advertised) || !advertised.every((a) => typeof a === 'string'))
    ) {
      throw libraryError(
        'invalid_metadata',
        'id_token_signing_alg_values_supported is not an array of strings',
      )
    }
    // An unsigned token is never accepted, whatever the provider says.
    this.#algorithms = (advertised ?? DEFAULT_ID_TOKEN_ALGS).filter((a) => a !== 'none')
    if (this.#algorithms.length === 0) {
      throw libraryError(
        'invalid_metadata',
        'id_token_signing_alg_values_supported lists no signing algorithm',
      )
    }
    const jwksUri = metadata.jwks_uri
    if (jwksUri !== undefined && !isSecureUrl(jwksUri)) {
      throw libraryError(
        'invalid_metadata',
        `jwks_uri '${jwksUri}' must be an https URL (http only on a loopback host)`,
      )
    }
    this.#jwks =
      jwksUri === undefined
        ? undefined
        : new JwksCache(
            async () => {
              const response = await host.request('get', jwksUri, {
                snaky: false,
                raiseErrors: true,
              })
              const jwks = response.parsed
              if (!isRecord(jwks) || !Array.isArray(jwks.keys)) {
                throw libraryError('invalid_metadata', `${jwksUri} is not a JWK Set`)
              }
              return jwks as unknown as JSONWebKeySet
            },
            () => host.clock.now(),
          )
  }

  /** Verifies `idToken`; `options` were checked by {@link checkVerifyOptions}. */
  async verify(idToken: string, options: VerifyIdTokenOptions): Promise<IdTokenClaims> {
    const clientId = this.#host.id
    const tolerance = options.clockTolerance ?? 0
    let alg: string | undefined
    try {
      alg = decodeProtectedHeader(idToken).alg
    } catch (error) {
      throw libraryError('invalid_id_token', 'not a JWS', error)
    }
    if (alg === undefined || !this.#algorithms.includes(alg)) {
      throw libraryError(
        'invalid_id_token',
        `alg ${String(alg)} is not one the provider signs ID tokens with ` +
          `(id_token_signing_alg_values_supported: ${this.#algorithms.join(', ')})`,
      )
    }
    let payload: JWTPayload
    try {
      const common = {
        issuer: this.#metadata.issuer,
        audience: options.audiences === undefined ? clientId : [...options.audiences],
        algorithms: [alg],
        currentDate: new Date(this.#host.clock.now()),
        clockTolerance: tolerance,
        requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat'],
      }
      if (alg.startsWith('HS')) {
        const secret = this.#host.secret
        if (secret === undefined)
          throw libraryError('invalid_id_token', `${alg} ID token but the client has no secret`)
        payload = (await jwtVerify(idToken, new TextEncoder().encode(secret), common)).payload
      } else {
        const jwks = this.#jwks
        if (jwks === undefined)
          throw libraryError('invalid_id_token', 'the server metadata has no jwks_uri')
        payload = (
          await jwtVerify(
            idToken,
            (h: JWTHeaderParameters, t: FlattenedJWSInput) => jwks.getKey(h, t),
            common,
          )
        ).payload
      }
    } catch (error) {
      if (error instanceof OAuth2Error) throw error
      throw libraryError(
        'invalid_id_token',
        error instanceof Error ? error.message : String(error),
        error,
      )
    }
    // jose checks only that iat is a number: a token from the future is refused too.
    const nowSeconds = Math.floor(this.#host.clock.now() / 1000)
    if (typeof payload.iat === 'number' && payload.iat > nowSeconds + tolerance) {
      throw libraryError('invalid_id_token', 'iat is in the future')
    }
    const aud = payload.aud
    if (options.audiences !== undefined) {
      // Issued to one of the server's apps (see `audiences`): who presented it is not the client.
    } else if (Array.isArray(aud) && aud.length > 1 && payload.azp === undefined) {
      throw libraryError(
        'invalid_id_token',
        'azp is required when the ID token has several audiences',
      )
    }
    if (options.audiences === undefined && payload.azp !== undefined && payload.azp !== clientId) {
      throw libraryError(
        'invalid_id_token',
        `azp ${JSON.stringify(payload.azp)} is not this client`,
      )
    }
    const nonce = options.nonce ?? undefined
    if (nonce !== undefined && payload.nonce === undefined) {
      throw libraryError(
        'invalid_id_token',
        'the ID token carries no nonce, but its authorization request sent one: it was issued ' +
          'for another authorization request, or the nonce was removed from this one',
      )
    }
    if (nonce !== undefined && payload.nonce !== nonce) {
      throw libraryError('invalid_id_token', 'nonce mismatch')
    }
    if (nonce === undefined && payload.nonce !== undefined) {
      throw libraryError(
        'invalid_id_token',
        'the ID token carries a nonce, so its authorization request had one: pass it as options.nonce',
      )
    }
    if (options.accessTokenHash !== 'when-given' || options.accessToken !== undefined) {
      await checkHash(payload, 'at_hash', alg, options.accessToken, 'options.accessToken')
    }
    await checkHash(payload, 'c_hash', alg, options.code, 'options.code')
    if (options.maxAge !== undefined) {
      const authTime = payload.auth_time
      if (typeof authTime !== 'number')
        throw libraryError('invalid_id_token', 'auth_time is required with maxAge')
      const now = Math.floor(this.#host.clock.now() / 1000)
      if (authTime + options.maxAge < now - tolerance) {
        throw libraryError(
          'invalid_id_token',
          'auth_time is older than maxAge: the user must sign in again',
        )
      }
    }
    return payload as IdTokenClaims
  }
}

/** Checks `at_hash` or `c_hash` when the token has it (OIDC Core §3.1.3.6, §3.3.2.11). */
async function checkHash(
  payload: JWTPayload,
  claim: 'at_hash' | 'c_hash',
  alg: string,
  value: string | undefined,
  option: string,
): Promise<void> {
  const expected = payload[claim]
  if (expected === undefined) return
  if (typeof expected !== 'string')
    throw libraryError('invalid_id_token', `${claim} is not a string`)
  if (value === undefined) {
    throw libraryError(
      'invalid_id_token',
      `the ID token has ${claim}: pass the value it covers as ${option}`,
    )
  }
  if ((await leftHalfHash(alg, value)) !== expected) {
    throw libraryError('invalid_id_token', `${claim} does not match ${option}`)
  }
}
