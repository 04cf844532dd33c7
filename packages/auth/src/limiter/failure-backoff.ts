/**
 * An exponential back-off per target, kept in the database (`failed_attempts`) so that every
 * instance applies the same one: the password back-off of each account and the back-off of each
 * MFA factor.
 *
 * @module
 */
import {
  blockFailedAttempts,
  clearFailedAttempts,
  findFailedAttempts,
  recordFailedAttempt,
} from '../models/failed-attempt.js'
import type { Queryable } from '../storage/db.js'

/** Options of {@link FailureBackoff}. */
export interface FailureBackoffOptions {
  /** Failures allowed before the back-off starts; 0 turns it off. */
  readonly freeFailures: number
  /** The first delay, in milliseconds; each further failure doubles it. @default 1000 */
  readonly baseDelayMs?: number
  /** The longest delay, in milliseconds. @default 900000 (15 minutes) */
  readonly maxDelayMs?: number
  /** A target with no failure and no delay for this long (milliseconds) starts afresh. @default 3600000 */
  readonly forgetAfterMs?: number
}

/**
 * Exponential back-off of a target (beyond upstream): after `freeFailures` failures, each further
 * one refuses attempts at the target for a delay that starts at `baseDelayMs` and doubles up to
 * `maxDelayMs`; a success clears it. Callers decide what a target is and must answer the same
 * whether or not it exists. The state lives in the database given to each call (a transaction or
 * the pool), so every instance sees it; concurrent failures are all counted.
 */
export class FailureBackoff {
  readonly #free: number
  readonly #base: number
  readonly #max: number
  readonly #forget: number

  constructor(options: FailureBackoffOptions) {
    this.#free = options.freeFailures
    this.#base = options.baseDelayMs ?? 1_000
    this.#max = options.maxDelayMs ?? 900_000
    this.#forget = options.forgetAfterMs ?? 3_600_000
  }

  /**
   * Milliseconds `target` must still wait before its next attempt, 0 when it may try now.
   *
   * @param now Epoch milliseconds.
   */
  async wait(q: Queryable, target: string, now: number): Promise<number> {
    if (this.#free <= 0) return 0
    const found = await findFailedAttempts(q, target, now)
    return found?.blockedUntil ? Math.max(0, found.blockedUntil.getTime() - now) : 0
  }

  /**
   * Records a failure of `target` at `now` (epoch milliseconds).
   *
   * @returns Milliseconds `target` must now wait (0 while failures are free).
   */
  async failed(q: Queryable, target: string, now: number): Promise<number> {
    if (this.#free <= 0) return 0
    const failures = await recordFailedAttempt(q, target, now, now + this.#forget)
    const over = failures - this.#free
    if (over <= 0) return 0
    // 2 ** over stays finite: over is capped before the delay can pass the maximum.
    const delay = Math.min(this.#max, this.#base * 2 ** Math.min(over - 1, 40))
    await blockFailedAttempts(q, target, now + delay, now + delay + this.#forget)
    return delay
  }

  /** Forgets the failures of `target` (a success). */
  async succeeded(q: Queryable, target: string): Promise<void> {
    if (this.#free <= 0) return
    await clearFailedAttempts(q, target)
  }
}
