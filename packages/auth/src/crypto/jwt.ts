import { createHmac, createSecretKey, webcrypto, type KeyObject } from 'node:crypto'
import {
  SignJWT,
  decodeProtectedHeader,
  importJWK,
  jwtVerify,
  type JWK,
  type JWTPayload,
  type CryptoKey,
} from 'jose'
import type { Clock } from '../clock.js'
import { InternalServerError } from '../errors.js'

/** Algorithms accepted for keys in `JWT_KEYS`. */
export type SigningAlgorithm = 'RS256' | 'RS512' | 'ES256' | 'ES512' | 'EdDSA' | 'HS256'

const ALGORITHMS: readonly SigningAlgorithm[] = [
  'RS256',
  'RS512',
  'ES256',
  'ES512',
  'EdDSA',
  'HS256',
]
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const

/** Configuration of {@link JwtKeys}: `JWT_SECRET`, `JWT_KEY_ID` and `JWT_KEYS`. */
export interface JwtKeyConfig {
  readonly secret: string
  readonly keyId: string
  readonly keys: readonly Readonly<Record<string, unknown>>[]
}

/**
 * Thrown by {@link JwtKeys.load} when `JWT_KEYS` cannot be used (at start; `unexpected_failure`
 * should it ever reach a request).
 */
export class JwtKeyError extends InternalServerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('unexpected_failure', message, options)
  }
}

interface LoadedKey {
  readonly kid: string
  readonly alg: SigningAlgorithm
  readonly sign: boolean
  readonly privateKey: CryptoKey | Uint8Array
  readonly verifyKey: CryptoKey | Uint8Array
  readonly publicJwk: JWK | undefined
}

/** Whether `JWT_KEYS[index]` signs: its `key_ops` has `sign`, or, when no key has `key_ops`, it is the first. */
function isSigner(
  jwk: Readonly<Record<string, unknown>>,
  index: number,
  declaresOps: boolean,
): boolean {
  const ops = Array.isArray(jwk.key_ops) ? (jwk.key_ops as unknown[]) : []
  return declaresOps ? ops.includes('sign') : index === 0
}

/**
 * The algorithm new tokens are signed with under `keys` (`JWT_KEYS`): the first signing key's,
 * or `undefined` when none signs (then `JWT_SECRET` signs HS256) or its algorithm is unknown.
 */
export function configuredSigningAlgorithm(
  keys: readonly Readonly<Record<string, unknown>>[],
): SigningAlgorithm | undefined {
  const declaresOps = keys.some((k) => Array.isArray(k.key_ops))
  const index = keys.findIndex((k, i) => isSigner(k, i, declaresOps))
  return index === -1 ? undefined : defaultAlg(keys[index] as Record<string, unknown>)
}

function defaultAlg(jwk: Readonly<Record<string, unknown>>): SigningAlgorithm | undefined {
  if (typeof jwk.alg === 'string') {
    return (ALGORITHMS as readonly string[]).includes(jwk.alg)
      ? (jwk.alg as SigningAlgorithm)
      : undefined
  }
  switch (jwk.kty) {
    case 'RSA':
      return 'RS256'
    case 'EC':
      return jwk.crv === 'P-521' ? 'ES512' : 'ES256'
    case 'OKP':
      return 'EdDSA'
    case 'oct':
      return 'HS256'
    default:
      return undefined
  }
}

/**
 * The server's signing and verification keys: HS256 with `JWT_SECRET`, and asymmetric keys
 * (RS256 by default, ES256, EdDSA) from `JWT_KEYS`, whose public halves are published at
 * `/.well-known/jwks.json`.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/conf/jwk.go
 */
export class JwtKeys {
  readonly #secret: CryptoKey | undefined
  /** `JWT_SECRET` as a Node key, for signing HS256 synchronously (see {@link JwtKeys.sign}). */
  readonly #secretKey: KeyObject | undefined
  /** The base64url protected header of HS256 tokens signed with `JWT_SECRET`. */
  readonly #secretHeader: string
  readonly #keyId: string
  readonly #byKid: ReadonlyMap<string, LoadedKey>
  readonly #signing: LoadedKey | undefined
  /**
   * Tokens these keys verified, with their frozen payloads, oldest first (see
   * {@link JwtKeys.verify}); at most {@link VERIFIED_TOKENS_MAX} entries.
   */
  readonly #verified = new Map<string, JWTPayload>()

