/**
 * The `mfa_challenges` table: one attempt to verify a factor, with upstream's columns. A phone
 * challenge keeps its code in `otp_code` (plain, as upstream without `SECURITY_DB_ENCRYPTION`);
 * a TOTP challenge has none.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/models/challenge.go
 * @module
 */
import { validIp } from './session.js'
import type { Queryable } from '../storage/db.js'

/** A row of `mfa_challenges`. */
export interface Challenge {
  readonly id: string
  readonly factorId: string
  readonly createdAt: Date
  readonly verifiedAt: Date | null
  /** The client IP the challenge was created from (`''` when unknown). */
  readonly ipAddress: string
  /** Phone challenges: the code sent; `''` for TOTP. */
  readonly otpCode: string
  /** WebAuthn challenges: the ceremony (`create` or `request`) and its challenge (base64url). */
  readonly webauthn: ChallengeWebauthnData | null
}

/** What a WebAuthn factor's challenge remembers (`web_authn_session_data`). */
export interface ChallengeWebauthnData {
  readonly type: 'create' | 'request'
  readonly challenge: string
}

interface ChallengeRow {
  id: string
  factor_id: string
  created_at: Date
  verified_at: Date | null
  ip_address: string
  otp_code: string | null
  web_authn_session_data: ChallengeWebauthnData | null
}

/** `ip_address` is `NOT NULL inet`: an unknown client is recorded as the unspecified address. */
const UNKNOWN_IP = '0.0.0.0'

const COLUMNS =
  'id, factor_id, created_at, verified_at, host(ip_address) AS ip_address, otp_code, web_authn_session_data'

function fromRow(r: ChallengeRow): Challenge {
  return {
    id: r.id,
    factorId: r.factor_id,
    createdAt: r.created_at,
    verifiedAt: r.verified_at,
    ipAddress: r.ip_address === UNKNOWN_IP ? '' : r.ip_address,
    otpCode: r.otp_code ?? '',
    webauthn: r.web_authn_session_data ?? null,
  }
}

/**
 * Inserts a challenge.
 *
 * @param c `ip` is the client's address (`''` when unknown); `otpCode` `''` for TOTP;
 *   `webauthn` for WebAuthn factors.
 * @param now Epoch milliseconds.
 */
export async function insertChallenge(
  tx: Queryable,
  c: {
    id: string
    factorId: string
    ip: string
    otpCode: string
    webauthn?: ChallengeWebauthnData | undefined
  },
  now: number,
): Promise<Challenge> {
  const { rows } = await tx.query<ChallengeRow>(
    `INSERT INTO ${tx.t.mfaChallenges}
       (id, factor_id, created_at, ip_address, otp_code, web_authn_session_data)
     VALUES ($1, $2, $3, $4::inet, NULLIF($5, ''), $6::jsonb)
     RETURNING ${COLUMNS}`,
    [
      c.id,
      c.factorId,
      new Date(now),
      validIp(c.ip) || UNKNOWN_IP,
      c.otpCode,
      c.webauthn ? JSON.stringify(c.webauthn) : null,
    ],
  )
  return fromRow(rows[0] as ChallengeRow)
}

/**
 * The challenge `id` of factor `factorId`, locked until the transaction ends, or `undefined`.
 */
export async function lockChallengeOfFactor(
  tx: Queryable,
  factorId: string,
  id: string,
): Promise<Challenge | undefined> {
  const { rows } = await tx.query<ChallengeRow>(
    `SELECT ${COLUMNS} FROM ${tx.t.mfaChallenges} WHERE id = $1 AND factor_id = $2 FOR UPDATE`,
    [id, factorId],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/**
 * Marks a challenge verified.
 *
 * @param now Epoch milliseconds.
 */
export async function markChallengeVerified(tx: Queryable, id: string, now: number): Promise<void> {
  await tx.query(`UPDATE ${tx.t.mfaChallenges} SET verified_at = $2 WHERE id = $1`, [
    id,
    new Date(now),
  ])
}

/** Deletes a challenge (an expired one, when it is presented). */
export async function deleteChallenge(tx: Queryable, id: string): Promise<void> {
  await tx.query(`DELETE FROM ${tx.t.mfaChallenges} WHERE id = $1`, [id])
}
