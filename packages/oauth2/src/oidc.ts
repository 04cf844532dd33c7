import {
  base64url,
  createLocalJWKSet,
  decodeProtectedHeader,
  errors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTHeaderParameters,
  type JWTPayload,
  type FlattenedJWSInput,
} from 'jose'
import { invalidType, isRecord, show } from './args.js'
import { libraryError, OAuth2Error } from './error.js'
import type { Response } from './response.js'

/**
 * Authorization server metadata (RFC 8414 §2, OpenID Connect Discovery §3), as returned by
 * `Client.discover`. Field names as on the wire.
 */
export interface AuthorizationServerMetadata {
  readonly issuer: string
  readonly authorization_endpoint?: string
  readonly token_endpoint?: string
  readonly revocation_endpoint?: string
  readonly introspection_endpoint?: string
  readonly userinfo_endpoint?: string
  readonly jwks_uri?: string
  readonly end_session_endpoint?: string
  readonly scopes_supported?: readonly string[]
  readonly code_challenge_methods_supported?: readonly string[]
  readonly token_endpoint_auth_methods_supported?: readonly string[]
  readonly id_token_signing_alg_values_supported?: readonly string[]
  readonly [field: string]: unknown
}

/** Options of `Client#verifyIdToken`. */
export interface VerifyIdTokenOptions {
  /**
   * The `nonce` sent with the authorization request; the token must carry the same. Without it, a
   * token that carries a `nonce` is refused: its authorization request had one, which the caller
   * must check (OIDC Core §3.1.3.7 step 11).
   */
  readonly nonce?: string | undefined
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
}

/** The default of `id_token_signing_alg_values_supported` when the metadata has none (OIDC Discovery §3). */
const DEFAULT_ID_TOKEN_ALGS: readonly string[] = ['RS256']

function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(hostname)
}

/**
 * Whether `url` may identify an issuer or serve its keys: `https:`, or `http:` on a loopback host
 * (`localhost`, `127.0.0.0/8`, `[::1]`) for development and tests.
 *
 * @internal
 */
export function isSecureUrl(url: string): boolean {
  if (!URL.canParse(url)) return false
  const { protocol, hostname } = new URL(url)
  return protocol === 'https:' || (protocol === 'http:' && isLoopbackHost(hostname))
}

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
    throw invalidIdToken(`at_hash and c_hash cannot be checked for alg ${alg}`)
  const digest = new Uint8Array(await crypto.subtle.digest(hash, new TextEncoder().encode(value)))
  return base64url.encode(digest.subarray(0, digest.length / 2))
}

