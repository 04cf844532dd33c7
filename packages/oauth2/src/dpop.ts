/**
 * DPoP (RFC 9449): the client's key pair, the proofs it signs for token requests (§5), pushed
 * authorization requests (§10.1) and resource requests (§7), and the server nonces it replays
 * (§8, §9).
 *
 * jose generates the key, exports its public JWK and computes its thumbprint. The proof itself is
 * assembled here: its protected header never changes for a key, so it is encoded once, and each
 * proof costs one payload encoding and one signature (jose's `SignJWT` re-encodes and re-checks
 * everything on every call, about three times the cost). On Node the signature is computed with
 * `node:crypto` (synchronous, no thread-pool round trip); elsewhere with WebCrypto.
 *
 * @module
 */
import { sha256 } from '@noble/hashes/sha2.js'
import {
  base64url,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  type CryptoKey,
  type JWK,
} from 'jose'
import { assertKnownKeys, invalidType, invalidValue, isRecord, optionKeys, show } from './args.js'
import type { Clock } from './clock.js'
import type { HttpRequest, HttpResponse } from './connection.js'
import { OAuth2Error } from './error.js'
import type { Random } from './random.js'
import type { RequestSigner } from './requester.js'
import type { Response } from './response.js'
import { challengeError } from './www-authenticate.js'

/**
 * JWS algorithms a DPoP proof can be signed with (RFC 9449 §4.2: asymmetric only).
 *
 * @see https://www.rfc-editor.org/rfc/rfc9449#section-4.2
 */
export const DPOP_ALGORITHMS = [
  'ES256',
  'ES384',
  'ES512',
  'PS256',
  'PS384',
  'PS512',
  'RS256',
  'RS384',
  'RS512',
  'EdDSA',
  'Ed25519',
] as const

/** A JWS algorithm from {@link DPOP_ALGORITHMS}. */
export type DPoPAlgorithm = (typeof DPOP_ALGORITHMS)[number]

/** A WebCrypto key pair, as jose's `generateKeyPair`/`importJWK` and `crypto.subtle` make them. */
export interface DPoPKeyPair {
  /** The private key (may be non-extractable), usable for `sign`. */
  readonly privateKey: CryptoKey
  /** The public key, sent as the `jwk` header of every proof. */
  readonly publicKey: CryptoKey
}

/**
 * The `dpop` client option (RFC 9449): sender-constrained tokens. `true` generates an ES256 key
 * pair for the client (non-extractable, in memory only); an object gives the key pair or another
 * algorithm.
 *
 * To keep using DPoP-bound tokens across restarts, persist the key pair with the tokens (for
 * example as JWKs, with jose's `exportJWK`/`importJWK`) and pass it here: a bound token is useless
 * without its key.
 */
export interface DPoPOptions {
  /**
   * The key pair proofs are signed with: EC P-256/P-384/P-521, Ed25519, or RSA (2048 bits or more).
   * Generated (non-extractable) when absent.
   */
  readonly keyPair?: DPoPKeyPair | undefined
  /**
   * The proofs' JWS algorithm. With `keyPair`: must fit it, and is inferred from it when absent
   * (ES256/384/512 by curve, EdDSA, PS256 or RS256 by the RSA key's algorithm and hash). Without:
   * the algorithm of the generated key, ES256 by default, or when the server's
   * `dpop_signing_alg_values_supported` lacks ES256, the first of it this library can sign with.
   */
  readonly algorithm?: DPoPAlgorithm | undefined
}

const DPOP_OPTION_KEYS = optionKeys<DPoPOptions>({ keyPair: true, algorithm: true })
const KEY_PAIR_KEYS = optionKeys<DPoPKeyPair>({ privateKey: true, publicKey: true })
/** What a key pair spread into `dpop` (or a key given there) was meant to be. */
const MISPLACED_KEY = 'the key pair goes in keyPair: { privateKey, publicKey }'
const DPOP_HINTS: Readonly<Record<string, string>> = {
  privateKey: MISPLACED_KEY,
  publicKey: MISPLACED_KEY,
  key: MISPLACED_KEY,
}

