import type { JWTPayload } from 'jose'
import type { Queryable } from '../storage/db.js'
import type { User } from './user.js'

/** Audit actions this server records (upstream `models/audit_log_entry.go`). */
export type AuditAction =
  | 'login'
  | 'logout'
  | 'factor_in_progress'
  | 'factor_unenrolled'
  | 'factor_deleted'
  | 'factor_updated'
  | 'challenge_created'
  | 'verification_attempted'
  | 'user_signedup'
  | 'user_invited'
  | 'user_repeated_signup'
  | 'user_confirmation_requested'
  | 'user_modified'
  | 'user_updated_password'
  | 'user_deleted'
  | 'token_refreshed'
  | 'token_revoked'
  | 'invite_accepted'
  | 'user_recovery_requested'
  | 'user_reauthenticate_requested'
  | 'identity_linked'
  | 'identity_unlinked'
  | 'passkey_created'
  | 'passkey_updated'
  | 'passkey_deleted'

const LOG_TYPES: Readonly<Record<AuditAction, string>> = {
  login: 'account',
  logout: 'account',
  factor_in_progress: 'factor',
  factor_unenrolled: 'factor',
  factor_deleted: 'factor',
  factor_updated: 'factor',
  challenge_created: 'factor',
  verification_attempted: 'factor',
  user_signedup: 'team',
  user_invited: 'team',
  user_repeated_signup: 'user',
  user_confirmation_requested: 'user',
  user_modified: 'user',
  user_updated_password: 'user',
  user_deleted: 'team',
  token_refreshed: 'token',
  token_revoked: 'token',
  invite_accepted: 'account',
  user_recovery_requested: 'user',
  user_reauthenticate_requested: 'user',
  identity_linked: 'user',
  identity_unlinked: 'user',
  passkey_created: 'user',
  passkey_updated: 'user',
  passkey_deleted: 'user',
}

/** Who did it: the acting user (or an admin token's subject). */
export interface AuditActor {
  id: string
  /** Email, else phone. */
  username: string
  /** `user_metadata.full_name`, when present. */
  name?: string
  /** Whether the actor is an SSO user (`actor_via_sso`). @default false */
  viaSso?: boolean
}

/** The actor of an entry about what a user did: id, email (else phone), `full_name`. */
export function auditActor(user: User): AuditActor {
  const name = user.userMetadata.full_name
  return {
    id: user.id,
    username: user.email !== '' ? user.email : user.phone,
    viaSso: user.isSsoUser,
    ...(typeof name === 'string' ? { name } : {}),
  }
}

/**
 * The actor of an entry about what an admin token did: its `sub` (empty for the service-role key)
 * and its email, else its role.
 */
export function adminAuditActor(claims: JWTPayload): AuditActor {
  const sub = typeof claims.sub === 'string' ? claims.sub : ''
  const email = typeof claims.email === 'string' ? claims.email : ''
  const role = typeof claims.role === 'string' ? claims.role : ''
  return { id: sub, username: email !== '' ? email : role }
}

/** One audit-log entry before it is stored. */
export interface AuditEntry {
  /** The entry's id (a random UUID). */
  id: string
  actor: AuditActor
  action: AuditAction
  traits?: Record<string, unknown>
  ip: string
}

/** The `payload` JSON of an entry (upstream's shape). */
export function auditPayload(e: AuditEntry): Record<string, unknown> {
  const payload: Record<string, unknown> = {
    actor_id: e.actor.id,
    actor_via_sso: e.actor.viaSso ?? false,
    actor_username: e.actor.username,
    action: e.action,
    log_type: LOG_TYPES[e.action],
  }
  if (e.actor.name !== undefined) payload.actor_name = e.actor.name
  if (e.traits !== undefined) payload.traits = e.traits
  return payload
}

/**
 * SQL of an expression building the same `payload` as {@link auditPayload} for an entry without
 * traits whose actor is a user ({@link auditActor}), from the `users` columns of
 * `alias` (`id`, `email`, `phone`, `raw_user_meta_data`). For statements that write an entry
 * about a user they have only just read, in the same round trip.
 *
 * @param alias Table or CTE alias whose columns are the user's.
 * @param action A constant action (inlined as a literal).
 * @internal
 */
