/**
 * The `failed_attempts` table (Gatehouse's own; upstream counts no failures): failed attempts per
 * target, in the database so that every instance sees the same counts. A target names what was
 * attempted, never a secret (`otp:<token type>:<user id>:<sent at>`, `mfa_challenge:<id>`,
 * `mfa_factor:<id>`, `password:<sha-256 of the account>`). A row lives until its `expires_at`;
 * after that the next failure starts again from one, and {@link purgeExpiredFailedAttempts}
 * removes it.
 *
 * @module
 */
import type { Queryable } from '../storage/db.js'

/** Expired rows one {@link purgeExpiredFailedAttempts} removes at most. */
const PURGE_BATCH = 100

/** The live failures of a target. */
export interface FailedAttempts {
  /** Failures recorded since the row was (re)started, at least 1. */
  readonly failures: number
  /** Until when attempts are refused (a back-off), or `null`. */
  readonly blockedUntil: Date | null
}

/**
 * The failures of `target` that have not expired at `now`, or `undefined`.
 *
 * @param now Epoch milliseconds.
 */
export async function findFailedAttempts(
  q: Queryable,
  target: string,
  now: number,
): Promise<FailedAttempts | undefined> {
  const { rows } = await q.query<{ failures: number; blocked_until: Date | null }>(
    `SELECT failures, blocked_until FROM ${q.t.failedAttempts} WHERE target = $1 AND expires_at > $2`,
    [target, new Date(now)],
  )
  const row = rows[0]
  return row ? { failures: row.failures, blockedUntil: row.blocked_until } : undefined
}

/**
 * Records one failure of `target` atomically: concurrent failures are all counted.
 *
 * @param now Epoch milliseconds of the failure.
 * @param expiresAt Epoch milliseconds until which the count is kept at least (a live row keeps
 *   the later of its own and this one).
 * @returns The failures of `target` now, this one included.
 */
export async function recordFailedAttempt(
  q: Queryable,
  target: string,
  now: number,
  expiresAt: number,
): Promise<number> {
  const table = q.t.failedAttempts
  const { rows } = await q.query<{ failures: number }>(
    `INSERT INTO ${table} AS f (target, failures, last_failed_at, blocked_until, expires_at)
     VALUES ($1, 1, $2, NULL, $3)
     ON CONFLICT (target) DO UPDATE SET
       failures = CASE WHEN f.expires_at <= EXCLUDED.last_failed_at THEN 1 ELSE f.failures + 1 END,
       blocked_until = CASE WHEN f.expires_at <= EXCLUDED.last_failed_at THEN NULL
                            ELSE f.blocked_until END,
       expires_at = CASE WHEN f.expires_at <= EXCLUDED.last_failed_at THEN EXCLUDED.expires_at
                         ELSE GREATEST(f.expires_at, EXCLUDED.expires_at) END,
       last_failed_at = EXCLUDED.last_failed_at
     RETURNING failures`,
    [target, new Date(now), new Date(Math.max(expiresAt, now + 1))],
  )
  return (rows[0] as { failures: number }).failures
}

/**
 * Refuses attempts at `target` until `until` (never shortening a longer block already set), and
 * keeps the row at least until `expiresAt`. Call it after {@link recordFailedAttempt}.
 *
 * @param until Epoch milliseconds.
 * @param expiresAt Epoch milliseconds.
 */
export async function blockFailedAttempts(
  q: Queryable,
  target: string,
  until: number,
  expiresAt: number,
): Promise<void> {
  await q.query(
    `UPDATE ${q.t.failedAttempts}
     SET blocked_until = GREATEST(COALESCE(blocked_until, $2), $2),
         expires_at = GREATEST(expires_at, $3)
     WHERE target = $1`,
    [target, new Date(until), new Date(expiresAt)],
  )
}

/**
 * Removes a batch of expired rows, skipping rows other transactions hold (it never waits). Run it
 * outside a transaction, so that its row locks end with the statement.
 *
 * @param now Epoch milliseconds.
 */
export async function purgeExpiredFailedAttempts(q: Queryable, now: number): Promise<void> {
  const table = q.t.failedAttempts
  await q.query(
    `DELETE FROM ${table} WHERE target IN (
       SELECT target FROM ${table} WHERE expires_at <= $1
       ORDER BY expires_at LIMIT ${String(PURGE_BATCH)} FOR UPDATE SKIP LOCKED)`,
    [new Date(now)],
  )
}

/** Forgets the failures of `target` (a success). */
export async function clearFailedAttempts(q: Queryable, target: string): Promise<void> {
  await q.query(`DELETE FROM ${q.t.failedAttempts} WHERE target = $1`, [target])
}
