import { sha256 } from '@noble/hashes/sha2.js'
import { base64url } from 'jose'
import { invalidValue } from './args.js'
import { systemRandom, type Random } from './random.js'

/** A PKCE pair (RFC 7636): send the challenge with the authorization request, keep the verifier. */
export interface Pkce {
  /** Send with the token request (`code_verifier`); keep it secret until then. */
  readonly code_verifier: string
  /** Send with the authorization request: BASE64URL(SHA-256(code_verifier)). */
  readonly code_challenge: string
  /** Always `S256`. */
  readonly code_challenge_method: 'S256'
}

/**
 * The S256 challenge of a verifier: BASE64URL(SHA-256(ASCII(verifier))) (RFC 7636 §4.2).
 *
 * @param codeVerifier 43-128 characters of `[A-Za-z0-9-._~]`.
 * @throws {TypeError} `ERR_INVALID_ARG_VALUE` for a verifier outside RFC 7636 §4.1.
 */
export function pkceChallenge(codeVerifier: string): string {
  if (typeof codeVerifier !== 'string' || !/^[A-Za-z0-9\-._~]{43,128}$/.test(codeVerifier)) {
    throw invalidValue(
      'codeVerifier',
      'must be 43-128 characters of [A-Za-z0-9-._~] (RFC 7636 §4.1)',
    )
  }
  // @noble/hashes: pkce() is synchronous and runtime-neutral, so neither WebCrypto's digest
  // (asynchronous) nor node:crypto (Node's) can serve here.
  return base64url.encode(sha256(new TextEncoder().encode(codeVerifier)))
}

/**
 * Creates a PKCE pair (RFC 7636): a verifier of 32 random bytes (43 characters, base64url) and its
 * S256 challenge. Synchronous; the bytes come from `crypto.getRandomValues`.
 *
 * @returns `{ code_verifier, code_challenge, code_challenge_method: 'S256' }`, named as on the wire.
 * @see https://www.rfc-editor.org/rfc/rfc7636#section-4
 *
 * @example
 * ```ts
 * import { pkce, type Client } from '@gatehouse/oauth2'
 * let client!: Client
 * const { code_verifier, code_challenge, code_challenge_method } = pkce()
 * const url = client.authCode.authorizeUrl({ code_challenge, code_challenge_method, state: 'xyz' })
 * // later, in the callback:
 * const token = await client.authCode.getToken('code-from-callback', { code_verifier })
 * ```
 */
export function pkce(): Pkce {
  return pkceFrom(systemRandom)
}

/** {@link pkce} with the verifier's bytes from `random`. @internal */
export function pkceFrom(random: Random): Pkce {
  const code_verifier = base64url.encode(random.bytes(32))
  return {
    code_verifier,
    code_challenge: pkceChallenge(code_verifier),
    code_challenge_method: 'S256',
  }
}
