import bcrypt from 'bcrypt'

/** bcrypt cost used for new hashes; upstream's `crypto.GenerateFromPassword` uses 10. */
export const BCRYPT_COST = 10

/** Longest password bcrypt accepts, in bytes (UTF-8). */
export const MAX_PASSWORD_BYTES = 72

/**
 * Hashes a password with bcrypt at cost {@link BCRYPT_COST}. The `$2b$` hashes are accepted by
 * upstream's Go implementation, and upstream's `$2a$` hashes verify here.
 *
 * @param password Plain-text password (at most 72 bytes; check with {@link isTooLong} first).
 * @param cost bcrypt cost factor. @default 10
 */
export async function hashPassword(password: string, cost: number = BCRYPT_COST): Promise<string> {
  return bcrypt.hash(password, cost)
}

/**
 * Checks a password against a stored bcrypt hash. Never throws for a malformed hash: it is
 * treated as a mismatch.
 *
 * @param password The candidate password.
 * @param hash The stored `encrypted_password` (`$2a$`, `$2b$` or `$2y$`).
 */
export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  if (!isBcryptHash(hash)) return false
  try {
    return await bcrypt.compare(password, hash)
  } catch {
    return false
  }
}

/** Whether a stored `encrypted_password` looks like a bcrypt hash (`$2a$`, `$2b$`, `$2y$`). */
export function isBcryptHash(hash: string): boolean {
  return /^\$2[aby]\$\d\d\$/.test(hash)
}

/** Whether a password exceeds bcrypt's {@link MAX_PASSWORD_BYTES}. */
export function isTooLong(password: string): boolean {
  return Buffer.byteLength(password, 'utf8') > MAX_PASSWORD_BYTES
}

/** Password rules: `PASSWORD_MIN_LENGTH` and `PASSWORD_REQUIRED_CHARACTERS`. */
export interface PasswordPolicy {
  /** Minimum length in bytes (upstream compares Go `len`, i.e. UTF-8 bytes). */
  readonly minLength: number
  /** Character sets; the password needs one character from each. */
  readonly requiredCharacters: readonly string[]
}

/** Why a password is weak: upstream's `weak_password.reasons` values. */
export type WeakPasswordReason = 'length' | 'characters' | 'pwned'

/** Result of {@link checkPasswordStrength} for a weak password. */
export interface WeakPassword {
  readonly reasons: WeakPasswordReason[]
  /** Upstream's message, for example "Password should be at least 6 characters." */
  readonly message: string
}

/**
 * Checks a password against the policy.
 *
 * @returns `undefined` when the password is acceptable, else the reasons and upstream's message.
 */
export function checkPasswordStrength(
  password: string,
  policy: PasswordPolicy,
): WeakPassword | undefined {
  const reasons: WeakPasswordReason[] = []
  const messages: string[] = []
  if (Buffer.byteLength(password, 'utf8') < policy.minLength) {
    reasons.push('length')
    messages.push(`Password should be at least ${String(policy.minLength)} characters.`)
  }
  const chars = new Set(password)
  const missing = policy.requiredCharacters.some((set) => {
    for (const ch of set) if (chars.has(ch)) return false
    return set !== ''
  })
  if (missing) {
    reasons.push('characters')
    messages.push(
      `Password should contain at least one character of each: ${policy.requiredCharacters.join(', ')}.`,
    )
  }
  return reasons.length === 0 ? undefined : { reasons, message: messages.join(' ') }
}
