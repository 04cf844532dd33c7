import {
  importPKCS8,
  SignJWT,
  type CryptoKey,
  type JWK,
  type JWTPayload,
  type KeyObject,
} from 'jose'
import { assertKnownKeys, invalidType, invalidValue, isRecord, optionKeys, show } from './args.js'

/**
 * A signing key: a PEM private key (PKCS#8 anywhere; PKCS#1/SEC1 on Node), a private JWK, a
 * `KeyObject` or `CryptoKey`, or the secret bytes (or string) for HS256/384/512.
 */
export type SigningKey = string | Uint8Array | JWK | KeyObject | CryptoKey

/** JWS algorithms accepted for signing. */
export const SIGNING_ALGORITHMS = [
  'HS256',
  'HS384',
  'HS512',
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const

/** A JWS algorithm name from {@link SIGNING_ALGORITHMS}. */
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number]

/** How to sign a JWT: algorithm, key and optional key id (`kid` header). */
export interface SigningOptions {
  /** JWS algorithm, e.g. `'RS256'`. */
  readonly algorithm: SigningAlgorithm
  /** The key (see {@link SigningKey}). */
  readonly key: SigningKey
  /** Key id for the `kid` header. */
  readonly kid?: string | undefined
}

/** A key jose signs with, as {@link importSigningKey} returns it. @internal */
export type ImportedKey = Uint8Array | JWK | KeyObject | CryptoKey

/** The keys of {@link SigningOptions}. @internal */
export const SIGNING_OPTION_KEYS = optionKeys<SigningOptions>({
  algorithm: true,
  key: true,
  kid: true,
})

/**
 * Asserts that `value` is one of {@link SIGNING_ALGORITHMS}.
 *
 * @throws {TypeError} `ERR_INVALID_ARG_VALUE` naming `name`.
 * @internal
 */
export function assertSigningAlgorithm(
  name: string,
  value: unknown,
): asserts value is SigningAlgorithm {
  if (!(SIGNING_ALGORITHMS as readonly unknown[]).includes(value)) {
    throw invalidValue(name, `must be one of ${SIGNING_ALGORITHMS.join(', ')} (got ${show(value)})`)
  }
}

const PEM = /^-----BEGIN ([A-Z ]+)-----/

/**
 * Checks `options` and turns its key into something jose signs with.
 *
 * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` naming `name.algorithm` or
 *   `name.key` (also when jose or `node:crypto` cannot read the key; theirs is the `cause`).
 * @internal
 */
export async function importSigningKey(name: string, options: unknown): Promise<ImportedKey> {
  if (!isRecord(options)) throw invalidType(name, 'an object with algorithm and key', options)
  assertKnownKeys(name, options, SIGNING_OPTION_KEYS)
  const { algorithm, key, kid } = options
  assertSigningAlgorithm(`${name}.algorithm`, algorithm)
  if (kid !== undefined && typeof kid !== 'string')
    throw invalidType(`${name}.kid`, 'a string', kid)
  const alg = algorithm as string
  const symmetric = alg.startsWith('HS')
  if (typeof key === 'string') {
    const pem = PEM.exec(key.trimStart())
    if (pem === null) {
      if (!symmetric) throw invalidValue(`${name}.key`, `must be a PEM private key for ${alg}`)
      return new TextEncoder().encode(key)
    }
    try {
      if (pem[1] === 'PRIVATE KEY') return await importPKCS8(key, alg, { extractable: false })
      // PKCS#1 / SEC1 PEM: Node's crypto reads them; other runtimes need PKCS#8.
      const crypto = await import('node:crypto')
      return crypto.createPrivateKey(key)
    } catch (error) {
      throw unusableKey(name, alg, error)
    }
  }
  if (key instanceof Uint8Array) {
    if (!symmetric) throw invalidValue(`${name}.key`, `must be a private key for ${alg}, not bytes`)
    return key
  }
  if (isRecord(key)) return key
  throw invalidType(`${name}.key`, 'a PEM string, JWK, KeyObject, CryptoKey or bytes', key)
}

/**
 * Signs `claims` as a compact JWS with the `typ` `JWT` (or `typ`).
 *
 * @param name The name of the signing options in error messages (`signing`, `options.privateKey`).
 * @param typ The `typ` header (`oauth-authz-req+jwt` for request objects, RFC 9101 §10.8).
 * @throws {TypeError} `ERR_INVALID_ARG_VALUE` naming `name.key` when jose cannot sign with the key
 *   (jose's error is the `cause`).
 * @internal
 */
export async function signJwt(
  name: string,
  claims: JWTPayload,
  options: { algorithm: string; kid?: string | undefined },
  key: ImportedKey,
  typ = 'JWT',
): Promise<string> {
  try {
    return await new SignJWT(claims)
      .setProtectedHeader({
        alg: options.algorithm,
        typ,
        ...(options.kid === undefined ? {} : { kid: options.kid }),
      })
      .sign(key)
  } catch (error) {
    throw unusableKey(name, options.algorithm, error)
  }
}

/** A key jose or `node:crypto` refused, as an argument error (their message names no key material). */
function unusableKey(name: string, alg: string, cause: unknown) {
  const reason = cause instanceof Error ? `: ${cause.message}` : ''
  return invalidValue(`${name}.key`, `is not a usable ${alg} private key${reason}`, cause)
}