export function auditPayloadSql(alias: string, action: AuditAction): string {
  const name = `${alias}.raw_user_meta_data -> 'full_name'`
  const common = `'actor_id', ${alias}.id, 'actor_via_sso', COALESCE(${alias}.is_sso_user, false),
    'actor_username', COALESCE(NULLIF(${alias}.email, ''), ${alias}.phone, ''),
    'action', '${action}', 'log_type', '${LOG_TYPES[action]}'`
  return `CASE WHEN jsonb_typeof(${name}) = 'string'
    THEN json_build_object(${common}, 'actor_name', ${name} #>> '{}')
    ELSE json_build_object(${common}) END`
}

/**
 * Appends an audit-log entry; call it inside the transaction of the change it records.
 *
 * @param now Epoch milliseconds.
 * @param ip Client IP (up to 64 characters kept).
 */
export async function addAuditLogEntry(tx: Queryable, e: AuditEntry, now: number): Promise<void> {
  const payload = auditPayload(e)
  await tx.query(
    `INSERT INTO ${tx.t.auditLogEntries} (instance_id, id, payload, created_at, ip_address)
     VALUES ('00000000-0000-0000-0000-000000000000', $1, $2::json, $3, $4)`,
    [e.id, JSON.stringify(payload), new Date(now), e.ip.slice(0, 64)],
  )
}

/** A stored entry, as `GET /admin/audit` answers it (upstream `AuditLogEntry`). */
export interface StoredAuditEntry {
  readonly id: string
  readonly payload: Record<string, unknown>
  /** RFC 3339. */
  readonly created_at: string
  readonly ip_address: string
}

/** The `payload` keys `GET /admin/audit?query=<scope>:<text>` searches (upstream `filterColumnMap`). */
export const AUDIT_QUERY_SCOPES = {
  author: ['actor_username', 'actor_name'],
  action: ['action'],
  type: ['log_type'],
} as const

/** Options of {@link listAuditLogEntries}. */
export interface AuditLogQuery {
  /** A scope of {@link AUDIT_QUERY_SCOPES} and the text its keys must contain (any case), or none. */
  readonly search?: { readonly scope: keyof typeof AUDIT_QUERY_SCOPES; readonly text: string }
  /** 1-based page. */
  readonly page: number
  readonly perPage: number
}

/**
 * A page of the audit log, newest first, and the number of entries matching (upstream
 * `FindAuditLogEntries`): with `search`, entries one of whose scope's payload keys contains the
 * text (case-insensitive; `%` and `_` are literal).
 */
export async function listAuditLogEntries(
  q: Queryable,
  o: AuditLogQuery,
): Promise<{ entries: StoredAuditEntry[]; total: number }> {
  const keys = o.search === undefined ? [] : AUDIT_QUERY_SCOPES[o.search.scope]
  const like = `%${(o.search?.text ?? '').replace(/[\\%_]/g, (c) => `\\${c}`)}%`
  const where =
    keys.length === 0
      ? 'TRUE'
      : `(${keys.map((key) => `payload ->> '${key}' ILIKE $1`).join(' OR ')})`
  const params = keys.length === 0 ? [] : [like]
  const count = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${q.t.auditLogEntries} WHERE ${where}`,
    params,
  )
  const at = params.length
  const { rows } = await q.query<{
    id: string
    payload: Record<string, unknown> | null
    created_at: Date
    ip_address: string
  }>(
    `SELECT id, payload, created_at, ip_address FROM ${q.t.auditLogEntries} WHERE ${where}
     ORDER BY created_at DESC, id LIMIT $${String(at + 1)} OFFSET $${String(at + 2)}`,
    [...params, o.perPage, (o.page - 1) * o.perPage],
  )
  return {
    entries: rows.map((r) => ({
      id: r.id,
      payload: r.payload ?? {},
      created_at: r.created_at.toISOString(),
      ip_address: r.ip_address,
    })),
    total: count.rows[0]?.n ?? 0,
  }
}
