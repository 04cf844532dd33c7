import type { Queryable } from '../storage/db.js'

/** A row of `refresh_tokens`. */
export interface RefreshToken {
  /** `bigserial` id, as a string. */
  id: string
  token: string
  userId: string
  revoked: boolean
  createdAt: Date
  updatedAt: Date
  /** The token this one replaced, or `''`. */
  parent: string
  sessionId: string | null
}

interface RefreshTokenRow {
  id: string
  token: string
  user_id: string | null
  revoked: boolean | null
  created_at: Date | null
  updated_at: Date | null
  parent: string | null
  session_id: string | null
}

const COLUMNS =
  'id::text AS id, token, user_id, revoked, created_at, updated_at, parent, session_id'

function fromRow(r: RefreshTokenRow): RefreshToken {
  return {
    id: r.id,
    token: r.token,
    userId: r.user_id ?? '',
    revoked: r.revoked ?? false,
    createdAt: r.created_at ?? new Date(0),
    updatedAt: r.updated_at ?? new Date(0),
    parent: r.parent ?? '',
    sessionId: r.session_id,
  }
}

/**
 * Inserts a refresh token.
 *
 * @param parent The token it replaces (`''` for a session's first token).
 * @param now Epoch milliseconds.
 */
export async function insertRefreshToken(
  tx: Queryable,
  t: { token: string; userId: string; sessionId: string; parent: string },
  now: number,
): Promise<RefreshToken> {
  const { rows } = await tx.query<RefreshTokenRow>(
    `INSERT INTO ${tx.t.refreshTokens}
       (instance_id, token, user_id, revoked, created_at, updated_at, parent, session_id)
     VALUES ('00000000-0000-0000-0000-000000000000', $1, $2, false, $3, $3, NULLIF($4, ''), $5)
     RETURNING ${COLUMNS}`,
    [t.token, t.userId, new Date(now), t.parent, t.sessionId],
  )
  return fromRow(rows[0] as RefreshTokenRow)
}

/**
 * Looks a token up and locks its row until the transaction ends, so that concurrent refreshes of
 * one token run one after the other (each sees what the previous committed).
 */
export async function findRefreshTokenForUpdate(
  tx: Queryable,
  token: string,
): Promise<RefreshToken | undefined> {
  const { rows } = await tx.query<RefreshTokenRow>(
    `SELECT ${COLUMNS} FROM ${tx.t.refreshTokens} WHERE token = $1 FOR UPDATE`,
    [token],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/** Marks one token revoked (and sets `updated_at`, the start of its reuse interval). */
export async function revokeRefreshToken(tx: Queryable, id: string, now: number): Promise<void> {
  await tx.query(`UPDATE ${tx.t.refreshTokens} SET revoked = true, updated_at = $2 WHERE id = $1`, [
    id,
    new Date(now),
  ])
}

/** The newest non-revoked token of a session, or `undefined`. */
export async function findActiveTokenOfSession(
  tx: Queryable,
  sessionId: string,
): Promise<RefreshToken | undefined> {
  const { rows } = await tx.query<RefreshTokenRow>(
    `SELECT ${COLUMNS} FROM ${tx.t.refreshTokens}
     WHERE session_id = $1 AND revoked = false ORDER BY id DESC LIMIT 1`,
    [sessionId],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/**
 * Revokes every token descended from `token` (reuse detection): all tokens of its session, and
 * for session-less legacy tokens every token reachable through the `parent` chain.
 *
 * @returns How many tokens were revoked.
 */
export async function revokeTokenFamily(
  tx: Queryable,
  token: RefreshToken,
  now: number,
): Promise<number> {
  if (token.sessionId !== null) {
    const { rowCount } = await tx.query(
      `UPDATE ${tx.t.refreshTokens} SET revoked = true, updated_at = $2
       WHERE session_id = $1 AND revoked = false`,
      [token.sessionId, new Date(now)],
    )
    return rowCount
  }
  const { rowCount } = await tx.query(
    `WITH RECURSIVE family AS (
       SELECT id, token FROM ${tx.t.refreshTokens} WHERE token = $1
       UNION
       SELECT r.id, r.token FROM ${tx.t.refreshTokens} r JOIN family f ON r.parent = f.token
     )
     UPDATE ${tx.t.refreshTokens} SET revoked = true, updated_at = $2
     WHERE id IN (SELECT id FROM family) AND revoked = false`,
    [token.token, new Date(now)],
  )
  return rowCount
}
