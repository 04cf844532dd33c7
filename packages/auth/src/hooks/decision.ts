import { InternalServerError } from '../errors.js'
import { isObject } from './answer.js'

/** Upstream's message of an MFA verification attempt hook's rejection without one. */
export const MFA_REJECTION_MESSAGE = 'Further MFA verification attempts will be rejected.'

/** Upstream's message of a password verification attempt hook's rejection without one. */
export const PASSWORD_REJECTION_MESSAGE = 'Further password verification attempts will be rejected.'

/** What a verification attempt hook decided (upstream `…VerificationAttemptOutput`). */
export interface HookDecision {
  /** `decision: "reject"`; anything else goes on. */
  readonly reject: boolean
  /** The hook's `message`, or the default one. */
  readonly message: string
  /** `should_logout_user` (the password hook only): end every session of the user. */
  readonly shouldLogoutUser: boolean
}

/**
 * Reads a verification attempt hook's output `{ decision, message, should_logout_user }`.
 *
 * @param output The hook's output (`undefined` for none: go on).
 * @param defaultMessage The message of a rejection without one.
 * @throws {@link InternalServerError} 500 "Error unmarshaling JSON output." when the output is not
 *   an object or a field has another type (as upstream's JSON decoding).
 */
export function readDecision(output: unknown, defaultMessage: string): HookDecision {
  if (output === undefined) return { reject: false, message: '', shouldLogoutUser: false }
  const bad = () => new InternalServerError('unexpected_failure', 'Error unmarshaling JSON output.')
  if (!isObject(output)) throw bad()
  const { decision = '', message = '', should_logout_user: logout = false } = output
  if (typeof decision !== 'string' || typeof message !== 'string' || typeof logout !== 'boolean') {
    throw bad()
  }
  return {
    reject: decision === 'reject',
    message: message === '' ? defaultMessage : message,
    shouldLogoutUser: logout,
  }
}