/** WebCrypto's description of a key, as far as DPoP needs it. */
interface KeyAlgorithm {
  readonly name?: unknown
  readonly namedCurve?: unknown
  readonly hash?: unknown
  readonly modulusLength?: unknown
}

const CURVE_ALGORITHMS: Readonly<Record<string, DPoPAlgorithm>> = {
  'P-256': 'ES256',
  'P-384': 'ES384',
  'P-521': 'ES512',
}
const HASH_BITS: Readonly<Record<string, string>> = {
  'SHA-256': '256',
  'SHA-384': '384',
  'SHA-512': '512',
}

function hashOf(algorithm: KeyAlgorithm): string | undefined {
  const hash = algorithm.hash
  return isRecord(hash) && typeof hash.name === 'string' ? HASH_BITS[hash.name] : undefined
}

/**
 * The algorithms a private or public WebCrypto key can sign or verify DPoP proofs with, or a
 * description of why it cannot.
 */
function algorithmsFor(algorithm: KeyAlgorithm): readonly DPoPAlgorithm[] | string {
  switch (algorithm.name) {
    case 'ECDSA': {
      const alg = typeof algorithm.namedCurve === 'string' && CURVE_ALGORITHMS[algorithm.namedCurve]
      return alg === undefined || alg === false
        ? `an ECDSA key on ${show(algorithm.namedCurve)}; the curves are P-256, P-384 and P-521`
        : [alg]
    }
    case 'Ed25519':
      return ['EdDSA', 'Ed25519']
    case 'RSA-PSS':
    case 'RSASSA-PKCS1-v1_5': {
      const bits = hashOf(algorithm)
      if (bits === undefined) return 'an RSA key without a SHA-2 hash'
      if (typeof algorithm.modulusLength !== 'number' || algorithm.modulusLength < 2048) {
        return `an RSA key of ${show(algorithm.modulusLength)} bits; at least 2048 are required`
      }
      return [`${algorithm.name === 'RSA-PSS' ? 'PS' : 'RS'}${bits}` as DPoPAlgorithm]
    }
    default:
      return `a ${show(algorithm.name)} key, not a signing key pair (EC, Ed25519 or RSA)`
  }
}

function isCryptoKey(value: unknown): value is CryptoKey {
  return (
    isRecord(value) &&
    typeof value.type === 'string' &&
    isRecord(value.algorithm) &&
    Array.isArray(value.usages)
  )
}

/**
 * Checks the `dpop` option and settles the algorithm (against the server's
 * `dpop_signing_alg_values_supported` when known): everything that can be checked without signing.
 * That the two keys belong together is checked when the first proof is signed.
 *
 * @param value The option (`true` or {@link DPoPOptions}).
 * @param supported The server's `dpop_signing_alg_values_supported`, if known.
 * @returns The key pair (if given) and the algorithm.
 * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` naming `options.dpop...`: a key
 *   that is not `keyPair` or `algorithm` (a key pair spread one level too high, a secret), not a
 *   key pair, a secret or public key where the private key goes, a key that cannot sign (HMAC, AES,
 *   ECDH, RSA-OAEP), an RSA key under 2048 bits, an algorithm that does not fit the key or that the
 *   server does not accept.
 * @internal
 */
