import { randomUUID } from 'node:crypto'
import type { Queryable } from '../storage/db.js'
import { amrFromJson, amrJsonSql, type AmrEntry } from './amr-claim.js'
import { auditPayload, type AuditEntry } from './audit-log.js'
import { identitiesFromJson, identitiesJsonSql, type Identity } from './identity.js'
import {
  prefixedSessionColumns,
  sessionFromPrefixed,
  validIp,
  type PrefixedSessionRow,
  type Session,
  type SessionClient,
} from './session.js'
import { userColumns, userFromRow, type User, type UserRow } from './user.js'

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

/** A locked refresh token with everything the grant needs; see {@link lockRefreshToken}. */
export interface LockedRefreshToken {
  readonly token: RefreshToken
  /** The token's user, or `undefined` when it no longer exists. */
  readonly user: User | undefined
  readonly identities: Identity[]
  /** The token's session, or `undefined` when it no longer exists. */
  readonly session: Session | undefined
  /** The session's `amr` entries, newest first. */
  readonly amr: AmrEntry[]
}

type LockedRow = UserRow &
  PrefixedSessionRow & {
    rt_id: string
    rt_token: string
    rt_user_id: string | null
    rt_revoked: boolean | null
    rt_created_at: Date | null
    rt_updated_at: Date | null
    rt_parent: string | null
    rt_session_id: string | null
    identities_json: unknown
    amr_json: unknown
  }

/**
 * Looks a token up and locks its row until the transaction ends, so that concurrent refreshes of
 * one token run one after the other, and reads its user, identities, session and AMR claims in
 * the same round trip.
 *
 * @returns `undefined` when no such token exists.
 */
export async function lockRefreshToken(
  tx: Queryable,
  token: string,
): Promise<LockedRefreshToken | undefined> {
  const t = tx.t
  const { rows } = await tx.query<LockedRow>(
    `SELECT r.id::text AS rt_id, r.token AS rt_token, r.user_id AS rt_user_id, r.revoked AS rt_revoked,
       r.created_at AS rt_created_at, r.updated_at AS rt_updated_at, r.parent AS rt_parent,
       r.session_id AS rt_session_id, ${userColumns('u')},
       ${identitiesJsonSql(t.identities, 'u.id')} AS identities_json,
       ${prefixedSessionColumns('s')}, ${amrJsonSql(t.mfaAmrClaims, 's.id')} AS amr_json
     FROM ${t.refreshTokens} r
       LEFT JOIN ${t.users} u ON u.id = r.user_id::uuid
       LEFT JOIN ${t.sessions} s ON s.id = r.session_id
     WHERE r.token = $1
     FOR UPDATE OF r`,
    [token],
  )
  const row = rows[0]
  if (!row) return undefined
  return {
    token: fromRow({
      id: row.rt_id,
      token: row.rt_token,
      user_id: row.rt_user_id,
      revoked: row.rt_revoked,
      created_at: row.rt_created_at,
      updated_at: row.rt_updated_at,
      parent: row.rt_parent,
      session_id: row.rt_session_id,
    }),
    user: (row.id as string | null) === null ? undefined : userFromRow(row),
    identities: identitiesFromJson(row.identities_json),
    session: sessionFromPrefixed(row),
    amr: amrFromJson(row.amr_json),
  }
}

/**
 * One rotation in a single statement: revokes `parent` (if still active), inserts its child,
 * appends the audit entries (`token_revoked` only when `parent` was active, then
 * `token_refreshed`) and records the refresh on the session.
 *
 * @param now Epoch milliseconds.
 * @returns The child token's value.
 */
export async function rotateRefreshToken(
  tx: Queryable,
  r: {
    parent: RefreshToken
    child: string
    sessionId: string
    client: SessionClient
    revokedAudit: AuditEntry
    refreshedAudit: AuditEntry
  },
  now: number,
): Promise<string> {
  const t = tx.t
  const nil = '00000000-0000-0000-0000-000000000000'
  const { rows } = await tx.query<{ token: string }>(
    `WITH revoked AS (
       UPDATE ${t.refreshTokens} SET revoked = true, updated_at = $1
       WHERE id = $2 AND revoked = false RETURNING id
     ), child AS (
       INSERT INTO ${t.refreshTokens}
         (instance_id, token, user_id, revoked, created_at, updated_at, parent, session_id)
       VALUES ('${nil}', $3, $4, false, $1, $1, $5, $6) RETURNING token
     ), audit AS (
       INSERT INTO ${t.auditLogEntries} (instance_id, id, payload, created_at, ip_address)
       SELECT '${nil}'::uuid, $7::uuid, $8::json, $1::timestamptz, $11::varchar FROM revoked
       UNION ALL SELECT '${nil}'::uuid, $9::uuid, $10::json, $1::timestamptz, $11::varchar
     ), touched AS (
       UPDATE ${t.sessions} SET refreshed_at = $1::timestamptz AT TIME ZONE 'UTC', updated_at = $1,
         user_agent = COALESCE(NULLIF($12, ''), user_agent), ip = COALESCE(NULLIF($13, '')::inet, ip)
       WHERE id = $6
     )
     SELECT token FROM child`,
    [
      new Date(now),
      r.parent.id,
      r.child,
      r.parent.userId,
      r.parent.token,
      r.sessionId,
      randomUUID(),
      JSON.stringify(auditPayload(r.revokedAudit)),
      randomUUID(),
      JSON.stringify(auditPayload(r.refreshedAudit)),
      r.refreshedAudit.ip.slice(0, 64),
      r.client.userAgent,
      validIp(r.client.ip),
    ],
  )
  return (rows[0] as { token: string }).token
}
