/**
 * The `mail_queue` table (Gatehouse's, migration 0005): work handed off by requests, run by the
 * mail queue's worker (`services/shared/mail-queue.ts`).
 *
 * @module
 */
import type { Queryable } from '../storage/db.js'

/** A row of `mail_queue` as the worker sees it after claiming it. */
export interface QueuedJob {
  readonly id: string
  /** What to run: `recover`, `magic_link`, `mail`. */
  readonly job: string
  /** The job's JSON input. */
  readonly payload: unknown
  /** Runs started so far, this one included. */
  readonly attempts: number
  /** Epoch milliseconds after which the job is dropped instead of run. */
  readonly expiresAt: number
  /** Epoch milliseconds when it was queued. */
  readonly createdAt: number
}

interface Row {
  id: string
  job: string
  payload: unknown
  attempts: number
  expires_at: Date
  created_at: Date
}

/** A job to add; see {@link insertQueuedJob}. */
export interface NewQueuedJob {
  readonly id: string
  readonly job: string
  /** Serialised with `JSON.stringify`. */
  readonly payload: unknown
  /** Epoch milliseconds; due at once. */
  readonly now: number
  /** Epoch milliseconds after which it is dropped. */
  readonly expiresAt: number
}

/** Adds a job, due at once, inside `tx` (so that it exists exactly when `tx` commits). */
export async function insertQueuedJob(tx: Queryable, job: NewQueuedJob): Promise<void> {
  await tx.query(
    `INSERT INTO ${tx.t.mailQueue} (id, job, payload, created_at, run_at, expires_at)
     VALUES ($1, $2, $3::jsonb, $4, $4, $5)`,
    [job.id, job.job, JSON.stringify(job.payload), new Date(job.now), new Date(job.expiresAt)],
  )
}

/**
 * Claims up to `limit` due jobs (`run_at <= now`), oldest first, skipping rows another worker
 * holds: each is pushed to `now + leaseMs` and its attempt counted, so that no other worker takes
 * it while it runs, and it becomes due again if this worker dies.
 *
 * @param now Epoch milliseconds.
 */
export async function claimDueJobs(
  db: Queryable,
  now: number,
  limit: number,
  leaseMs: number,
): Promise<QueuedJob[]> {
  const { rows } = await db.query<Row>(
    `UPDATE ${db.t.mailQueue} SET run_at = $2, attempts = attempts + 1
     WHERE id IN (SELECT id FROM ${db.t.mailQueue} WHERE run_at <= $1
                  ORDER BY run_at LIMIT $3 FOR UPDATE SKIP LOCKED)
     RETURNING id, job, payload, attempts, expires_at, created_at`,
    [new Date(now), new Date(now + leaseMs), limit],
  )
  return rows.map((r) => ({
    id: r.id,
    job: r.job,
    payload: r.payload,
    attempts: r.attempts,
    expiresAt: r.expires_at.getTime(),
    createdAt: r.created_at.getTime(),
  }))
}

/** Removes a job that ran (or was dropped). */
export async function deleteQueuedJob(db: Queryable, id: string): Promise<void> {
  await db.query(`DELETE FROM ${db.t.mailQueue} WHERE id = $1`, [id])
}

/**
 * Makes a job due again at `runAt` (epoch milliseconds), recording why it did not run.
 *
 * @param error The reason, without secrets (it is stored).
 */
export async function rescheduleQueuedJob(
  db: Queryable,
  id: string,
  runAt: number,
  error: string,
): Promise<void> {
  await db.query(`UPDATE ${db.t.mailQueue} SET run_at = $2, last_error = $3 WHERE id = $1`, [
    id,
    new Date(runAt),
    error.slice(0, 1000),
  ])
}