export function checkDpopOption(
  value: unknown,
  supported: readonly string[] | undefined,
): { keyPair: DPoPKeyPair | undefined; algorithm: DPoPAlgorithm } {
  if (value !== true && !isRecord(value)) {
    throw invalidType('options.dpop', 'true or an object with keyPair and/or algorithm', value)
  }
  // A key pair spread one level too high would otherwise leave keyPair absent: a fresh key.
  assertKnownKeys('options.dpop', value, DPOP_OPTION_KEYS, DPOP_HINTS)
  const { keyPair, algorithm } = value === true ? {} : (value as DPoPOptions)
  if (algorithm !== undefined && !(DPOP_ALGORITHMS as readonly unknown[]).includes(algorithm)) {
    throw invalidValue(
      'options.dpop.algorithm',
      `must be one of ${DPOP_ALGORITHMS.join(', ')}: DPoP proofs are signed with a private key (got ${show(algorithm)})`,
    )
  }
  const accepted = (alg: DPoPAlgorithm) => supported === undefined || supported.includes(alg)
  const refuse = (name: string, what: string) =>
    invalidValue(
      name,
      `${what}, which the authorization server does not accept for DPoP proofs ` +
        `(its dpop_signing_alg_values_supported: ${(supported ?? []).join(', ')})`,
    )
  if (keyPair === undefined) {
    if (algorithm !== undefined) {
      if (!accepted(algorithm)) throw refuse('options.dpop.algorithm', `is ${algorithm}`)
      return { keyPair, algorithm }
    }
    const preferred = ['ES256', ...DPOP_ALGORITHMS].find((alg) => accepted(alg as DPoPAlgorithm))
    if (preferred === undefined) {
      throw invalidValue(
        'options.dpop',
        `cannot be used with this authorization server: it accepts no algorithm this library ` +
          `signs DPoP proofs with (its dpop_signing_alg_values_supported: ${(supported ?? []).join(', ')})`,
      )
    }
    return { keyPair, algorithm: preferred as DPoPAlgorithm }
  }
  if (!isRecord(keyPair)) {
    throw invalidType('options.dpop.keyPair', 'an object with privateKey and publicKey', keyPair)
  }
  assertKnownKeys('options.dpop.keyPair', keyPair, KEY_PAIR_KEYS)
  const { privateKey, publicKey } = keyPair
  for (const [name, key, type] of [
    ['privateKey', privateKey, 'private'],
    ['publicKey', publicKey, 'public'],
  ] as const) {
    if (!isCryptoKey(key)) {
      throw invalidType(
        `options.dpop.keyPair.${name}`,
        "a WebCrypto CryptoKey (jose's generateKeyPair or importJWK make them)",
        key,
      )
    }
    if (key.type !== type) {
      throw invalidValue(
        `options.dpop.keyPair.${name}`,
        `must be a ${type} key (got a ${key.type} key)`,
      )
    }
  }
  const fits = algorithmsFor(privateKey.algorithm)
  if (typeof fits === 'string') {
    throw invalidValue('options.dpop.keyPair.privateKey', `cannot sign DPoP proofs: it is ${fits}`)
  }
  if (!privateKey.usages.includes('sign')) {
    throw invalidValue('options.dpop.keyPair.privateKey', "must allow 'sign' in its usages")
  }
  const publicFits = algorithmsFor(publicKey.algorithm)
  if (typeof publicFits === 'string' || !publicFits.some((alg) => fits.includes(alg))) {
    throw invalidValue(
      'options.dpop.keyPair.publicKey',
      'is not the same kind of key as privateKey (algorithm, curve or hash differ)',
    )
  }
  if (algorithm !== undefined) {
    if (!fits.includes(algorithm)) {
      throw invalidValue(
        'options.dpop.algorithm',
        `is ${algorithm}, which the key pair cannot sign with (it fits ${fits.join(', ')})`,
      )
    }
    if (!accepted(algorithm)) throw refuse('options.dpop.algorithm', `is ${algorithm}`)
    return { keyPair, algorithm }
  }
  const chosen = fits.find(accepted)
  if (chosen === undefined) throw refuse('options.dpop.keyPair', `signs with ${fits.join(' or ')}`)
  return { keyPair, algorithm: chosen }
}

type SubtleParams = Parameters<typeof crypto.subtle.sign>[0]

