/**
 * The `mfa_factors` table: a user's second factors (TOTP apps and phones), with upstream's
 * columns. A TOTP factor's `secret` is the Base32 secret as upstream stores it without
 * `SECURITY_DB_ENCRYPTION`; `last_totp_step` (our column) is the time step of the last code it
 * accepted.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/models/factor.go
 * @module
 */
import type { Queryable } from '../storage/db.js'
import { timestampFromJson } from './json.js'

/** Kinds of factor this server enrolls. */
export type FactorType = 'totp' | 'phone' | 'webauthn'

/**
 * A WebAuthn factor's credential (`web_authn_credential`, JSON): what the assertions of later
 * challenges are checked against. Byte fields are base64url.
 */
export interface FactorWebauthnCredential {
  /** The credential id. */
  readonly id: string
  /** The COSE public key. */
  readonly publicKey: string
  /** The last sign counter the authenticator reported. */
  readonly counter: number
  readonly transports: readonly string[]
}

/** `unverified` until a first challenge is verified. */
export type FactorStatus = 'unverified' | 'verified'

/** A row of `mfa_factors`. */
export interface Factor {
  readonly id: string
  readonly userId: string
  /** `''` when none was given. */
  readonly friendlyName: string
  readonly factorType: FactorType
  readonly status: FactorStatus
  readonly createdAt: Date
  readonly updatedAt: Date
  /** TOTP: the Base32 secret; `''` for phone factors. Never serialized. */
  readonly secret: string
  /** Phone factors: E.164 digits without `+`; `''` for TOTP. */
  readonly phone: string
  readonly lastChallengedAt: Date | null
  /** TOTP: the time step (Unix seconds / 30) of the last accepted code, or `null`. */
  readonly lastTotpStep: number | null
  /** WebAuthn factors: the credential, once the factor is verified; else `null`. */
  readonly webauthnCredential: FactorWebauthnCredential | null
}

interface FactorRow {
  id: string
  user_id: string
  friendly_name: string | null
  factor_type: FactorType
  status: FactorStatus
  created_at: Date
  updated_at: Date
  secret: string | null
  phone: string | null
  last_challenged_at: Date | null
  last_totp_step: string | null
  web_authn_credential: FactorWebauthnCredential | null
}

const COLUMNS =
  'id, user_id, friendly_name, factor_type, status, created_at, updated_at, secret, phone, last_challenged_at, last_totp_step, web_authn_credential'

function fromRow(r: FactorRow): Factor {
  return {
    id: r.id,
    userId: r.user_id,
    friendlyName: r.friendly_name ?? '',
    factorType: r.factor_type,
    status: r.status,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    secret: r.secret ?? '',
    phone: r.phone ?? '',
    lastChallengedAt: r.last_challenged_at,
    lastTotpStep: r.last_totp_step === null ? null : Number(r.last_totp_step),
    webauthnCredential: r.web_authn_credential ?? null,
  }
}

/**
 * SQL of a scalar subquery returning the factors of `userExpr` as a JSON array (oldest first),
 * for queries that fetch a user and its factors in one round trip; read it with
 * {@link factorsFromJson}.
 *
 * @internal
 */
export function factorsJsonSql(table: string, userExpr: string): string {
  return `(SELECT coalesce(json_agg(f ORDER BY f.created_at, f.id), '[]'::json)
    FROM (SELECT ${COLUMNS} FROM ${table} WHERE user_id = ${userExpr}) f)`
}

/** @internal Reads the JSON of {@link factorsJsonSql}. */
export function factorsFromJson(value: unknown): Factor[] {
  const list = typeof value === 'string' ? (JSON.parse(value) as unknown) : value
  if (!Array.isArray(list)) return []
  return (list as Record<string, unknown>[]).map((r) =>
    fromRow({
      ...(r as unknown as FactorRow),
      created_at: timestampFromJson(r.created_at) ?? new Date(0),
      updated_at: timestampFromJson(r.updated_at) ?? new Date(0),
      last_challenged_at: timestampFromJson(r.last_challenged_at),
      last_totp_step: typeof r.last_totp_step === 'number' ? String(r.last_totp_step) : null,
    }),
  )
}

/**
 * Inserts an unverified factor.
 *
 * @param f `lastChallengedAt`: the last challenge of the factors it replaces (`null`: never).
 * @param now Epoch milliseconds.
 */
export async function insertFactor(
  tx: Queryable,
  f: {
    id: string
    userId: string
    friendlyName: string
    factorType: FactorType
    secret: string
    phone: string
    lastChallengedAt?: Date | null
  },
  now: number,
): Promise<Factor> {
  const { rows } = await tx.query<FactorRow>(
    `INSERT INTO ${tx.t.mfaFactors}
       (id, user_id, friendly_name, factor_type, status, created_at, updated_at, secret, phone,
        last_challenged_at)
     VALUES ($1, $2, $3, $4, 'unverified', $5, $5, NULLIF($6, ''), NULLIF($7, ''), $8)
     RETURNING ${COLUMNS}`,
    [
      f.id,
      f.userId,
      f.friendlyName,
      f.factorType,
      new Date(now),
      f.secret,
      f.phone,
      f.lastChallengedAt ?? null,
    ],
  )
  return fromRow(rows[0] as FactorRow)
}

/** The user's factors, oldest first. */
export async function listFactorsOfUser(tx: Queryable, userId: string): Promise<Factor[]> {
  const { rows } = await tx.query<FactorRow>(
    `SELECT ${COLUMNS} FROM ${tx.t.mfaFactors} WHERE user_id = $1 ORDER BY created_at, id`,
    [userId],
  )
  return rows.map(fromRow)
}

