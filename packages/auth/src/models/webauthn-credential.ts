/**
 * The `webauthn_credentials` table: the passkeys users register, with upstream's columns
 * (migration 0007). The credential id and public key are raw bytes; the sign counter is the last
 * one an authenticator reported.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/models/webauthn_credential.go
 * @module
 */
import type { Queryable } from '../storage/db.js'

/** A row of `webauthn_credentials`. */
export interface WebauthnCredential {
  readonly id: string
  readonly userId: string
  /** The authenticator's credential id (raw bytes). */
  readonly credentialId: Uint8Array
  /** The COSE public key (raw bytes). */
  readonly publicKey: Uint8Array<ArrayBuffer>
  /** The attestation statement format (`none`, `packed`, …). */
  readonly attestationType: string
  /** The authenticator model's AAGUID, `null` when it gave none. */
  readonly aaguid: string | null
  readonly signCount: number
  /** Transports the browser reported (`internal`, `usb`, `hybrid`, …). */
  readonly transports: readonly string[]
  readonly backupEligible: boolean
  readonly backedUp: boolean
  /** `''` for none. */
  readonly friendlyName: string
  readonly createdAt: Date
  readonly updatedAt: Date
  readonly lastUsedAt: Date | null
}

interface Row {
  id: string
  user_id: string
  credential_id: Uint8Array
  public_key: Uint8Array
  attestation_type: string
  aaguid: string | null
  sign_count: string | number
  transports: string[]
  backup_eligible: boolean
  backed_up: boolean
  friendly_name: string
  created_at: Date
  updated_at: Date
  last_used_at: Date | null
}

const ZERO_AAGUID = '00000000-0000-0000-0000-000000000000'

function fromRow(r: Row): WebauthnCredential {
  return {
    id: r.id,
    userId: r.user_id,
    credentialId: new Uint8Array(r.credential_id),
    publicKey: new Uint8Array(r.public_key),
    attestationType: r.attestation_type,
    aaguid: r.aaguid,
    signCount: Number(r.sign_count),
    transports: r.transports,
    backupEligible: r.backup_eligible,
    backedUp: r.backed_up,
    friendlyName: r.friendly_name,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    lastUsedAt: r.last_used_at,
  }
}

/** What a new passkey is made of. */
export interface NewWebauthnCredential {
  readonly id: string
  readonly userId: string
  readonly credentialId: Uint8Array
  readonly publicKey: Uint8Array<ArrayBuffer>
  readonly attestationType: string
  /** The AAGUID; all zeros (attestation `none`) is stored as `null`. */
  readonly aaguid: string
  readonly signCount: number
  readonly transports: readonly string[]
  readonly backupEligible: boolean
  readonly backedUp: boolean
  readonly friendlyName: string
}

/**
 * Inserts a passkey.
 *
 * @param now Epoch milliseconds.
 * @returns The row, or `undefined` when the credential id is already registered (to anyone).
 */
export async function insertWebauthnCredential(
  tx: Queryable,
  c: NewWebauthnCredential,
  now: number,
): Promise<WebauthnCredential | undefined> {
  const { rows } = await tx.query<Row>(
    `INSERT INTO ${tx.t.webauthnCredentials} (id, user_id, credential_id, public_key,
       attestation_type, aaguid, sign_count, transports, backup_eligible, backed_up, friendly_name,
       created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12, $12)
     ON CONFLICT (credential_id) DO NOTHING
     RETURNING *`,
    [
      c.id,
      c.userId,
      Buffer.from(c.credentialId),
      Buffer.from(c.publicKey),
      c.attestationType,
      c.aaguid === '' || c.aaguid === ZERO_AAGUID ? null : c.aaguid,
      c.signCount,
      JSON.stringify(c.transports),
      c.backupEligible,
      c.backedUp,
      c.friendlyName,
      new Date(now),
    ],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/** A user's passkeys, oldest first. */
export async function listWebauthnCredentialsOfUser(
  q: Queryable,
  userId: string,
): Promise<WebauthnCredential[]> {
  const { rows } = await q.query<Row>(
    `SELECT * FROM ${q.t.webauthnCredentials} WHERE user_id = $1 ORDER BY created_at, id`,
    [userId],
  )
  return rows.map(fromRow)
}

/** How many passkeys a user has. */
export async function countWebauthnCredentialsOfUser(
  q: Queryable,
  userId: string,
): Promise<number> {
  const { rows } = await q.query<{ n: string | number }>(
    `SELECT count(*) AS n FROM ${q.t.webauthnCredentials} WHERE user_id = $1`,
    [userId],
  )
  return Number(rows[0]?.n ?? 0)
}

/**
 * The passkey `id` of user `userId`, or `undefined`.
 *
 * @param lock Lock the row until the transaction ends.
 */
export async function findWebauthnCredentialOfUser(
  q: Queryable,
  userId: string,
  id: string,
  lock = false,
): Promise<WebauthnCredential | undefined> {
  const { rows } = await q.query<Row>(
    `SELECT * FROM ${q.t.webauthnCredentials} WHERE id = $1 AND user_id = $2${lock ? ' FOR UPDATE' : ''}`,
    [id, userId],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/**
 * The passkey with the authenticator's credential id, locked until the transaction ends (its
 * counter is checked and moved under the lock), or `undefined`.
 */
export async function lockWebauthnCredentialByCredentialId(
  tx: Queryable,
  credentialId: Uint8Array,
): Promise<WebauthnCredential | undefined> {
  const { rows } = await tx.query<Row>(
    `SELECT * FROM ${tx.t.webauthnCredentials} WHERE credential_id = $1 FOR UPDATE`,
    [Buffer.from(credentialId)],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/**
 * Records a use of a passkey: its new sign counter and `last_used_at`.
 *
 * @param now Epoch milliseconds.
 */
export async function markWebauthnCredentialUsed(
  tx: Queryable,
  id: string,
  signCount: number,
  backedUp: boolean,
  now: number,
): Promise<void> {
  await tx.query(
    `UPDATE ${tx.t.webauthnCredentials}
     SET sign_count = $2, backed_up = $3, last_used_at = $4, updated_at = $4 WHERE id = $1`,
    [id, signCount, backedUp, new Date(now)],
  )
}

/**
 * Renames a passkey.
 *
 * @param now Epoch milliseconds.
 * @returns The updated row.
 */
export async function renameWebauthnCredential(
  tx: Queryable,
  id: string,
  friendlyName: string,
  now: number,
): Promise<WebauthnCredential | undefined> {
  const { rows } = await tx.query<Row>(
    `UPDATE ${tx.t.webauthnCredentials} SET friendly_name = $2, updated_at = $3 WHERE id = $1
     RETURNING *`,
    [id, friendlyName, new Date(now)],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/** Deletes a passkey. */
export async function deleteWebauthnCredential(tx: Queryable, id: string): Promise<void> {
  await tx.query(`DELETE FROM ${tx.t.webauthnCredentials} WHERE id = $1`, [id])
}
