/**
 * Attempt limits of everything a guess can reach (beyond upstream, which counts nothing): wrong
 * answers to one one-time code, reauthentication nonce or MFA challenge are counted in the
 * database, and the `SECURITY_OTP_MAX_ATTEMPTS`-th invalidates it; MFA factors back off
 * exponentially after as many failures. Counts live in `failed_attempts`, so every instance sees
 * them; the caller records a failure in the transaction that checked the answer (with the
 * target's row locked), commits it, and only then answers, so concurrent guesses are all counted.
 *
 * @module
 */
import type { Settings } from '../../conf/settings.js'
import type { AppContext } from '../../context.js'
import { FailureBackoff } from '../../limiter/failure-backoff.js'
import { purgeExpiredFailedAttempts, recordFailedAttempt } from '../../models/failed-attempt.js'
import type { Queryable } from '../../storage/db.js'

/** How long a code's count is kept at least, past the code's own end (milliseconds). */
const KEEP_COUNT_MS = 3_600_000

/**
 * Counts one wrong answer to a one-time code, nonce or challenge.
 *
 * @param target What was answered (see `models/failed-attempt.ts`), unique per code: it names
 *   the code's owner and when it was sent, or the challenge.
 * @param codeExpiresAt Epoch milliseconds at which the code expires: the count is kept at least
 *   that long (and an hour), so that waiting never restores guesses.
 * @param now Epoch milliseconds.
 * @returns Whether the code has had all its `SECURITY_OTP_MAX_ATTEMPTS` answers: the caller
 *   invalidates it in the same transaction.
 */
export async function countWrongAnswer(
  ctx: Pick<AppContext, 'settings'>,
  tx: Queryable,
  target: string,
  codeExpiresAt: number,
  now: number,
): Promise<boolean> {
  const failures = await recordFailedAttempt(
    tx,
    target,
    now,
    Math.max(codeExpiresAt, now) + KEEP_COUNT_MS,
  )
  return failures >= ctx.settings.security.otpMaxAttempts
}

/**
 * The back-off of MFA factors: `SECURITY_OTP_MAX_ATTEMPTS` free failures per factor (over all
 * its challenges), then 1 s doubling up to 15 minutes, as the password back-off.
 */
export function factorBackoff(settings: Pick<Settings, 'security'>): FailureBackoff {
  return new FailureBackoff({ freeFailures: settings.security.otpMaxAttempts })
}

/** The `failed_attempts` target of an MFA factor's back-off. */
export function factorTarget(factorId: string): string {
  return `mfa_factor:${factorId}`
}

/**
 * Removes a batch of expired counts. Call it after the transaction that counted a failure has
 * ended (its row locks must not be held across other work).
 */
export async function purgeExpiredAttempts(ctx: Pick<AppContext, 'db' | 'clock'>): Promise<void> {
  await purgeExpiredFailedAttempts(ctx.db, ctx.clock.now())
}
