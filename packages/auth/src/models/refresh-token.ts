import { statementFor, type Queryable, type Tables } from '../storage/db.js'
import { amrFromJson, amrJsonSql, type AmrEntry } from './amr-claim.js'
import { auditPayload, auditPayloadSql, type AuditEntry } from './audit-log.js'
import { factorsFromJson, factorsJsonSql, type Factor } from './factor.js'
import { identitiesFromJson, identitiesJsonSql, type Identity } from './identity.js'
import {
  SESSION_JSON_OF_S,
  sessionFromJson,
  validIp,
  type Session,
  type SessionClient,
} from './session.js'
import { userFromJson, userJsonSql, type User } from './user.js'

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
 * Deletes every refresh token of a session (when the session's level changes, tokens issued
 * before the change must not refresh it, within the reuse interval or not).
 *
 * @returns How many tokens were deleted.
 */
export async function deleteTokensOfSession(tx: Queryable, sessionId: string): Promise<number> {
  const { rowCount } = await tx.query(`DELETE FROM ${tx.t.refreshTokens} WHERE session_id = $1`, [
    sessionId,
  ])
  return rowCount
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

/** A refresh token with everything the grant needs; see {@link lockRefreshToken}. */
export interface LockedRefreshToken {
  readonly token: RefreshToken
  /** The token's user, or `undefined` when it no longer exists. */
  readonly user: User | undefined
  readonly identities: Identity[]
  /** The token's session, or `undefined` when it has none (then nothing is locked). */
  readonly session: Session | undefined
  /** The session's `amr` entries, newest first. */
  readonly amr: AmrEntry[]
  /** The user's MFA factors, oldest first. */
  readonly factors: Factor[]
}

interface LockedRow {
  /** The user's row ({@link userJsonSql}), null when the token has no user. */
  user_json: unknown
  /** The session ({@link SESSION_JSON_OF_S}), null when the token has none. */
  session_json: unknown
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
  factors_json: unknown
}

/**
 * The user columns of {@link tokenSelectSql} besides the whole row as JSON: what the rotation's
 * later steps read from the locked row (its checks and the audit payload, `auditPayloadSql`).
 */
const LOCK_USER_COLUMNS =
  'u.id, u.banned_until, u.is_sso_user, u.email, u.phone, u.raw_user_meta_data'

/** The session columns of {@link tokenSelectSql} that the rotation's later steps read. */
const LOCK_SESSION_COLUMNS =
  's.id AS s_id, s.not_after AS s_not_after, s.oauth_client_id AS s_oauth_client_id'

/** The columns of {@link tokenSelectSql} that {@link lockedFromRow} reads. */
const LOCKED_OUTPUT = [
  'rt_id',
  'rt_token',
  'rt_user_id',
  'rt_revoked',
  'rt_created_at',
  'rt_updated_at',
  'rt_parent',
  'rt_session_id',
  'user_json',
  'identities_json',
  'factors_json',
  'session_json',
  'amr_json',
]
  .map((column) => `locked.${column}`)
  .join(', ')

/**
 * The `SELECT` of a token with its user, identities, factors, session and AMR claims (one row).
 *
 * With `lock`, the session row and then the token row are locked (`FOR UPDATE OF s, r`, in that
 * order: the order of every path that changes a session's tokens, such as logout deleting the
 * session and its tokens by cascade), so a session's refreshes run one after the other, and the
 * locked rows are read as they are once the lock is granted (a session-less token is not found).
 * Without it, nothing is locked and a session-less token is found with NULL session columns.
 */
function tokenSelectSql(t: Tables, lock: boolean): string {
  return lock ? lockedTokenSelect(t) : unlockedTokenSelect(t)
}

function buildTokenSelect(t: Tables, lock: boolean): string {
  return `SELECT r.id::text AS rt_id, r.token AS rt_token, r.user_id AS rt_user_id,
       r.revoked AS rt_revoked, r.created_at AS rt_created_at, r.updated_at AS rt_updated_at,
       r.parent AS rt_parent, r.session_id AS rt_session_id, ${userJsonSql('u')} AS user_json,
       ${LOCK_USER_COLUMNS},
       ${identitiesJsonSql(t.identities, 'u.id')} AS identities_json,
       ${factorsJsonSql(t.mfaFactors, 'u.id')} AS factors_json,
       ${SESSION_JSON_OF_S} AS session_json, ${LOCK_SESSION_COLUMNS},
       ${amrJsonSql(t.mfaAmrClaims, 's.id')} AS amr_json
     FROM ${t.refreshTokens} r
       ${lock ? 'JOIN' : 'LEFT JOIN'} ${t.sessions} s ON s.id = r.session_id
       LEFT JOIN ${t.users} u ON u.id = r.user_id::uuid
     WHERE r.token = $1${lock ? '\n     FOR UPDATE OF s, r' : ''}`
}

const lockedTokenSelect = statementFor((t) => buildTokenSelect(t, true))
const unlockedTokenSelect = statementFor((t) => buildTokenSelect(t, false))

function lockedFromRow(row: LockedRow): LockedRefreshToken {
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
    user: userFromJson(row.user_json),
    identities: identitiesFromJson(row.identities_json),
    session: sessionFromJson(row.session_json),
    amr: amrFromJson(row.amr_json),
    factors: factorsFromJson(row.factors_json),
  }
}