  private constructor(config: JwtKeyConfig, secret: CryptoKey | undefined, keys: LoadedKey[]) {
    this.#secret = secret
    this.#secretKey =
      config.secret === '' ? undefined : createSecretKey(Buffer.from(config.secret, 'utf8'))
    // jose's header for setProtectedHeader({ alg, typ, kid? }), in the same member order.
    const header: { alg: 'HS256'; typ: 'JWT'; kid?: string } = { alg: 'HS256', typ: 'JWT' }
    if (config.keyId !== '') header.kid = config.keyId
    this.#secretHeader = Buffer.from(JSON.stringify(header)).toString('base64url')
    this.#keyId = config.keyId
    this.#byKid = new Map(keys.map((k) => [k.kid, k]))
    const signers = keys.filter((k) => k.sign)
    this.#signing = signers[0]
  }

  /**
   * Imports the configured keys.
   *
   * @throws {@link JwtKeyError} When a JWK cannot be imported, has no usable algorithm, when
   *   several keys are marked for signing, or when no key can sign.
   */
  static async load(config: JwtKeyConfig): Promise<JwtKeys> {
    const loaded: LoadedKey[] = []
    const declaresOps = config.keys.some((k) => Array.isArray(k.key_ops))
    for (const [index, raw] of config.keys.entries()) {
      const jwk = { ...raw }
      const alg = defaultAlg(jwk)
      if (alg === undefined) {
        throw new JwtKeyError(`JWT_KEYS[${String(index)}]: unsupported key type or algorithm`)
      }
      const sign = isSigner(jwk, index, declaresOps)
      const kid = typeof jwk.kid === 'string' && jwk.kid !== '' ? jwk.kid : `key-${String(index)}`
      delete jwk.key_ops
      delete jwk.use
      let privateKey: CryptoKey | Uint8Array
      let publicJwk: JWK | undefined
      let verifyKey: CryptoKey | Uint8Array
      try {
        privateKey = await importJWK(jwk as JWK, alg)
        if (jwk.kty === 'oct') {
          verifyKey = privateKey
        } else {
          const pub: Record<string, unknown> = { ...jwk }
          for (const member of PRIVATE_MEMBERS) Reflect.deleteProperty(pub, member)
          verifyKey = await importJWK(pub as JWK, alg)
          publicJwk = { ...(pub as JWK), kid, alg, use: 'sig', key_ops: ['verify'] }
        }
      } catch (error) {
        throw new JwtKeyError(`JWT_KEYS[${String(index)}]: cannot import the key`, { cause: error })
      }
      loaded.push({ kid, alg, sign, privateKey, verifyKey, publicJwk })
    }
    if (loaded.filter((k) => k.sign).length > 1) {
      throw new JwtKeyError('JWT_KEYS: exactly one key may have "sign" in key_ops')
    }
    // A WebCrypto key is imported once; jose would otherwise convert the secret on every call.
    const secret =
      config.secret === ''
        ? undefined
        : await webcrypto.subtle.importKey(
            'raw',
            new TextEncoder().encode(config.secret),
            { name: 'HMAC', hash: 'SHA-256' },
            false,
            ['sign', 'verify'],
          )
    const keys = new JwtKeys(config, secret, loaded)
    if (keys.#signing === undefined && keys.#secret === undefined) {
      throw new JwtKeyError('no signing key: set JWT_SECRET or a JWT_KEYS key with "sign"')
    }
    return keys
  }

  /** Algorithm of new tokens (the signing JWK's, else HS256). */
  get signingAlgorithm(): SigningAlgorithm {
    return this.#signing?.alg ?? 'HS256'
  }

  /**
   * The algorithm of ID tokens: the `JWT_KEYS` signing key's when it is asymmetric, else
   * `undefined` (an ID token is never signed with `JWT_SECRET`, which relying parties cannot
   * verify without sharing it).
   */
  get idTokenAlgorithm(): Exclude<SigningAlgorithm, 'HS256'> | undefined {
    const alg = this.#signing?.alg
    return alg === undefined || alg === 'HS256' ? undefined : alg
  }

  /**
   * Signs an OpenID Connect ID token with the asymmetric `JWT_KEYS` signing key.
   *
   * @throws {@link JwtKeyError} When there is no asymmetric signing key.
   */
  signIdToken(claims: JWTPayload): Promise<string> {
    const signing = this.#signing
    if (signing === undefined || signing.alg === 'HS256') {
      return Promise.reject(
        new JwtKeyError('ID tokens need an asymmetric JWT_KEYS signing key (RS256, ES256, EdDSA)'),
      )
    }
    return new SignJWT(claims)
      .setProtectedHeader({ alg: signing.alg, kid: signing.kid, typ: 'JWT' })
      .sign(signing.privateKey)
  }

