import type { Queryable } from '../storage/db.js'
import { asObject, timestampFromJson, type JsonObject } from './json.js'

/** A row of `identities`: one sign-in method of a user (`email`, `phone`, an OAuth provider). */
export interface Identity {
  id: string
  providerId: string
  userId: string
  identityData: JsonObject
  provider: string
  lastSignInAt: Date | null
  createdAt: Date
  updatedAt: Date
  email: string
}

interface IdentityRow {
  id: string
  provider_id: string
  user_id: string
  identity_data: unknown
  provider: string
  last_sign_in_at: Date | null
  created_at: Date | null
  updated_at: Date | null
  email: string | null
}

const COLUMNS =
  'id, provider_id, user_id, identity_data, provider, last_sign_in_at, created_at, updated_at, email'

function fromRow(r: IdentityRow): Identity {
  return {
    id: r.id,
    providerId: r.provider_id,
    userId: r.user_id,
    identityData: asObject(r.identity_data),
    provider: r.provider,
    lastSignInAt: r.last_sign_in_at,
    createdAt: r.created_at ?? new Date(0),
    updatedAt: r.updated_at ?? new Date(0),
    email: r.email ?? '',
  }
}

/**
 * The `identity_data` of a user's own `email` or `phone` identity, as upstream writes it: `data`
 * (a sign-up's metadata) beside `sub`, the address or number, and both verified flags, the
 * identity's own one being `verified` and the other `false`.
 *
 * @param value The lower-cased email or the phone digits.
 */
export function ownIdentityData(
  userId: string,
  provider: 'email' | 'phone',
  value: string,
  verified: boolean,
  data: JsonObject = {},
): JsonObject {
  return {
    ...data,
    sub: userId,
    [provider]: value,
    email_verified: provider === 'email' && verified,
    phone_verified: provider === 'phone' && verified,
  }
}

/**
 * Inserts an identity.
 *
 * @param now Epoch milliseconds for `created_at`, `updated_at` and `last_sign_in_at`.
 */
export async function insertIdentity(
  tx: Queryable,
  i: { id: string; providerId: string; userId: string; provider: string; identityData: JsonObject },
  now: number,
): Promise<Identity> {
  const { rows } = await tx.query<IdentityRow>(
    `INSERT INTO ${tx.t.identities}
       (id, provider_id, user_id, identity_data, provider, last_sign_in_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4::jsonb, $5, $6, $6, $6) RETURNING ${COLUMNS}`,
    [i.id, i.providerId, i.userId, JSON.stringify(i.identityData), i.provider, new Date(now)],
  )
  return fromRow(rows[0] as IdentityRow)
}

/**
 * SQL of a scalar subquery returning the identities of `userExpr` as a JSON array, for queries
 * that fetch a user and its identities in one round trip; read it with {@link identitiesFromJson}.
 *
 * @internal
 */
export function identitiesJsonSql(table: string, userExpr: string): string {
  return `(SELECT coalesce(json_agg(i ORDER BY i.created_at, i.id), '[]'::json)
    FROM (SELECT ${COLUMNS} FROM ${table} WHERE user_id = ${userExpr}) i)`
}

/** @internal Reads the JSON of {@link identitiesJsonSql}. */
export function identitiesFromJson(value: unknown): Identity[] {
  const list = typeof value === 'string' ? (JSON.parse(value) as unknown) : value
  if (!Array.isArray(list)) return []
  return (list as Record<string, unknown>[]).map((r) =>
    fromRow({
      id: String(r.id),
      provider_id: String(r.provider_id),
      user_id: String(r.user_id),
      identity_data: r.identity_data,
      provider: String(r.provider),
      last_sign_in_at: timestampFromJson(r.last_sign_in_at),
      created_at: timestampFromJson(r.created_at),
      updated_at: timestampFromJson(r.updated_at),
      email: typeof r.email === 'string' ? r.email : null,
    }),
  )
}

/** The identities of a user, oldest first. */
export async function findIdentitiesByUser(tx: Queryable, userId: string): Promise<Identity[]> {
  const { rows } = await tx.query<IdentityRow>(
    `SELECT ${COLUMNS} FROM ${tx.t.identities} WHERE user_id = $1 ORDER BY created_at, id`,
    [userId],
  )
  return rows.map(fromRow)
}

/** The identities of several users, grouped by user id. */
export async function findIdentitiesByUsers(
  tx: Queryable,
  userIds: readonly string[],
): Promise<Map<string, Identity[]>> {
  const map = new Map<string, Identity[]>()
  if (userIds.length === 0) return map
  const { rows } = await tx.query<IdentityRow>(
    `SELECT ${COLUMNS} FROM ${tx.t.identities} WHERE user_id = ANY($1::uuid[])
     ORDER BY created_at, id`,
    [userIds],
  )
  for (const row of rows) {
    const list = map.get(row.user_id) ?? []
    list.push(fromRow(row))
    map.set(row.user_id, list)
  }
  return map
}

/**
 * Merges fields into `identity_data` of the user's identity of one provider (for example the
 * `email_verified` flag, or a new email).
 */
export async function updateIdentityData(
  tx: Queryable,
  userId: string,
  provider: string,
  data: JsonObject,
  now: number,
): Promise<void> {
  await tx.query(
    `UPDATE ${tx.t.identities} SET identity_data = identity_data || $3::jsonb, updated_at = $4
     WHERE user_id = $1 AND provider = $2`,
    [userId, provider, JSON.stringify(data), new Date(now)],
  )
}

/** Deletes every identity of a user (soft deletion keeps the user row but not its sign-ins). */
export async function deleteIdentitiesOfUser(tx: Queryable, userId: string): Promise<void> {
  await tx.query(`DELETE FROM ${tx.t.identities} WHERE user_id = $1`, [userId])
}

/** The identity of `provider` with this `provider_id`, or `undefined`. */
export async function findIdentityByProviderId(
  tx: Queryable,
  providerId: string,
  provider: string,
): Promise<Identity | undefined> {
  const { rows } = await tx.query<IdentityRow>(
    `SELECT ${COLUMNS} FROM ${tx.t.identities} WHERE provider_id = $1 AND provider = $2`,
    [providerId, provider],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/**
 * Replaces an identity's `identity_data` (the provider's latest claims) and records a sign-in.
 *
 * @param now Epoch milliseconds for `last_sign_in_at` and `updated_at`.
 */
export async function refreshIdentity(
  tx: Queryable,
  id: string,
  identityData: JsonObject,
  now: number,
): Promise<void> {
  await tx.query(
    `UPDATE ${tx.t.identities} SET identity_data = $2::jsonb, last_sign_in_at = $3, updated_at = $3
     WHERE id = $1`,
    [id, JSON.stringify(identityData), new Date(now)],
  )
}

/** Deletes every identity of a user but one (`keepId`). */
export async function deleteOtherIdentities(
  tx: Queryable,
  userId: string,
  keepId: string,
): Promise<void> {
  await tx.query(`DELETE FROM ${tx.t.identities} WHERE user_id = $1 AND id <> $2`, [userId, keepId])
}

/** Deletes one identity of a user; answers whether there was one. */
export async function deleteIdentity(tx: Queryable, id: string, userId: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    `DELETE FROM ${tx.t.identities} WHERE id = $1 AND user_id = $2`,
    [id, userId],
  )
  return rowCount > 0
}