/**
 * Looks a token up with its user, identities, session and AMR claims, locking its session's row
 * and then its own until the transaction ends: every refresh of one session (and reuse
 * detection revoking its tokens) runs one after the other. A token without a session is read
 * without a lock (the grant refuses it).
 *
 * @returns `undefined` when no such token exists.
 */
export async function lockRefreshToken(
  tx: Queryable,
  token: string,
): Promise<LockedRefreshToken | undefined> {
  const locked = await tx.query<LockedRow>(tokenSelectSql(tx.t, true), [token])
  const row =
    locked.rows[0] ?? (await tx.query<LockedRow>(tokenSelectSql(tx.t, false), [token])).rows[0]
  return row ? lockedFromRow(row) : undefined
}

/** A token rotated by {@link rotateActiveRefreshToken}: its user and session, and the child. */
export interface RotatedRefreshToken extends LockedRefreshToken {
  readonly user: User
  readonly session: Session
  /** The child token's value. */
  readonly child: string
}

/** What {@link rotateActiveRefreshToken} needs besides the presented token. */
export interface RotationRequest {
  /** The new token's value. */
  readonly child: string
  readonly client: SessionClient
  /** Client IP for the audit entries (up to 64 characters kept). */
  readonly ip: string
  /** Ids of the `token_revoked` and `token_refreshed` audit entries (random UUIDs). */
  readonly auditIds: readonly [string, string]
  /** Whether the audit entries are written (not `AUDIT_LOG_DISABLE_POSTGRES`). */
  readonly audit: boolean
  /** The OAuth client the session must be issued to, `null` for a session of no client. */
  readonly oauthClientId: string | null
}

/** The statement of {@link rotateActiveRefreshToken} (see there). */
const rotationSql = statementFor((t) => {
  const nil = '00000000-0000-0000-0000-000000000000'
  return `WITH locked AS MATERIALIZED (
     ${tokenSelectSql(t, true)}
   ), ok AS (
     SELECT * FROM locked
     WHERE rt_revoked IS NOT TRUE AND id IS NOT NULL
       AND (banned_until IS NULL OR banned_until <= $2)
       AND (s_not_after IS NULL OR s_not_after >= $2)
       AND s_oauth_client_id IS NOT DISTINCT FROM $10::uuid
   ), revoked AS (
     UPDATE ${t.refreshTokens} SET revoked = true, updated_at = $2
     WHERE id = (SELECT rt_id::bigint FROM ok) AND revoked IS NOT TRUE RETURNING id
   ), child AS (
     INSERT INTO ${t.refreshTokens}
       (instance_id, token, user_id, revoked, created_at, updated_at, parent, session_id)
     SELECT '${nil}', $3, rt_user_id, false, $2, $2, rt_token, rt_session_id FROM ok
     RETURNING token
   ), audit AS (
     INSERT INTO ${t.auditLogEntries} (instance_id, id, payload, created_at, ip_address)
     SELECT '${nil}'::uuid, $4::uuid, ${auditPayloadSql('ok', 'token_revoked')}, $2, $6
     FROM ok, revoked WHERE $9::boolean
     UNION ALL
     SELECT '${nil}'::uuid, $5::uuid, ${auditPayloadSql('ok', 'token_refreshed')}, $2, $6
     FROM ok WHERE $9::boolean
   ), touched AS (
     UPDATE ${t.sessions} SET refreshed_at = $2::timestamptz AT TIME ZONE 'UTC', updated_at = $2,
       user_agent = COALESCE(NULLIF($7, ''), user_agent), ip = COALESCE(NULLIF($8, '')::inet, ip)
     WHERE id = (SELECT s_id FROM ok)
   )
   SELECT ${LOCKED_OUTPUT}, (SELECT token FROM child) AS child_token FROM locked`
})

