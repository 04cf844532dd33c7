import type { Queryable } from '../storage/db.js'

/** Authentication methods recorded in `mfa_amr_claims` and the JWT's `amr` claim. */
export type AuthenticationMethod =
  | 'password'
  | 'otp'
  | 'oauth'
  | 'magiclink'
  | 'recovery'
  | 'invite'
  | 'email/signup'
  | 'email_change'
  | 'anonymous'
  | 'sso/saml'
  | 'totp'
  | 'mfa/phone'
  | 'web3'
  | 'passkey'
  | 'webauthn'
  | 'mfa/recovery_code'

/** One `amr` claim entry: method and Unix time in seconds. */
export interface AmrEntry {
  method: string
  timestamp: number
}

/**
 * Records (or refreshes) an authentication method on a session.
 *
 * @param claim `id` is the new row's (a random UUID; unused when the method is already recorded).
 * @param now Epoch milliseconds.
 */
export async function addAmrClaim(
  tx: Queryable,
  claim: { id: string; sessionId: string; method: AuthenticationMethod },
  now: number,
): Promise<void> {
  await tx.query(
    `INSERT INTO ${tx.t.mfaAmrClaims} (id, session_id, created_at, updated_at, authentication_method)
     VALUES ($1, $2, $3, $3, $4)
     ON CONFLICT (session_id, authentication_method) DO UPDATE SET updated_at = EXCLUDED.updated_at`,
    [claim.id, claim.sessionId, new Date(now), claim.method],
  )
}

/**
 * SQL of a scalar subquery returning the `amr` entries of `sessionExpr` as a JSON array (newest
 * first); read it with {@link amrFromJson}.
 *
 * @internal
 */
export function amrJsonSql(table: string, sessionExpr: string): string {
  return `(SELECT coalesce(json_agg(json_build_object('method', authentication_method,
      'timestamp', floor(extract(epoch FROM updated_at))::bigint) ORDER BY updated_at DESC), '[]'::json)
    FROM ${table} WHERE session_id = ${sessionExpr})`
}

/** @internal Reads the JSON of {@link amrJsonSql}. */
export function amrFromJson(value: unknown): AmrEntry[] {
  const list = typeof value === 'string' ? (JSON.parse(value) as unknown) : value
  if (!Array.isArray(list)) return []
  return (list as { method: unknown; timestamp: unknown }[]).map((e) => ({
    method: String(e.method),
    timestamp: Number(e.timestamp),
  }))
}

/**
 * Removes one method from every session of a user that was raised to `aal2` by `factorId`
 * (the factor is gone), and lowers those sessions to `aal1` (upstream
 * `DowngradeSessionsToAAL1`).
 */
export async function downgradeSessionsOfFactor(
  tx: Queryable,
  userId: string,
  factorId: string,
  method: AuthenticationMethod,
): Promise<void> {
  await tx.query(
    `DELETE FROM ${tx.t.mfaAmrClaims} WHERE authentication_method = $3 AND session_id IN
       (SELECT id FROM ${tx.t.sessions} WHERE user_id = $1 AND factor_id = $2)`,
    [userId, factorId, method],
  )
  await tx.query(
    `UPDATE ${tx.t.sessions} SET aal = 'aal1', factor_id = NULL WHERE user_id = $1 AND factor_id = $2`,
    [userId, factorId],
  )
}

/** The session's `amr` entries, newest first (upstream's order). */
export async function listAmrClaims(tx: Queryable, sessionId: string): Promise<AmrEntry[]> {
  const { rows } = await tx.query<{ authentication_method: string; updated_at: Date }>(
    `SELECT authentication_method, updated_at FROM ${tx.t.mfaAmrClaims}
     WHERE session_id = $1 ORDER BY updated_at DESC`,
    [sessionId],
  )
  return rows.map((r) => ({
    method: r.authentication_method,
    timestamp: Math.floor(r.updated_at.getTime() / 1000),
  }))
}
