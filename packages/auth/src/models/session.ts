import type { Queryable } from '../storage/db.js'
import { rowFromJson } from './json.js'

/** Authenticator assurance level of a session. */
export type Aal = 'aal1' | 'aal2' | 'aal3'

/** A row of `sessions`. */
export interface Session {
  id: string
  userId: string
  createdAt: Date
  updatedAt: Date
  aal: Aal
  notAfter: Date | null
  /** Last refresh (`refreshed_at`), or `null` before the first. */
  refreshedAt: Date | null
  /** `tag`, or `null` (see {@link sessionTag}). */
  tag: string | null
  /** The OAuth client whose tokens these are (`oauth_client_id`), or `null`. */
  oauthClientId?: string | null
  /** The scopes granted to that client (`scopes`, space-separated), or `null`. */
  scopes?: string | null
}

interface SessionRow {
  id: string
  user_id: string
  created_at: Date | null
  updated_at: Date | null
  aal: Aal | null
  not_after: Date | null
  refreshed_at: Date | null
  tag: string | null
  oauth_client_id: string | null
  scopes: string | null
}

/**
 * What reads session column `c` (of `alias`, else unqualified): `refreshed_at` is stored in UTC
 * without a time zone, so it is read back as UTC.
 */
function sessionColumn(c: (typeof SESSION_COLUMNS)[number], alias?: string): string {
  const of = alias === undefined ? '' : `${alias}.`
  return c === 'refreshed_at' ? `(${of}refreshed_at AT TIME ZONE 'UTC')` : `${of}${c}`
}

const SESSION_COLUMNS = [
  'id',
  'user_id',
  'created_at',
  'updated_at',
  'aal',
  'not_after',
  'refreshed_at',
  'tag',
  'oauth_client_id',
  'scopes',
] as const

const RETURNING = SESSION_COLUMNS.map((c) => `${sessionColumn(c)} AS ${c}`).join(', ')

/**
 * The session of `alias` as one `json` value, `NULL` when an outer join found none: the hot
 * queries' way to read a joined session (see `userJsonSql`). Read with {@link sessionFromJson}.
 */
function sessionJsonSql(alias: string): string {
  const fields = SESSION_COLUMNS.map((c) => `'${c}', ${sessionColumn(c, alias)}`).join(', ')
  return `CASE WHEN ${alias}.id IS NULL THEN NULL ELSE json_build_object(${fields}) END`
}

/** The timestamp columns of {@link SessionRow}, which {@link sessionJsonSql} gives as text. */
const SESSION_TIMESTAMP_COLUMNS = ['created_at', 'updated_at', 'not_after', 'refreshed_at'] as const

/** @internal {@link sessionJsonSql} of the alias `s`, built once: the hot queries' alias. */
export const SESSION_JSON_OF_S = sessionJsonSql('s')

/**
 * Reads the value of {@link sessionJsonSql} (the driver parses `json`; text is parsed here).
 *
 * @returns The session, or `undefined` when the value is null (no session).
 * @internal
 */
export function sessionFromJson(value: unknown): Session | undefined {
  const row = rowFromJson(value, SESSION_TIMESTAMP_COLUMNS)
  return row && fromRow(row as unknown as SessionRow)
}

function fromRow(r: SessionRow): Session {
  return {
    id: r.id,
    userId: r.user_id,
    createdAt: r.created_at ?? new Date(0),
    updatedAt: r.updated_at ?? new Date(0),
    aal: r.aal ?? 'aal1',
    notAfter: r.not_after,
    refreshedAt: r.refreshed_at,
    tag: r.tag,
    oauthClientId: r.oauth_client_id,
    scopes: r.scopes,
  }
}

/** Client details recorded on a session. */
export interface SessionClient {
  /** `User-Agent` header, or `''`. */
  userAgent: string
  /** Client IP address, or `''`. */
  ip: string
}

/**
 * Inserts a session at `aal1`.
 *
 * @param now Epoch milliseconds for the timestamps.
 */
export async function insertSession(
  tx: Queryable,
  s: { id: string; userId: string; notAfter?: Date | null },
  client: SessionClient,
  now: number,
): Promise<Session> {
  const { rows } = await tx.query<SessionRow>(
    `INSERT INTO ${tx.t.sessions} (id, user_id, created_at, updated_at, aal, user_agent, ip,
       not_after)
     VALUES ($1, $2, $3, $3, 'aal1', NULLIF($4, ''), NULLIF($5, '')::inet, $6)
     RETURNING ${RETURNING}`,
    [s.id, s.userId, new Date(now), client.userAgent, validIp(client.ip), s.notAfter ?? null],
  )
  return fromRow(rows[0] as SessionRow)
}

/** @internal `ip` if it looks like an IP address (for the `inet` column), else `''`. */
export function validIp(ip: string): string {
  return /^[0-9a-fA-F:.]+$/.test(ip) && ip.length <= 45 ? ip : ''
}