/** WebCrypto parameters of `alg`, for `sign` and `verify`. */
function webCryptoParams(alg: DPoPAlgorithm): SubtleParams {
  const bits = alg.slice(2)
  switch (alg.slice(0, 2)) {
    case 'ES':
      return { name: 'ECDSA', hash: `SHA-${bits}` }
    case 'PS':
      return { name: 'RSA-PSS', saltLength: Number(bits) / 8 }
    case 'RS':
      return { name: 'RSASSA-PKCS1-v1_5' }
    default:
      return { name: 'Ed25519' }
  }
}

/** Signs the JWS signing input; the signature as JWS wants it (ECDSA as `r || s`). */
type Sign = (input: Uint8Array) => Uint8Array | Promise<Uint8Array>

/** A signer over WebCrypto (every runtime). @internal */
export function webCryptoSigner(privateKey: CryptoKey, alg: DPoPAlgorithm): Sign {
  const params = webCryptoParams(alg)
  return async (input) => new Uint8Array(await crypto.subtle.sign(params, privateKey, input))
}

/** A synchronous signer over `node:crypto`, or `undefined` outside Node. */
async function nodeSigner(privateKey: CryptoKey, alg: DPoPAlgorithm): Promise<Sign | undefined> {
  const runtime = (globalThis as { process?: { versions?: { node?: string } } }).process
  if (runtime?.versions?.node === undefined) return undefined
  const nodeCrypto = await import('node:crypto')
  const key = nodeCrypto.KeyObject.from(privateKey)
  const hash = `sha${alg.slice(2)}`
  switch (alg.slice(0, 2)) {
    case 'ES':
      return (input) => nodeCrypto.sign(hash, input, { key, dsaEncoding: 'ieee-p1363' })
    case 'PS':
      return (input) =>
        nodeCrypto.sign(hash, input, {
          key,
          padding: nodeCrypto.constants.RSA_PKCS1_PSS_PADDING,
          saltLength: nodeCrypto.constants.RSA_PSS_SALTLEN_DIGEST,
        })
    case 'RS':
      return (input) => nodeCrypto.sign(hash, input, key)
    default:
      return (input) => nodeCrypto.sign(undefined, input, key)
  }
}

/** Base64url of a string's UTF-8 bytes or of bytes: Node's `Buffer` when there is one (faster). */
const encode: (value: string | Uint8Array) => string =
  typeof Buffer === 'function'
    ? (value) =>
        (typeof value === 'string'
          ? Buffer.from(value)
          : Buffer.from(value.buffer, value.byteOffset, value.byteLength)
        ).toString('base64url')
    : (value) => base64url.encode(value)

/** The bytes of an ASCII string (a JWS signing input): Node's `Buffer` when there is one. */
const ascii: (text: string) => Uint8Array =
  typeof Buffer === 'function'
    ? (text) => Buffer.from(text, 'latin1')
    : (text) => new TextEncoder().encode(text)

/** The public members of a JWK (RFC 7638 §3.2): what a proof's `jwk` header carries. */
function publicJwk(jwk: JWK): JWK {
  const { kty, crv, x, y, n, e } = jwk
  return Object.fromEntries(
    Object.entries({ kty, crv, x, y, n, e }).filter(([, v]) => v !== undefined),
  )
}

/** A key ready to sign proofs. */
interface LoadedKey {
  /** The encoded protected header, `{"typ":"dpop+jwt","alg":…,"jwk":…}`. */
  readonly header: string
  readonly jwk: JWK
  readonly sign: Sign
}

/** A `DPoP-Nonce` value as RFC 9449 §8.1 allows it (`1*NQCHAR`), bounded. */
const NONCE = /^[\x21\x23-\x5B\x5D-\x7E]{1,1024}$/
/** Servers whose nonce is kept; the one least recently given a nonce goes first. */
const MAX_NONCE_SERVERS = 100