/** How {@link findFactorOfUser} locks the row: not, waiting, or skipping it when it is taken. */
export type FactorLock = false | true | 'skip-locked'

/**
 * The factor `id` of `userId`, or `undefined`.
 *
 * @param lock `true`: lock the row until the transaction ends, waiting for another holder
 *   (verification); `'skip-locked'`: the same, but `undefined` at once when another transaction
 *   holds it (a phone challenge being sent).
 */
export async function findFactorOfUser(
  tx: Queryable,
  userId: string,
  id: string,
  lock: FactorLock = false,
): Promise<Factor | undefined> {
  const suffix = lock === false ? '' : lock === true ? ' FOR UPDATE' : ' FOR UPDATE SKIP LOCKED'
  const { rows } = await tx.query<FactorRow>(
    `SELECT ${COLUMNS} FROM ${tx.t.mfaFactors} WHERE id = $1 AND user_id = $2${suffix}`,
    [id, userId],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/** Whether the user has at least one verified factor (upstream `HasMFAEnabled`). */
export async function hasVerifiedFactor(tx: Queryable, userId: string): Promise<boolean> {
  const { rows } = await tx.query(
    `SELECT 1 FROM ${tx.t.mfaFactors} WHERE user_id = $1 AND status = 'verified' LIMIT 1`,
    [userId],
  )
  return rows.length > 0
}

/**
 * Marks a factor verified and, for TOTP, records the step of the accepted code.
 *
 * @param now Epoch milliseconds.
 */
export async function markFactorVerified(
  tx: Queryable,
  id: string,
  totpStep: number | null,
  now: number,
): Promise<void> {
  await tx.query(
    `UPDATE ${tx.t.mfaFactors} SET status = 'verified', updated_at = $2,
       last_totp_step = COALESCE($3, last_totp_step)
     WHERE id = $1`,
    [id, new Date(now), totpStep],
  )
}

/**
 * Changes a factor's friendly name and/or phone (upstream `UpdateFriendlyName`, `UpdatePhone`);
 * an absent field stays as it is.
 *
 * @param now Epoch milliseconds (`updated_at`).
 * @returns The updated factor.
 */
export async function updateFactor(
  tx: Queryable,
  id: string,
  changes: { readonly friendlyName?: string; readonly phone?: string },
  now: number,
): Promise<Factor> {
  const { rows } = await tx.query<FactorRow>(
    `UPDATE ${tx.t.mfaFactors} SET friendly_name = COALESCE($2, friendly_name),
       phone = COALESCE($3, phone), updated_at = $4
     WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, changes.friendlyName ?? null, changes.phone ?? null, new Date(now)],
  )
  return fromRow(rows[0] as FactorRow)
}

/**
 * Records a challenge on its factor (`last_challenged_at`; not `UNIQUE` here, unlike upstream's
 * column, see migration 0003).
 *
 * @param now Epoch milliseconds.
 */
export async function touchFactorChallenged(tx: Queryable, id: string, now: number): Promise<void> {
  await tx.query(`UPDATE ${tx.t.mfaFactors} SET last_challenged_at = $2 WHERE id = $1`, [
    id,
    new Date(now),
  ])
}

/**
 * Deletes one factor (its challenges go with it, by cascade).
 *
 * @returns Whether it existed.
 */
export async function deleteFactor(tx: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await tx.query(`DELETE FROM ${tx.t.mfaFactors} WHERE id = $1`, [id])
  return rowCount > 0
}

/**
 * Deletes the user's unverified factors: of every type (`factorType` undefined: the first factor
 * was verified), of a type (after one of that type is verified), or of one phone number (a new
 * enrolment of the number replaces them).
 */
export async function deleteUnverifiedFactors(
  tx: Queryable,
  userId: string,
  factorType?: FactorType,
  phone?: string,
): Promise<void> {
  await tx.query(
    `DELETE FROM ${tx.t.mfaFactors}
     WHERE user_id = $1 AND status = 'unverified'
       AND ($2::text IS NULL OR factor_type::text = $2)
       AND ($3::text IS NULL OR phone = $3)`,
    [userId, factorType ?? null, phone ?? null],
  )
}

/** Deletes every factor of a user (a soft-deleted user keeps none, as upstream). */
export async function deleteFactorsOfUser(tx: Queryable, userId: string): Promise<void> {
  await tx.query(`DELETE FROM ${tx.t.mfaFactors} WHERE user_id = $1`, [userId])
}

/**
 * Deletes unverified factors older than `validityMs` that were never challenged (upstream
 * `DeleteExpiredFactors`, run before each enrolment).
 *
 * @param now Epoch milliseconds.
 */
export async function deleteExpiredFactors(
  tx: Queryable,
  validityMs: number,
  now: number,
): Promise<void> {
  await tx.query(
    `DELETE FROM ${tx.t.mfaFactors} f WHERE f.status <> 'verified'
       AND NOT EXISTS (SELECT 1 FROM ${tx.t.mfaChallenges} c WHERE c.factor_id = f.id)
       AND f.created_at < $1`,
    [new Date(now - validityMs)],
  )
}

/**
 * Stores a WebAuthn factor's credential (at its first verification, and its new counter at each
 * later one).
 *
 * @param aaguid The authenticator model, `''` for none.
 */
export async function saveFactorWebauthnCredential(
  tx: Queryable,
  id: string,
  credential: FactorWebauthnCredential,
  aaguid: string,
): Promise<void> {
  await tx.query(
    `UPDATE ${tx.t.mfaFactors}
     SET web_authn_credential = $2::jsonb, web_authn_aaguid = coalesce(NULLIF($3, '')::uuid, web_authn_aaguid)
     WHERE id = $1`,
    [id, JSON.stringify(credential), aaguid],
  )
}
