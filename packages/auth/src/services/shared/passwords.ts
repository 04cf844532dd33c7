import type { Settings } from '../../conf/settings.js'
import type { AppContext } from '../../context.js'
import { checkPasswordStrength, isTooLong, type WeakPassword } from '../../crypto/password.js'
import { BadRequestError, InternalServerError, WeakPasswordError } from '../../errors.js'

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
 * The password rules without the leaked-password check (admin `generate_link`, where upstream
 * checks no strength at all): at most 72 bytes (400
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

/** Upstream's message for reason `pwned`. */
const PWNED_MESSAGE =
  'Password is known to be weak and easy to guess, please choose a different one.'

/**
 * Upstream's `checkPasswordStrength`: the policy's reasons, then `pwned` when
 * `PASSWORD_HIBP_ENABLED` and the range API knows the password (asked even when the policy already
 * failed, so every reason is reported at once).
 *
 * @returns `undefined` for an acceptable password, else the reasons and upstream's message.
 * @throws {@link InternalServerError} 500 `unexpected_failure` "Unable to perform password
 *   strength check with HaveIBeenPwned.org." when the range API could not be asked and
 *   `PASSWORD_HIBP_FAIL_CLOSED` is on.
 */
export async function passwordWeakness(
  ctx: Pick<AppContext, 'settings' | 'pwnedPasswords'>,
  password: string,
): Promise<WeakPassword | undefined> {
  const weak = checkPasswordStrength(password, ctx.settings.password)
  if (!(await isLeaked(ctx, password))) return weak
  return {
    reasons: [...(weak?.reasons ?? []), 'pwned'],
    message: weak ? `${weak.message} ${PWNED_MESSAGE}` : PWNED_MESSAGE,
  }
}

/**
 * Whether the range API knows `password` (`PASSWORD_HIBP_ENABLED`; `false` when it is off, or
 * could not be asked and `PASSWORD_HIBP_FAIL_CLOSED` is off).
 *
 * @throws {@link InternalServerError} 500 `unexpected_failure` "Unable to perform password
 *   strength check with HaveIBeenPwned.org." when it could not be asked and
 *   `PASSWORD_HIBP_FAIL_CLOSED` is on.
 */
async function isLeaked(
  ctx: Pick<AppContext, 'pwnedPasswords'>,
  password: string,
): Promise<boolean> {
  const checker = ctx.pwnedPasswords
  if (!checker) return false
  const verdict = await checker.check(password)
  if (verdict === 'unknown' && checker.failClosed) {
    throw new InternalServerError(
      'unexpected_failure',
      'Unable to perform password strength check with HaveIBeenPwned.org.',
    )
  }
  return verdict === 'pwned'
}

/**
 * Refuses a leaked password where only the leak is checked (`POST /admin/users` and
 * `gatehouse-auth admin createuser`, beyond upstream, which checks nothing there).
 *
 * @throws {@link WeakPasswordError} 422 `weak_password` with reasons `["pwned"]`;
 *   {@link InternalServerError} as {@link isLeaked} throws.
 */
export async function refuseLeakedPassword(
  ctx: Pick<AppContext, 'pwnedPasswords'>,
  password: string,
): Promise<void> {
  if (password !== '' && (await isLeaked(ctx, password))) {
    throw new WeakPasswordError(PWNED_MESSAGE, ['pwned'])
  }
}

/**
 * The password rules of sign-up, password changes and admin user updates (where upstream checks
 * the strength): {@link enforcePasswordLength}, then {@link passwordWeakness} (422
 * `weak_password` with `weak_password.reasons`, `pwned` among them for a leaked password).
 *
 * @throws {@link BadRequestError}, {@link WeakPasswordError}, {@link InternalServerError} As
 *   described.
 */
export async function enforceStrongPassword(
  ctx: Pick<AppContext, 'settings' | 'pwnedPasswords'>,
  password: string,
): Promise<void> {
  enforcePasswordLength(password)
  const weak = await passwordWeakness(ctx, password)
  if (weak) throw new WeakPasswordError(weak.message, weak.reasons)
}

/**
 * A random 64-character password (base64url of 48 random bytes) for a user who has none: one
 * created by an admin without a password, an invitee accepting the invite, or an unknown address
 * signed up by a magic link (upstream gives each a temporary password).
 */
export function randomPassword(ctx: Pick<AppContext, 'random'>): string {
  return Buffer.from(ctx.random.bytes(48)).toString('base64url')
}
