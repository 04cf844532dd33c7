import { cryptoRandom, type Random } from '../random.js'

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567'

/**
 * A new opaque refresh token: 12 random characters of lower-case base32 (`[a-z2-7]`, 60 bits), the
 * format of upstream's `SecureAlphanumeric(12)`.
 *
 * @param random The randomness. @default {@link cryptoRandom}
 */
export function generateRefreshToken(random: Random = cryptoRandom): string {
  const bytes = random.bytes(12)
  let out = ''
  for (const byte of bytes) out += ALPHABET[byte & 31] ?? 'a'
  return out
}

/**
 * Whether a presented refresh token has an acceptable shape before any lookup: at least 12
 * characters, and a 12-character token must be `[a-z0-9]`. Longer tokens (upstream's older
 * 22-character base64url ones) are accepted for lookup.
 */
export function isWellFormedRefreshToken(token: string): boolean {
  if (token.length < 12) return false
  if (token.length === 12) return /^[a-z0-9]{12}$/.test(token)
  return token.length <= 255
}
