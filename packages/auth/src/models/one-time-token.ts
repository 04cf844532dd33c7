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

/** A stored one-time token: whose, of which kind, sent where. */
export interface OneTimeToken {
  readonly userId: string
  readonly tokenType: OneTimeTokenType
  readonly tokenHash: string
  readonly relatesTo: string
}

/**
 * The one-time token with this hash among `types` (upstream `FindOneTimeToken`), or `undefined`.
 * Upstream's lookups of `token_hash` links go through this table.
 */
export async function findOneTimeToken(
  tx: Queryable,
  tokenHash: string,
  types: readonly OneTimeTokenType[],
): Promise<OneTimeToken | undefined> {
  const { rows } = await tx.query<{
    user_id: string
    token_type: OneTimeTokenType
    token_hash: string
    relates_to: string
  }>(
    `SELECT user_id, token_type, token_hash, relates_to FROM ${tx.t.oneTimeTokens}
     WHERE token_hash = $1 AND token_type::text = ANY($2::text[]) LIMIT 1`,
    [tokenHash, types],
  )
  const row = rows[0]
  return row
    ? {
        userId: row.user_id,
        tokenType: row.token_type,
        tokenHash: row.token_hash,
        relatesTo: row.relates_to,
      }
    : undefined
}

/**
 * Deletes a user's one-time tokens: of the given types, or all of them (upstream
 * `ClearAllOneTimeTokensForUser`, after a verification).
 */
export async function deleteOneTimeTokens(
  tx: Queryable,
  userId: string,
  types?: readonly OneTimeTokenType[],
): Promise<void> {
  if (types === undefined) {
    await tx.query(`DELETE FROM ${tx.t.oneTimeTokens} WHERE user_id = $1`, [userId])
  } else {
    await tx.query(
      `DELETE FROM ${tx.t.oneTimeTokens} WHERE user_id = $1 AND token_type::text = ANY($2::text[])`,
      [userId, types],
    )
  }
}
