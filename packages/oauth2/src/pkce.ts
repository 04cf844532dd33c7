import { invalidValue } from './args.js'

/** A PKCE pair (RFC 7636): send the challenge with the authorization request, keep the verifier. */
export interface Pkce {
  /** Send with the token request (`code_verifier`); keep it secret until then. */
  readonly code_verifier: string
  /** Send with the authorization request: BASE64URL(SHA-256(code_verifier)). */
  readonly code_challenge: string
  /** Always `S256`. */
  readonly code_challenge_method: 'S256'
}

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
])

/**
 * SHA-256 (FIPS 180-4) of bytes, synchronously, so {@link pkce} works the same in every runtime
 * (WebCrypto's digest is asynchronous).
 *
 * @internal
 */
export function sha256(data: Uint8Array): Uint8Array {
  const h = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]
  const length = data.length
  const padded = new Uint8Array(Math.ceil((length + 9) / 64) * 64)
  padded.set(data)
  padded[length] = 0x80
  const view = new DataView(padded.buffer)
  view.setUint32(padded.length - 8, Math.floor(length / 0x20000000))
  view.setUint32(padded.length - 4, (length * 8) >>> 0)
  const w = new Array<number>(64).fill(0)
  const at = (i: number): number => w[i] ?? 0
  for (let offset = 0; offset < padded.length; offset += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(offset + i * 4)
    for (let i = 16; i < 64; i++) {
      const x = at(i - 15)
      const y = at(i - 2)
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3)
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10)
      w[i] = (at(i - 16) + s0 + at(i - 7) + s1) >>> 0
    }
    let [a, b, c, d, e, f, g, hh] = h as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ]
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))
      const ch = (e & f) ^ (~e & g)
      const t1 = (hh + S1 + ch + (K[i] ?? 0) + at(i)) >>> 0
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))
      const maj = (a & b) ^ (a & c) ^ (b & c)
      const t2 = (S0 + maj) >>> 0
      hh = g
      g = f
      f = e
      e = (d + t1) >>> 0
      d = c
      c = b
      b = a
      a = (t1 + t2) >>> 0
    }
    const add = [a, b, c, d, e, f, g, hh]
    for (let i = 0; i < 8; i++) h[i] = ((h[i] ?? 0) + (add[i] ?? 0)) >>> 0
  }
  const out = new Uint8Array(32)
  const outView = new DataView(out.buffer)
  h.forEach((word, i) => {
    outView.setUint32(i * 4, word)
  })
  return out
}

/** Base64url without padding (RFC 4648 §5). @internal */
export function base64url(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')
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
  return base64url(sha256(new TextEncoder().encode(codeVerifier)))
}

/**
 * Creates a PKCE pair (RFC 7636): a verifier of 32 random bytes (43 characters, base64url) and its
 * S256 challenge. Synchronous; uses `crypto.getRandomValues`.
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
  const code_verifier = base64url(crypto.getRandomValues(new Uint8Array(32)))
  return {
    code_verifier,
    code_challenge: pkceChallenge(code_verifier),
    code_challenge_method: 'S256',
  }
}