  /**
   * The algorithms tokens of these keys may carry: each `JWT_KEYS` key's, then HS256 when
   * `JWT_SECRET` verifies (OIDC discovery's `id_token_signing_alg_values_supported`).
   */
  algorithms(): SigningAlgorithm[] {
    const algs = new Set<SigningAlgorithm>()
    for (const key of this.#byKid.values()) algs.add(key.alg)
    if (this.#secret !== undefined) algs.add('HS256')
    return [...algs]
  }

  /** The JWKS document: public halves of the asymmetric keys (symmetric keys are never listed). */
  jwks(): { keys: JWK[] } {
    const keys: JWK[] = []
    for (const key of this.#byKid.values()) if (key.publicJwk) keys.push(key.publicJwk)
    return { keys }
  }

  /**
   * Signs claims as a compact JWS (RFC 7515 §7.1): with the `JWT_KEYS` signing key through jose,
   * or else HS256 with `JWT_SECRET`.
   *
   * The HS256 token is the one jose's `SignJWT` makes (same header members in the same order,
   * `JSON.stringify` of the claims, HMAC-SHA-256 over `header.payload`), computed synchronously
   * with `node:crypto`: WebCrypto's asynchronous HMAC job costs about ten times the CPU of the
   * HMAC itself, and every sign-in and refresh signs one token.
   *
   * @param claims The payload (a JSON object); not modified.
   * @see https://www.rfc-editor.org/rfc/rfc7519#section-7.1
   */
  sign(claims: JWTPayload): Promise<string> {
    const signing = this.#signing
    if (signing) {
      return new SignJWT(claims)
        .setProtectedHeader({ alg: signing.alg, kid: signing.kid, typ: 'JWT' })
        .sign(signing.privateKey)
    }
    const input = `${this.#secretHeader}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`
    const mac = createHmac('sha256', this.#secretKey as KeyObject)
      .update(input)
      .digest('base64url')
    return Promise.resolve(`${input}.${mac}`)
  }

  /**
   * Verifies a compact JWS: a `kid` naming a `JWT_KEYS` key selects it, otherwise HS256 with
   * `JWT_SECRET`. `exp` is required and checked against `clock` (upstream only checks it when
   * present; a token without one would be valid forever, so it is refused).
   *
   * A token verified once is remembered with its payload, so its next use checks only its time
   * claims (`exp`, `nbf`) against `clock`: a client sends the same access token with every request
   * for its lifetime, and its signature cannot change. The keys never change for an instance, so
   * nothing remembered can outlive its key. Tokens longer than 2,048 characters are not
   * remembered, and at most 10,000 are (the oldest forgotten first).
   *
   * @returns The payload, frozen (shared by every verification of the same token).
   * @throws {Error} With jose's message when the token cannot be parsed or verified, for example
   *   `missing required "exp" claim`.
   */
  async verify(token: string, clock: Clock): Promise<JWTPayload> {
    const remembered = this.#verified.get(token)
    if (remembered !== undefined) {
      if (isCurrent(remembered, clock.now())) return remembered
      // Expired (or not yet valid) now: jose below says so with its own message.
      this.#verified.delete(token)
    }
    const header = decodeProtectedHeader(token)
    const byKid =
      typeof header.kid === 'string' && header.kid !== this.#keyId
        ? this.#byKid.get(header.kid)
        : undefined
    let key: CryptoKey | Uint8Array
    let alg: string
    if (byKid) {
      key = byKid.verifyKey
      alg = byKid.alg
    } else if (this.#secret && header.alg === 'HS256') {
      key = this.#secret
      alg = 'HS256'
    } else {
      throw new Error('no key matches the token')
    }
    const { payload } = await jwtVerify(token, key, {
      algorithms: [alg],
      currentDate: new Date(clock.now()),
      requiredClaims: ['exp'],
    })
    if (token.length <= VERIFIED_TOKEN_MAX_CHARS) {
      if (this.#verified.size >= VERIFIED_TOKENS_MAX) {
        const oldest = this.#verified.keys().next()
        if (oldest.done !== true) this.#verified.delete(oldest.value)
      }
      this.#verified.set(token, deepFreeze(payload))
    }
    return payload
  }
}

/**
 * At most this many verified tokens are remembered per key set (about 20 MB at the longest
 * remembered token); the oldest is forgotten first.
 */
const VERIFIED_TOKENS_MAX = 10_000

/** A longer token is verified on every use instead of being remembered, in characters. */
const VERIFIED_TOKEN_MAX_CHARS = 2048

/**
 * Whether a verified payload is still within its time claims at `nowMs`, with jose's rules and no
 * tolerance: `exp` is in the future (`exp > now`, whole seconds) and `nbf`, when present, is not.
 */
function isCurrent(payload: JWTPayload, nowMs: number): boolean {
  const now = Math.floor(nowMs / 1000)
  if (typeof payload.exp !== 'number' || payload.exp <= now) return false
  return payload.nbf === undefined || (typeof payload.nbf === 'number' && payload.nbf <= now)
}

/** Freezes `value` and every object in it, so a remembered payload cannot be changed by a caller. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const member of Object.values(value)) deepFreeze(member)
  }
  return value
}