/** The session with this id, or `undefined`. */
export async function findSessionById(tx: Queryable, id: string): Promise<Session | undefined> {
  const { rows } = await tx.query<SessionRow>(
    `SELECT ${RETURNING} FROM ${tx.t.sessions} WHERE id = $1`,
    [id],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/**
 * Raises a session to `aal2` through a factor (`sessions.aal`, `sessions.factor_id`), locking its
 * row until the transaction ends.
 *
 * @param now Epoch milliseconds for `updated_at`.
 * @returns The session as it is now, or `undefined` when it no longer exists.
 */
export async function raiseSessionToAal2(
  tx: Queryable,
  id: string,
  factorId: string,
  now: number,
): Promise<Session | undefined> {
  const { rows } = await tx.query<SessionRow>(
    `UPDATE ${tx.t.sessions} SET aal = 'aal2', factor_id = $2, updated_at = $3 WHERE id = $1
     RETURNING ${RETURNING}`,
    [id, factorId, new Date(now)],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/**
 * Deletes the user's sessions below `aal2` (upstream `InvalidateSessionsWithAALLessThan`, after a
 * factor is verified: sessions that did not pass the second factor end).
 */
export async function deleteSessionsBelowAal2(tx: Queryable, userId: string): Promise<void> {
  await tx.query(`DELETE FROM ${tx.t.sessions} WHERE user_id = $1 AND aal < 'aal2'`, [userId])
}

/** Records a refresh on the session: `refreshed_at`, `updated_at`, user agent and IP. */
export async function touchSession(
  tx: Queryable,
  id: string,
  client: SessionClient,
  now: number,
): Promise<void> {
  await tx.query(
    `UPDATE ${tx.t.sessions} SET refreshed_at = $2::timestamptz AT TIME ZONE 'UTC', updated_at = $2,
       user_agent = COALESCE(NULLIF($3, ''), user_agent), ip = COALESCE(NULLIF($4, '')::inet, ip)
     WHERE id = $1`,
    [id, new Date(now), client.userAgent, validIp(client.ip)],
  )
}

/**
 * Deletes sessions of a user (their refresh tokens and AMR claims go with them, by cascade).
 *
 * @param scope `all`, `only` (the given session) or `except` (all but the given session).
 * @returns How many sessions were deleted.
 */
export async function deleteSessions(
  tx: Queryable,
  userId: string,
  scope: 'all' | 'only' | 'except',
  sessionId?: string,
): Promise<number> {
  const condition =
    scope === 'all' ? '' : scope === 'only' ? ' AND id = $2' : ' AND id IS DISTINCT FROM $2'
  const params = scope === 'all' ? [userId] : [userId, sessionId ?? null]
  const { rowCount } = await tx.query(
    `DELETE FROM ${tx.t.sessions} WHERE user_id = $1${condition}`,
    params,
  )
  return rowCount
}

/** The user's sessions, oldest first. */
export async function listSessionsOfUser(tx: Queryable, userId: string): Promise<Session[]> {
  const { rows } = await tx.query<SessionRow>(
    `SELECT ${RETURNING} FROM ${tx.t.sessions} WHERE user_id = $1 ORDER BY created_at, id`,
    [userId],
  )
  return rows.map(fromRow)
}

/** A session as its user sees it in a device list (`GET /user/sessions`). */
export interface DeviceSession {
  readonly id: string
  readonly createdAt: Date
  readonly updatedAt: Date
  /** Last refresh, or `null` before the first. */
  readonly refreshedAt: Date | null
  readonly notAfter: Date | null
  readonly aal: Aal
  /** The factor that raised it to `aal2`, or `null`. */
  readonly factorId: string | null
  /** The `User-Agent` of its last sign-in or refresh, `''` when none was sent. */
  readonly userAgent: string
  /** The client address of its last sign-in or refresh, `''` when unknown. */
  readonly ip: string
  readonly tag: string | null
}

/** The user's sessions with their devices, most recently used first. */
export async function listDeviceSessions(tx: Queryable, userId: string): Promise<DeviceSession[]> {
  const { rows } = await tx.query<{
    id: string
    created_at: Date | null
    updated_at: Date | null
    refreshed_at: Date | null
    not_after: Date | null
    aal: Aal | null
    factor_id: string | null
    user_agent: string | null
    ip: string | null
    tag: string | null
  }>(
    `SELECT id, created_at, updated_at, (refreshed_at AT TIME ZONE 'UTC') AS refreshed_at,
       not_after, aal, factor_id, user_agent, host(ip) AS ip, tag
     FROM ${tx.t.sessions} WHERE user_id = $1
     ORDER BY COALESCE(refreshed_at AT TIME ZONE 'UTC', created_at) DESC, id`,
    [userId],
  )
  return rows.map((r) => ({
    id: r.id,
    createdAt: r.created_at ?? new Date(0),
    updatedAt: r.updated_at ?? new Date(0),
    refreshedAt: r.refreshed_at,
    notAfter: r.not_after,
    aal: r.aal ?? 'aal1',
    factorId: r.factor_id,
    userAgent: r.user_agent ?? '',
    ip: r.ip ?? '',
    tag: r.tag,
  }))
}

/**
 * Whether the user has a session from the same device as `client`: the same `User-Agent` and an
 * address in the same network (the /24 of an IPv4 address, the /48 of an IPv6 one; no address
 * matches no address), for the new-device sign-in notification.
 */
export async function hasSessionFromDevice(
  tx: Queryable,
  userId: string,
  client: SessionClient,
): Promise<boolean> {
  const ip = validIp(client.ip)
  const { rows } = await tx.query<{ known: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM ${tx.t.sessions}
       WHERE user_id = $1 AND user_agent IS NOT DISTINCT FROM NULLIF($2, '')
         AND CASE WHEN $3 = '' THEN ip IS NULL
           ELSE ip <<= network(set_masklen($3::inet,
             CASE WHEN family($3::inet) = 4 THEN 24 ELSE 48 END)) END
     ) AS known`,
    [userId, client.userAgent, ip],
  )
  return rows[0]?.known === true
}
