import type { Queryable } from '../storage/db.js'

/** Kinds of `one_time_tokens` rows (upstream's `token_type` enum). */
export type OneTimeTokenType =
  | 'confirmation_token'
  | 'reauthentication_token'
  | 'recovery_token'
  | 'email_change_token_new'
  | 'email_change_token_current'
  | 'phone_change_token'

/** A one-time token to record: what it confirms, for whom, and its hash. */
export interface NewOneTimeToken {
  /** The row's id (a random UUID); unused when the user already has a token of this type. */
  readonly id: string
  readonly userId: string
  readonly tokenType: OneTimeTokenType
  /** `hex(sha224(emailOrPhone + otp))`. */
  readonly tokenHash: string
  /** The lower-cased email or the phone the token was sent to. */
  readonly relatesTo: string
}

/**
 * Records a one-time token; it replaces the user's previous token of the same type (upstream
 * `CreateOneTimeToken`).
 *
 * @param now Epoch milliseconds for `created_at` and `updated_at`.
 */
export async function upsertOneTimeToken(
  tx: Queryable,
  token: NewOneTimeToken,
  now: number,
): Promise<void> {
  await tx.query(
    `INSERT INTO ${tx.t.oneTimeTokens} (id, user_id, token_type, token_hash, relates_to, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6::timestamptz AT TIME ZONE 'UTC', $6::timestamptz AT TIME ZONE 'UTC')
     ON CONFLICT (user_id, token_type) DO UPDATE
       SET token_hash = EXCLUDED.token_hash, relates_to = EXCLUDED.relates_to, updated_at = EXCLUDED.updated_at`,
    [token.id, token.userId, token.tokenType, token.tokenHash, token.relatesTo, new Date(now)],
  )
}
