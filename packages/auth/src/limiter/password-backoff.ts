import { createHash } from 'node:crypto'
import { purgeExpiredFailedAttempts } from '../models/failed-attempt.js'
import type { Queryable } from '../storage/db.js'
import { FailureBackoff, type FailureBackoffOptions } from './failure-backoff.js'

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

  /** Forgets the failures of `identifier` (a successful sign-in). */
  async succeeded(q: Queryable, identifier: string): Promise<void> {
    if (identifier.length > MAX_IDENTIFIER_LENGTH) return
    await this.#backoff.succeeded(q, targetOf(identifier))
  }
}
