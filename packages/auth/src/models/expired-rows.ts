/**
 * Deletion of rows that can no longer be used: PKCE flow states and MFA challenges past their
 * lifetime. Each call deletes at most `limit` rows, skipping rows another transaction holds
 * (as upstream's `models/cleanup.go` does), so that a clean-up never waits on, or blocks, a
 * request.
 *
 * @module
 */
import type { Queryable } from '../storage/db.js'

async function deleteOlderThan(
  db: Queryable,
  table: string,
  before: number,
  limit: number,
): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM ${table} WHERE id IN (
       SELECT id FROM ${table} WHERE created_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [new Date(before), limit],
  )
  return rowCount
}

/**
 * Deletes up to `limit` flow states created before `before` (epoch milliseconds).
 *
 * @returns How many were deleted.
 */
export function deleteFlowStatesCreatedBefore(
  db: Queryable,
  before: number,
  limit: number,
): Promise<number> {
  return deleteOlderThan(db, db.t.flowState, before, limit)
}

/**
 * Deletes up to `limit` MFA challenges created before `before` (epoch milliseconds).
 *
 * @returns How many were deleted.
 */
export function deleteChallengesCreatedBefore(
  db: Queryable,
  before: number,
  limit: number,
): Promise<number> {
  return deleteOlderThan(db, db.t.mfaChallenges, before, limit)
}
