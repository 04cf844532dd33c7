import { createHash } from 'node:crypto'
import { purgeExpiredFailedAttempts } from '../models/failed-attempt.js'
import type { Queryable } from '../storage/db.js'
import { FailureBackoff, type FailureBackoffOptions } from './failure-backoff.js'

/**
 * The account a password sign-in names, as the back-off keys it: the email (lower-cased) or the
 * normalised phone, within the audience. Sign-ins and password changes build it here, so that a
 * change clears exactly what sign-ins counted.
 *
 * @param kind Which identifier `value` is.
 * @param aud The audience (`aud`) of the client or of the user.
 * @param value An email (any case) or a normalised phone number (digits only).
 */
export function passwordAccount(kind: 'email' | 'phone', aud: string, value: string): string {
  return `${kind}:${aud}:${kind === 'email' ? value.toLowerCase() : value}`
}

/** Options of {@link PasswordBackoff}. */
export interface PasswordBackoffOptions extends FailureBackoffOptions {
  /** Failed passwords allowed before the back-off starts (`RATE_LIMIT_PASSWORD_FAILURES`); 0: off. */
  readonly freeFailures: number
}

/**
 * Longest identifier tracked (an email is at most 320 characters); longer ones cannot belong to
 * an account and are not recorded.
 */
const MAX_IDENTIFIER_LENGTH = 1024

/** The `failed_attempts` target of an account: a hash, so that typed addresses are not stored. */
function targetOf(identifier: string): string {
  return `password:${createHash('sha256').update(identifier).digest('hex')}`
}

/**
 * Per-account back-off of password sign-ins (beyond upstream, independent of client addresses):
 * after `freeFailures` failed passwords for one email or phone, each further failure refuses
 * sign-ins for that identifier for a delay that starts at `baseDelayMs` and doubles up to
 * `maxDelayMs`; a successful sign-in clears it. It is keyed by the identifier as typed
 * (normalised), before any lookup, so an unknown account is treated exactly as a known one: the
 * same answers at the same moments. The state is a {@link FailureBackoff} in the database, shared
 * by every instance, which stores a SHA-256 of the identifier.
 */
export class PasswordBackoff {
  readonly #backoff: FailureBackoff

  constructor(options: PasswordBackoffOptions) {
    this.#backoff = new FailureBackoff(options)
  }

  /**
   * Milliseconds `identifier` must still wait before its next sign-in, 0 when it may try now.
   *
   * @param now Epoch milliseconds.
   */
  wait(q: Queryable, identifier: string, now: number): Promise<number> {
    if (identifier.length > MAX_IDENTIFIER_LENGTH) return Promise.resolve(0)
    return this.#backoff.wait(q, targetOf(identifier), now)
  }

  /**
   * Records a failed password for `identifier` at `now` (epoch milliseconds), and removes a batch
   * of expired failure rows of any target.
   *
   * @param q The database itself, not a transaction (the purge's row locks end with its
   *   statement).
   */
  async failed(q: Queryable, identifier: string, now: number): Promise<void> {
    if (identifier.length > MAX_IDENTIFIER_LENGTH) return
    await this.#backoff.failed(q, targetOf(identifier), now)
    await purgeExpiredFailedAttempts(q, now)
  }

  /**
   * Forgets the failures of every account of a user (its email and its phone, each when set): its
   * password changed, so guesses at the old one say nothing any more, and the user who just
   * proved the account theirs (a password reset) signs in at once.
   */
  async forgetUser(
    q: Queryable,
    user: { readonly aud: string; readonly email: string; readonly phone: string },
  ): Promise<void> {
    if (user.email !== '') await this.succeeded(q, passwordAccount('email', user.aud, user.email))
    if (user.phone !== '') await this.succeeded(q, passwordAccount('phone', user.aud, user.phone))
  }

  /** Forgets the failures of `identifier` (a successful sign-in). */
  async succeeded(q: Queryable, identifier: string): Promise<void> {
    if (identifier.length > MAX_IDENTIFIER_LENGTH) return
    await this.#backoff.succeeded(q, targetOf(identifier))
  }
}
