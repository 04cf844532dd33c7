/**
 * TOTP (RFC 6238) for MFA factors, through the `otpauth` library, with upstream's parameters:
 * HMAC-SHA-1, 6 digits, a 30-second step and one step of drift either way, and 20-byte secrets
 * written in Base32 without padding.
 *
 * @see https://www.rfc-editor.org/rfc/rfc6238
 * @module
 */
import { Secret, TOTP } from 'otpauth'
import type { Random } from '../random.js'

/** Seconds of one TOTP time step. */
export const TOTP_PERIOD = 30

/** Steps of clock drift accepted either side of the current one. */
export const TOTP_WINDOW = 1

/** Bytes of a new secret (160 bits, RFC 4226 §4's recommendation, upstream's size). */
const SECRET_BYTES = 20

function totp(secret: string, issuer = '', label = ''): TOTP {
  return new TOTP({
    issuer,
    label,
    issuerInLabel: issuer !== '',
    algorithm: 'SHA1',
    digits: 6,
    period: TOTP_PERIOD,
    secret: Secret.fromBase32(secret),
  })
}

/**
 * A new TOTP secret.
 *
 * @returns 20 random bytes in Base32 (32 characters, no padding), as stored in
 *   `mfa_factors.secret` and shown to the user.
 */
export function generateTotpSecret(random: Random): string {
  return new Secret({ buffer: Uint8Array.from(random.bytes(SECRET_BYTES)).buffer }).base32
}

/**
 * The key URI authenticator apps read (`otpauth://totp/<issuer>:<account>?secret=…`), in Google
 * Authenticator's key-URI format.
 *
 * @param issuer Who the account is with (shown by the app).
 * @param account The user's email (or what names the account).
 */
export function totpUri(secret: string, issuer: string, account: string): string {
  return totp(secret, issuer, account).toString()
}

/**
 * The time step a code belongs to, if it is valid now: the current step, or one step before or
 * after (drift). The caller refuses steps at or before the last one accepted, so that no code is
 * accepted twice (RFC 6238 §5.2).
 *
 * @param now Epoch milliseconds.
 * @returns The step (Unix seconds / 30, rounded down) the code was generated for, or `undefined`
 *   when it matches none of them.
 */
export function matchTotpStep(secret: string, code: string, now: number): number | undefined {
  if (!/^\d{6}$/.test(code)) return undefined
  const delta = totp(secret).validate({ token: code, timestamp: now, window: TOTP_WINDOW })
  if (delta === null) return undefined
  return Math.floor(now / 1000 / TOTP_PERIOD) + delta
}

/**
 * The code of a secret at a time (for tests and tools; the server only validates).
 *
 * @param now Epoch milliseconds.
 */
export function totpCode(secret: string, now: number): string {
  return totp(secret).generate({ timestamp: now })
}
