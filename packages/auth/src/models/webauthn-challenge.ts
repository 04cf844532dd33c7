/**
 * The `webauthn_challenges` table: one pending WebAuthn ceremony (migration 0007). A row is
 * consumed, deleted and returned in one statement, so that a challenge is answered at most once
 * even by concurrent requests.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/models/webauthn_challenge.go
 * @module
 */
import type { Queryable } from '../storage/db.js'

/** The ceremonies a challenge is for. */
export type WebauthnChallengeType = 'registration' | 'authentication'

/** What the server must remember of a ceremony to check its answer. */
export interface WebauthnSessionData {
  /** The challenge, base64url. */
  readonly challenge: string
}

/** A row of `webauthn_challenges`. */
export interface WebauthnChallenge {
  readonly id: string
  /** `null` for a username-less sign-in. */
  readonly userId: string | null
  readonly challengeType: WebauthnChallengeType
  readonly sessionData: WebauthnSessionData
  readonly createdAt: Date
  readonly expiresAt: Date
}

interface Row {
  id: string
  user_id: string | null
  challenge_type: WebauthnChallengeType
  session_data: WebauthnSessionData
  created_at: Date
  expires_at: Date
}

function fromRow(r: Row): WebauthnChallenge {
  return {
    id: r.id,
    userId: r.user_id,
    challengeType: r.challenge_type,
    sessionData: r.session_data,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
  }
}

/**
 * Inserts a challenge.
 *
 * @param now Epoch milliseconds; `expiresAt` too.
 */
export async function insertWebauthnChallenge(
  tx: Queryable,
  c: {
    id: string
    userId: string | null
    challengeType: WebauthnChallengeType
    sessionData: WebauthnSessionData
    expiresAt: number
  },
  now: number,
): Promise<WebauthnChallenge> {
  const { rows } = await tx.query<Row>(
    `INSERT INTO ${tx.t.webauthnChallenges} (id, user_id, challenge_type, session_data, created_at, expires_at)
     VALUES ($1, $2, $3, $4::jsonb, $5, $6) RETURNING *`,
    [
      c.id,
      c.userId,
      c.challengeType,
      JSON.stringify(c.sessionData),
      new Date(now),
      new Date(c.expiresAt),
    ],
  )
  return fromRow(rows[0] as Row)
}

/**
 * Deletes and returns the challenge `id` of the type, bound to `userId` (`null`: bound to no
 * user), or `undefined` when there is none (unknown, already used, or another user's).
 */
export async function consumeWebauthnChallenge(
  tx: Queryable,
  id: string,
  challengeType: WebauthnChallengeType,
  userId: string | null,
): Promise<WebauthnChallenge | undefined> {
  const { rows } = await tx.query<Row>(
    `DELETE FROM ${tx.t.webauthnChallenges}
     WHERE id = $1 AND challenge_type = $2 AND user_id IS NOT DISTINCT FROM $3::uuid
     RETURNING *`,
    [id, challengeType, userId],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}