/** The part of an absolute URL string that names its server (nonces are kept per server). */
function serverOf(url: string): string {
  const slash = url.indexOf('/', url.indexOf('//') + 2)
  return slash === -1 ? url : url.slice(0, slash)
}

/** RFC 9449 §4.2 `htu`: the URL without query and fragment. */
function htuOf(url: string): string {
  const cut = url.search(/[?#]/)
  return cut === -1 ? url : url.slice(0, cut)
}

/**
 * RFC 9449 §4.2 `ath`: the base64url SHA-256 of an access token.
 *
 * @internal
 */
export function accessTokenHash(accessToken: string): string {
  return encode(sha256(new TextEncoder().encode(accessToken)))
}

const REFUSED_NONCE =
  'the server asked for a new DPoP nonce again after the request was resent with the nonce it ' +
  'had just sent (DPoP-Nonce); it does not accept its own nonces: check its nonce handling ' +
  '(RFC 9449 §8)'

/**
 * The {@link RequestSigner} of a client's DPoP key: a proof for each request, with
 * `Authorization: DPoP <token>` for a resource request. Synchronous when the key is ready and
 * signs synchronously (Node), so a request costs no extra promise.
 */
class ProofSigner implements RequestSigner {
  readonly #dpop: DPoP
  readonly #authorization: string | undefined
  readonly #ath: string | undefined

  constructor(dpop: DPoP, accessToken: string | undefined) {
    this.#dpop = dpop
    this.#authorization = accessToken === undefined ? undefined : `DPoP ${accessToken}`
    this.#ath = accessToken === undefined ? undefined : accessTokenHash(accessToken)
  }

  headers(method: string, url: string): Record<string, string> | Promise<Record<string, string>> {
    const proof = this.#dpop.proof(method, url, this.#ath)
    return typeof proof === 'string' ? this.#with(proof) : proof.then((p) => this.#with(p))
  }

  #with(dpop: string): Record<string, string> {
    return this.#authorization === undefined
      ? { dpop }
      : { authorization: this.#authorization, dpop }
  }

  retry(request: HttpRequest, response: HttpResponse): boolean {
    return this.#dpop.resend(request, response)
  }

  refused(response: Response): OAuth2Error {
    return new OAuth2Error(response, { code: 'use_dpop_nonce', description: REFUSED_NONCE })
  }
}

/**
 * A client's DPoP key and the nonces servers gave it (RFC 9449 §8, kept per server).
 *
 * @internal
 */
export class DPoP {
  /** The proofs' JWS algorithm. */
  readonly algorithm: DPoPAlgorithm
  readonly #keyPair: DPoPKeyPair | undefined
  readonly #clock: Clock
  readonly #random: Random
  readonly #nonces = new Map<string, string>()
  #key: Promise<LoadedKey> | undefined
  #loaded: LoadedKey | undefined
  readonly #preferNode: boolean

  /**
   * @param option The `dpop` option, already checked by {@link checkDpopOption}.
   * @param host The clock (`iat`) and randomness (`jti`).
   * @param preferNode Sign with `node:crypto` on Node (tests turn it off to cover WebCrypto).
   */
  constructor(
    option: { keyPair: DPoPKeyPair | undefined; algorithm: DPoPAlgorithm },
    host: { clock: Clock; random: Random },
    preferNode = true,
  ) {
    this.algorithm = option.algorithm
    this.#keyPair = option.keyPair
    this.#clock = host.clock
    this.#random = host.random
    this.#preferNode = preferNode
  }

  /** Generates or checks the key pair once; the rest of the proofs reuse it. */
  #load(): Promise<LoadedKey> {
    this.#key ??= this.#prepare().then((key) => (this.#loaded = key))
    return this.#key
  }

  async #prepare(): Promise<LoadedKey> {
    const alg = this.algorithm
    const pair = this.#keyPair ?? (await generateKeyPair(alg, { extractable: false }))
    const jwk = publicJwk(await exportJWK(pair.publicKey))
    const sign =
      (this.#preferNode ? await nodeSigner(pair.privateKey, alg) : undefined) ??
      webCryptoSigner(pair.privateKey, alg)
    if (this.#keyPair !== undefined) {
      // A mismatched pair would make every proof fail at the server with a vague error.
      const probe = new TextEncoder().encode('dpop key pair check')
      const matches = await crypto.subtle.verify(
        webCryptoParams(alg),
        pair.publicKey,
        await sign(probe),
        probe,
      )
      if (!matches) {
        throw invalidValue(
          'options.dpop.keyPair',
          'holds a public key that does not belong to its private key',
        )
      }
    }
    return { header: encode(JSON.stringify({ typ: 'dpop+jwt', alg, jwk })), jwk, sign }
  }

  /**
   * The JWK thumbprint (RFC 7638) of the public key: `cnf.jkt` of bound tokens, `dpop_jkt` of
   * authorization requests (RFC 9449 §6.1, §10).
   */
  async thumbprint(): Promise<string> {
    return calculateJwkThumbprint((await this.#load()).jwk)
  }

  /**
   * A proof for `method` on `url` (RFC 9449 §4.2): `jti`, `htm`, `htu`, `iat`, the server's nonce
   * when it gave one, and `ath` for a resource request. A string once the key is ready and the
   * signer is synchronous (Node); a promise otherwise.
   *
   * @param ath `accessTokenHash(token)` for a resource request.
   */
  proof(method: string, url: string, ath?: string): string | Promise<string> {
    const key = this.#loaded
    if (key === undefined) return this.#load().then(() => this.proof(method, url, ath))
    // Written out rather than JSON.stringify of an object: this is per request. The nonce
    // (NONCE) and ath (base64url) need no escaping; the rest is escaped.
    const nonce = this.#nonces.get(serverOf(url))
    let payload =
      `{"jti":${JSON.stringify(this.#random.uuid())},"htm":${JSON.stringify(method)},` +
      `"htu":${JSON.stringify(htuOf(url))},"iat":${String(Math.floor(this.#clock.now() / 1000))}`
    if (nonce !== undefined) payload += `,"nonce":"${nonce}"`
    if (ath !== undefined) payload += `,"ath":"${ath}"`
    const input = `${key.header}.${encode(`${payload}}`)}`
    const signature = key.sign(ascii(input))
    return signature instanceof Uint8Array
      ? `${input}.${encode(signature)}`
      : signature.then((bytes) => `${input}.${encode(bytes)}`)
  }

  /**
   * Credentials for requests: a proof in `DPoP`, and with `accessToken`, `Authorization: DPoP`
   * (RFC 9449 §7.1) and the proof's `ath`.
   *
   * @param accessToken The token, for a resource request.
   */
  signer(accessToken?: string): RequestSigner {
    return new ProofSigner(this, accessToken)
  }

  /**
   * Keeps the response's nonce; whether it asks for the request again with it (§8: a 400
   * `use_dpop_nonce` body; §9: a 401 `DPoP` challenge with `error="use_dpop_nonce"`).
   */
  resend(request: HttpRequest, response: HttpResponse): boolean {
    const nonce = response.headers['dpop-nonce']
    if (nonce === undefined || !NONCE.test(nonce)) return false
    const server = serverOf(request.url)
    this.#nonces.delete(server)
    this.#nonces.set(server, nonce)
    if (this.#nonces.size > MAX_NONCE_SERVERS) {
      this.#nonces.delete(this.#nonces.keys().next().value as string)
    }
    if (response.status === 401) {
      return challengeError(response.headers['www-authenticate'], ['dpop'], 'use_dpop_nonce')
    }
    if (response.status !== 400 || !response.body.includes('use_dpop_nonce')) return false
    try {
      const body: unknown = JSON.parse(response.body)
      return isRecord(body) && body.error === 'use_dpop_nonce'
    } catch {
      return false
    }
  }
}