/**
 * The common refresh in one statement, outside any transaction (a single round trip): locks the
 * token's session and the token (as {@link lockRefreshToken}), and when the token is active, its
 * user exists and is not banned and the session has not passed `not_after`, revokes it, inserts
 * its child, appends the `token_revoked` and `token_refreshed` audit entries and records the
 * refresh on the session. Anything else (unknown, revoked, banned, expired) changes nothing and
 * is left to the transactional path, which decides with the same rules.
 *
 * @param now Epoch milliseconds.
 * @returns The token's data and the child's value, or `undefined` when nothing was rotated.
 */
export async function rotateActiveRefreshToken(
  db: Queryable,
  token: string,
  r: RotationRequest,
  now: number,
): Promise<RotatedRefreshToken | undefined> {
  const { rows } = await db.query<LockedRow & { child_token: string | null }>(rotationSql(db.t), [
    token,
    new Date(now),
    r.child,
    r.auditIds[0],
    r.auditIds[1],
    r.ip.slice(0, 64),
    r.client.userAgent,
    validIp(r.client.ip),
    r.audit,
    r.oauthClientId,
  ])
  const row = rows[0]
  if (!row?.child_token) return undefined
  const locked = lockedFromRow(row)
  // A child is only inserted for a token with a user and a session. Listed, not spread: on Node
  // 20 a spread followed by a new key costs about a microsecond (see `claimsFor`).
  return {
    token: locked.token,
    user: locked.user as User,
    identities: locked.identities,
    session: locked.session as Session,
    amr: locked.amr,
    factors: locked.factors,
    child: row.child_token,
  }
}

/**
 * One rotation in a single statement: revokes `parent` (if still active), inserts its child,
 * appends the audit entries (`token_revoked` only when `parent` was active, then
 * `token_refreshed`) and records the refresh on the session.
 *
 * @param now Epoch milliseconds.
 * @returns The child token's value, and whether `parent` was revoked by this call.
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
    /** Whether the audit entries are written (not `AUDIT_LOG_DISABLE_POSTGRES`). */
    audit: boolean
  },
  now: number,
): Promise<{ readonly token: string; readonly revoked: boolean }> {
  const t = tx.t
  const nil = '00000000-0000-0000-0000-000000000000'
  const { rows } = await tx.query<{ token: string; revoked: boolean }>(
    `WITH revoked AS (
       UPDATE ${t.refreshTokens} SET revoked = true, updated_at = $1
       WHERE id = $2 AND revoked = false RETURNING id
     ), child AS (
       INSERT INTO ${t.refreshTokens}
         (instance_id, token, user_id, revoked, created_at, updated_at, parent, session_id)
       VALUES ('${nil}', $3, $4, false, $1, $1, $5, $6) RETURNING token
     ), audit AS (
       INSERT INTO ${t.auditLogEntries} (instance_id, id, payload, created_at, ip_address)
       SELECT '${nil}'::uuid, $7::uuid, $8::json, $1::timestamptz, $11::varchar
       FROM revoked WHERE $14::boolean
       UNION ALL SELECT '${nil}'::uuid, $9::uuid, $10::json, $1::timestamptz, $11::varchar
       WHERE $14::boolean
     ), touched AS (
       UPDATE ${t.sessions} SET refreshed_at = $1::timestamptz AT TIME ZONE 'UTC', updated_at = $1,
         user_agent = COALESCE(NULLIF($12, ''), user_agent), ip = COALESCE(NULLIF($13, '')::inet, ip)
       WHERE id = $6
     )
     SELECT token, EXISTS (SELECT 1 FROM revoked) AS revoked FROM child`,
    [
      new Date(now),
      r.parent.id,
      r.child,
      r.parent.userId,
      r.parent.token,
      r.sessionId,
      r.revokedAudit.id,
      JSON.stringify(auditPayload(r.revokedAudit)),
      r.refreshedAudit.id,
      JSON.stringify(auditPayload(r.refreshedAudit)),
      r.refreshedAudit.ip.slice(0, 64),
      r.client.userAgent,
      validIp(r.client.ip),
      r.audit,
    ],
  )
  return rows[0] as { token: string; revoked: boolean }
}
