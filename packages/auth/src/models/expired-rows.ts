/**
 * Deletion of rows that can no longer be used: PKCE flow states and MFA challenges past their
 * lifetime, sessions ended by `SESSIONS_TIMEBOX` or `SESSIONS_INACTIVITY_TIMEOUT`. Each call deletes at most `limit` rows, skipping rows another transaction holds
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

/**
 * Deletes up to `limit` sessions created before `before` (epoch milliseconds), with their
 * refresh tokens and AMR claims (by cascade).
 *
 * @returns How many were deleted.
 */
export function deleteSessionsCreatedBefore(
  db: Queryable,
  before: number,
  limit: number,
): Promise<number> {
  return deleteOlderThan(db, db.t.sessions, before, limit)
}

/**
 * Deletes up to `limit` sessions last active before `before` (epoch milliseconds): refreshed
 * before it, or never refreshed and holding an active refresh token last changed before it (as
 * upstream's clean-up decides).
 *
 * @returns How many were deleted.
 */
export async function deleteSessionsInactiveSince(
  db: Queryable,
  before: number,
  limit: number,
): Promise<number> {
  const t = db.t
  const { rowCount } = await db.query(
    `DELETE FROM ${t.sessions} WHERE id IN (
       SELECT s.id FROM ${t.sessions} s
       WHERE (s.refreshed_at IS NOT NULL AND s.refreshed_at < ($1::timestamptz AT TIME ZONE 'UTC'))
          OR (s.refreshed_at IS NULL AND EXISTS (
                SELECT 1 FROM ${t.refreshTokens} r
                WHERE r.session_id = s.id AND r.revoked = false AND r.updated_at < $1))
       LIMIT $2 FOR UPDATE OF s SKIP LOCKED)`,
    [new Date(before), limit],
  )
  return rowCount
}

/**
 * Deletes up to `limit` WebAuthn challenges that expired before `before` (epoch milliseconds).
 *
 * @returns How many were deleted.
 */
export async function deleteWebauthnChallengesExpiredBefore(
  db: Queryable,
  before: number,
  limit: number,
): Promise<number> {
  const table = db.t.webauthnChallenges
  const { rowCount } = await db.query(
    `DELETE FROM ${table} WHERE id IN (
       SELECT id FROM ${table} WHERE expires_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [new Date(before), limit],
  )
  return rowCount
}

/**
 * Deletes up to `limit` OAuth authorization requests (of any status) that expired before
 * `before` (epoch milliseconds).
 *
 * @returns How many were deleted.
 */
export async function deleteOAuthAuthorizationsExpiredBefore(
  db: Queryable,
  before: number,
  limit: number,
): Promise<number> {
  const table = db.t.oauthAuthorizations
  const { rowCount } = await db.query(
    `DELETE FROM ${table} WHERE id IN (
       SELECT id FROM ${table} WHERE expires_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [new Date(before), limit],
  )
  return rowCount
}
