import type { Settings } from '../../conf/settings.js'
import type { AppContext } from '../../context.js'
import { checkPasswordStrength, isTooLong } from '../../crypto/password.js'
import { BadRequestError, WeakPasswordError } from '../../errors.js'

/**
 * Refuses a password bcrypt would truncate: more than 72 bytes (UTF-8) is 400
 * `validation_failed` "Password cannot be longer than 72 characters" (upstream's wording). Every
 * path that sets a password applies it, the admin API included (which checks no strength).
 *
 * @throws {@link BadRequestError} As described.
 */
export function enforcePasswordLength(password: string): void {
  if (isTooLong(password))
    throw new BadRequestError('validation_failed', 'Password cannot be longer than 72 characters')
}

/**
 * Applies the password rules of sign-up and password changes: at most 72 bytes (400
 * `validation_failed` "Password cannot be longer than 72 characters"), then the policy (422
 * `weak_password` with `weak_password.reasons`).
 *
 * @throws {@link BadRequestError}, {@link WeakPasswordError} As described.
 */
export function enforcePasswordPolicy(settings: Settings, password: string): void {
  enforcePasswordLength(password)
  const weak = checkPasswordStrength(password, settings.password)
  if (weak) {
    throw new WeakPasswordError(weak.message, weak.reasons)
  }
}

/**
 * A random 64-character password (base64url of 48 random bytes) for a user who has none: one
 * created by an admin without a password, an invitee accepting the invite, or an unknown address
 * signed up by a magic link (upstream gives each a temporary password).
 */
export function randomPassword(ctx: Pick<AppContext, 'random'>): string {
  return Buffer.from(ctx.random.bytes(48)).toString('base64url')
}
