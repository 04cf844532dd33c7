/**
 * The `mfa_recovery_code_sets` and `mfa_recovery_codes` tables (migration 0010): a user's one set
 * of MFA recovery codes and its codes, each stored as a hash and used at most once.
 *
 * @module
 */
import type { Queryable } from '../storage/db.js'

/** A user's set of recovery codes, with its counts. */
export interface RecoveryCodeSet {
  readonly id: string
  readonly userId: string
  /** `''` for none. */
  readonly friendlyName: string
  /** Codes in the set, used or not. */
  readonly total: number
  /** Codes not used yet. */
  readonly remaining: number
  readonly createdAt: Date
  readonly updatedAt: Date
}

/** An unused code of a set: its id and hash. */
export interface UnusedRecoveryCode {
  readonly id: string
  readonly codeHash: Uint8Array
}

interface SetRow {
  id: string
  user_id: string
  friendly_name: string
  total: string | number
  remaining: string | number
  created_at: Date
  updated_at: Date
}

function fromRow(r: SetRow): RecoveryCodeSet {
  return {
    id: r.id,
    userId: r.user_id,
    friendlyName: r.friendly_name,
    total: Number(r.total),
    remaining: Number(r.remaining),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }
}

/**
 * The user's set of recovery codes, with its counts.
 *
 * @param lock Lock the set's row (`FOR UPDATE`) until the transaction ends.
 * @returns `undefined` when the user has none.
 */
export async function findRecoveryCodeSet(
  q: Queryable,
  userId: string,
  lock = false,
): Promise<RecoveryCodeSet | undefined> {
  const { rows } = await q.query<SetRow>(
    `SELECT s.id, s.user_id, s.friendly_name, s.created_at, s.updated_at,
       (SELECT count(*) FROM ${q.t.mfaRecoveryCodes} c WHERE c.set_id = s.id) AS total,
       (SELECT count(*) FROM ${q.t.mfaRecoveryCodes} c
         WHERE c.set_id = s.id AND c.used_at IS NULL) AS remaining
     FROM ${q.t.mfaRecoveryCodeSets} s WHERE s.user_id = $1${lock ? ' FOR UPDATE OF s' : ''}`,
    [userId],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/**
 * Creates the user's set with its codes (the user must have none).
 *
 * @param codes The new codes' ids and hashes.
 * @param now Epoch milliseconds.
 */
export async function insertRecoveryCodeSet(
  tx: Queryable,
  set: { readonly id: string; readonly userId: string; readonly friendlyName: string },
  codes: readonly UnusedRecoveryCode[],
  now: number,
): Promise<void> {
  await tx.query(
    `INSERT INTO ${tx.t.mfaRecoveryCodeSets} (id, user_id, friendly_name, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $4)`,
    [set.id, set.userId, set.friendlyName, new Date(now)],
  )
  await insertCodes(tx, set.id, codes, now)
}

/**
 * Replaces every code of a set (used or not) with new ones.
 *
 * @param now Epoch milliseconds.
 */
export async function replaceRecoveryCodes(
  tx: Queryable,
  setId: string,
  codes: readonly UnusedRecoveryCode[],
  now: number,
): Promise<void> {
  await tx.query(`DELETE FROM ${tx.t.mfaRecoveryCodes} WHERE set_id = $1`, [setId])
  await tx.query(`UPDATE ${tx.t.mfaRecoveryCodeSets} SET updated_at = $2 WHERE id = $1`, [
    setId,
    new Date(now),
  ])
  await insertCodes(tx, setId, codes, now)
}

async function insertCodes(
  tx: Queryable,
  setId: string,
  codes: readonly UnusedRecoveryCode[],
  now: number,
): Promise<void> {
  for (const code of codes) {
    await tx.query(
      `INSERT INTO ${tx.t.mfaRecoveryCodes} (id, set_id, code_hash, created_at)
       VALUES ($1, $2, $3, $4)`,
      [code.id, setId, Buffer.from(code.codeHash), new Date(now)],
    )
  }
}

/** The unused codes of a set. */
export async function listUnusedRecoveryCodes(
  q: Queryable,
  setId: string,
): Promise<UnusedRecoveryCode[]> {
  const { rows } = await q.query<{ id: string; code_hash: Uint8Array }>(
    `SELECT id, code_hash FROM ${q.t.mfaRecoveryCodes} WHERE set_id = $1 AND used_at IS NULL`,
    [setId],
  )
  return rows.map((r) => ({ id: r.id, codeHash: new Uint8Array(r.code_hash) }))
}

/**
 * Marks a code used, if it is not already.
 *
 * @param now Epoch milliseconds.
 * @returns Whether this call used it (`false`: it was used already).
 */
export async function useRecoveryCode(
  tx: Queryable,
  codeId: string,
  now: number,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE ${tx.t.mfaRecoveryCodes} SET used_at = $2 WHERE id = $1 AND used_at IS NULL`,
    [codeId, new Date(now)],
  )
  return rowCount === 1
}

/**
 * Deletes the user's set and its codes.
 *
 * @returns The deleted set's id, `undefined` when the user had none.
 */
export async function deleteRecoveryCodeSet(
  tx: Queryable,
  userId: string,
): Promise<string | undefined> {
  const { rows } = await tx.query<{ id: string }>(
    `DELETE FROM ${tx.t.mfaRecoveryCodeSets} WHERE user_id = $1 RETURNING id`,
    [userId],
  )
  return rows[0]?.id
}