function checkVerifyOptions(options: VerifyIdTokenOptions): void {
  for (const key of ['nonce', 'accessToken', 'code'] as const) {
    const value: unknown = options[key]
    if (value !== undefined && typeof value !== 'string')
      throw invalidType(`options.${key}`, 'a string', value)
  }
  for (const key of ['maxAge', 'clockTolerance'] as const) {
    const value: unknown = options[key]
    if (value !== undefined && (typeof value !== 'number' || !(value >= 0) || value === Infinity))
      throw invalidType(`options.${key}`, 'a non-negative number of seconds', value)
  }
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

/** What the OIDC helpers need from the client. @internal */
export interface OidcHost {
  readonly id: string
  readonly secret: string | undefined
  readonly clock: { now(): number }
  request(verb: 'get', url: string, opts: { snaky: false; raiseErrors: boolean }): Promise<Response>
}

function invalidMetadata(description: string, cause?: unknown): OAuth2Error {
  return libraryError('invalid_metadata', description, cause)
}

function invalidIdToken(description: string, cause?: unknown): OAuth2Error {
  return libraryError('invalid_id_token', description, cause)
}

/**
 * The discovery documents to try, in order: OpenID Connect Discovery §4
 * (`<issuer>/.well-known/openid-configuration`), then RFC 8414 §3.1
 * (`<origin>/.well-known/oauth-authorization-server<path>`).
 *
 * @internal
 */
export function discoveryUrls(issuer: string): string[] {
  const url = new URL(issuer)
  const path = url.pathname.replace(/\/$/, '')
  return [
    `${url.origin}${path}/.well-known/openid-configuration`,
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
  ]
}

/**
 * Fetches and checks the metadata of `issuer`: the document must be a JSON object whose `issuer`
 * equals the given one exactly (OIDC Discovery §4.3, RFC 8414 §3.3).
 *
 * @internal
 */
export async function fetchMetadata(
  host: OidcHost,
  issuer: string,
): Promise<AuthorizationServerMetadata> {
  let last: Response | undefined
  for (const url of discoveryUrls(issuer)) {
    const response = await host.request('get', url, { snaky: false, raiseErrors: false })
    if (response.status !== 200) {
      last = response
      continue
    }
    let parsed: unknown
    try {
      parsed = response.parsed
    } catch (error) {
      throw invalidMetadata(`${url} is not JSON`, error)
    }
    if (!isRecord(parsed)) throw invalidMetadata(`${url} is not a JSON object`)
    if (parsed.issuer !== issuer) {
      throw invalidMetadata(`${url} is for issuer ${show(parsed.issuer)}, not '${issuer}'`)
    }
    for (const key of Object.keys(parsed)) {
      if (key.endsWith('_endpoint') || key === 'jwks_uri') {
        const value = parsed[key]
        if (typeof value !== 'string' || !URL.canParse(value)) {
          throw invalidMetadata(`${key} of ${url} is not a URL`)
        }
      }
    }
    return parsed as AuthorizationServerMetadata
  }
  throw invalidMetadata(`no discovery document for ${issuer} (last status ${String(last?.status)})`)
}

type LocalKeys = ReturnType<typeof createLocalJWKSet>

/**
 * A JWKS fetched from `jwks_uri` and kept for `maxAge` ms; refetched early (at most once per
 * `cooldown` ms) when a token names an unknown key, so key rotation is picked up.
 *
 * @internal
 */
export class JwksCache {
  readonly #load: () => Promise<JSONWebKeySet>
  readonly #now: () => number
  readonly #maxAge: number
  readonly #cooldown: number
  #keys: LocalKeys | undefined
  #fetchedAt = Number.NEGATIVE_INFINITY
  #pending: Promise<LocalKeys> | undefined

  constructor(
    load: () => Promise<JSONWebKeySet>,
    now: () => number,
    maxAge = 600_000,
    cooldown = 30_000,
  ) {
    this.#load = load
    this.#now = now
    this.#maxAge = maxAge
    this.#cooldown = cooldown
  }

  async #refresh(): Promise<LocalKeys> {
    this.#pending ??= this.#load()
      .then((jwks) => {
        const keys = createLocalJWKSet(jwks)
        this.#keys = keys
        this.#fetchedAt = this.#now()
        return keys
      })
      .finally(() => {
        this.#pending = undefined
      })
    return this.#pending
  }

  /** Finds the key for a token's header (jose's `JWTVerifyGetKey`). */
  async getKey(header: JWTHeaderParameters, token: FlattenedJWSInput) {
    let keys = this.#keys
    if (keys === undefined || this.#now() - this.#fetchedAt > this.#maxAge) {
      keys = await this.#refresh()
    }
    try {
      return await keys(header, token)
    } catch (error) {
      if (
        !(error instanceof errors.JWKSNoMatchingKey) ||
        this.#now() - this.#fetchedAt < this.#cooldown
      ) {
        throw error
      }
      return (await this.#refresh())(header, token)
    }
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
      throw invalidMetadata(
        `issuer '${metadata.issuer}' must be an https URL (http only on a loopback host)`,
      )
    }
    const advertised: unknown = metadata.id_token_signing_alg_values_supported
    if (
      advertised !== undefined &&
      (!Array.isArray(advertised) || !advertised.every((a) => typeof a === 'string'))
    ) {
      throw invalidMetadata('id_token_signing_alg_values_supported is not an array of strings')
    }
    // An unsigned token is never accepted, whatever the provider says.
    this.#algorithms = (advertised ?? DEFAULT_ID_TOKEN_ALGS).filter((a) => a !== 'none')
    if (this.#algorithms.length === 0) {
      throw invalidMetadata('id_token_signing_alg_values_supported lists no signing algorithm')
    }
    const jwksUri = metadata.jwks_uri
    if (jwksUri !== undefined && !isSecureUrl(jwksUri)) {
      throw invalidMetadata(
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
                throw invalidMetadata(`${jwksUri} is not a JWK Set`)
              }
              return jwks as unknown as JSONWebKeySet
            },
            () => host.clock.now(),
          )
  }

  async verify(idToken: string, options: VerifyIdTokenOptions): Promise<IdTokenClaims> {
    checkVerifyOptions(options)
    const clientId = this.#host.id
    const tolerance = options.clockTolerance ?? 0
    let alg: string | undefined
    try {
      alg = decodeProtectedHeader(idToken).alg
    } catch (error) {
      throw invalidIdToken('not a JWS', error)
    }
    if (alg === undefined || !this.#algorithms.includes(alg)) {
      throw invalidIdToken(
        `alg ${String(alg)} is not one the provider signs ID tokens with ` +
          `(id_token_signing_alg_values_supported: ${this.#algorithms.join(', ')})`,
      )
    }
    let payload: JWTPayload
    try {
      const common = {
        issuer: this.#metadata.issuer,
        audience: clientId,
        algorithms: [alg],
        currentDate: new Date(this.#host.clock.now()),
        clockTolerance: tolerance,
        requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat'],
      }
      if (alg.startsWith('HS')) {
        const secret = this.#host.secret
        if (secret === undefined)
          throw invalidIdToken(`${alg} ID token but the client has no secret`)
        payload = (await jwtVerify(idToken, new TextEncoder().encode(secret), common)).payload
      } else {
        const jwks = this.#jwks
        if (jwks === undefined) throw invalidIdToken('the server metadata has no jwks_uri')
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
      throw invalidIdToken(error instanceof Error ? error.message : String(error), error)
    }
    const aud = payload.aud
    if (Array.isArray(aud) && aud.length > 1 && payload.azp === undefined) {
      throw invalidIdToken('azp is required when the ID token has several audiences')
    }
    if (payload.azp !== undefined && payload.azp !== clientId) {
      throw invalidIdToken(`azp ${JSON.stringify(payload.azp)} is not this client`)
    }
    if (options.nonce !== undefined && payload.nonce !== options.nonce) {
      throw invalidIdToken('nonce mismatch')
    }
    if (options.nonce === undefined && payload.nonce !== undefined) {
      throw invalidIdToken(
        'the ID token carries a nonce, so its authorization request had one: pass it as options.nonce',
      )
    }
    await checkHash(payload, 'at_hash', alg, options.accessToken, 'options.accessToken')
    await checkHash(payload, 'c_hash', alg, options.code, 'options.code')
    if (options.maxAge !== undefined) {
      const authTime = payload.auth_time
      if (typeof authTime !== 'number') throw invalidIdToken('auth_time is required with maxAge')
      const now = Math.floor(this.#host.clock.now() / 1000)
      if (authTime + options.maxAge < now - tolerance) {
        throw invalidIdToken('auth_time is older than maxAge: the user must sign in again')
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
  if (typeof expected !== 'string') throw invalidIdToken(`${claim} is not a string`)
  if (value === undefined) {
    throw invalidIdToken(`the ID token has ${claim}: pass the value it covers as ${option}`)
  }
  if ((await leftHalfHash(alg, value)) !== expected) {
    throw invalidIdToken(`${claim} does not match ${option}`)
  }
}
