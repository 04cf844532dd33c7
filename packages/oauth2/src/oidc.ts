import {
  createLocalJWKSet,
  decodeProtectedHeader,
  errors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTHeaderParameters,
  type JWTPayload,
  type FlattenedJWSInput,
} from 'jose'
import { isRecord, show } from './args.js'
import { OAuth2Error } from './error.js'
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
  /** The `nonce` sent with the authorization request; the token must carry the same. */
  readonly nonce?: string | undefined
  /** Seconds; when given, `auth_time` is required and must be at most this old. */
  readonly maxAge?: number | undefined
  /** Seconds of clock skew tolerated for `exp`, `iat`, `nbf` and `auth_time`. @default 0 */
  readonly clockTolerance?: number | undefined
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
  return new OAuth2Error({ error: 'invalid_metadata', error_description: description }, { cause })
}

function invalidIdToken(description: string, cause?: unknown): OAuth2Error {
  return new OAuth2Error({ error: 'invalid_id_token', error_description: description }, { cause })
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
 * Verifies ID tokens of one client (OpenID Connect Core §3.1.3.7): signature (JWKS from
 * `jwks_uri`, or the client secret for HS*), `iss`, `aud`, `azp`, `exp`, `iat`, `nonce`,
 * `auth_time` with `maxAge`.
 *
 * @internal
 */
export class IdTokenVerifier {
  readonly #host: OidcHost
  readonly #metadata: AuthorizationServerMetadata
  readonly #jwks: JwksCache | undefined

  constructor(host: OidcHost, metadata: AuthorizationServerMetadata) {
    this.#host = host
    this.#metadata = metadata
    const jwksUri = metadata.jwks_uri
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
    const clientId = this.#host.id
    const tolerance = options.clockTolerance ?? 0
    let alg: string | undefined
    try {
      alg = decodeProtectedHeader(idToken).alg
    } catch (error) {
      throw invalidIdToken('not a JWS', error)
    }
    let payload: JWTPayload
    try {
      const common = {
        issuer: this.#metadata.issuer,
        audience: clientId,
        currentDate: new Date(this.#host.clock.now()),
        clockTolerance: tolerance,
        requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat'],
      }
      if (alg?.startsWith('HS')) {
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
