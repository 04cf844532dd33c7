/**
 * `flow_state`: the PKCE flow state of a sign-in (upstream `models.FlowState`). A minimal model
 * for the OAuth flows (`/authorize` creates a row, `/callback` records the user and issues the
 * auth code); the email flows extend it.
 *
 * @module
 */
import type { Queryable } from '../storage/db.js'

/** PKCE challenge methods (the `code_challenge_method` enum). */
export type CodeChallengeMethod = 's256' | 'plain'

/** A row of `flow_state`. */
export interface FlowState {
  readonly id: string
  readonly userId: string | null
  /** The auth code the client exchanges (`POST /token?grant_type=pkce`). */
  readonly authCode: string
  readonly codeChallengeMethod: CodeChallengeMethod
  readonly codeChallenge: string
  /** The provider (`github`, …, or `email`). */
  readonly providerType: string
  readonly providerAccessToken: string
  readonly providerRefreshToken: string
  /** `oauth`, `email/signup`, `magiclink`, … */
  readonly authenticationMethod: string
  readonly createdAt: Date
  readonly authCodeIssuedAt: Date | null
}

interface FlowStateRow {
  id: string
  user_id: string | null
  auth_code: string
  code_challenge_method: CodeChallengeMethod
  code_challenge: string
  provider_type: string
  provider_access_token: string | null
  provider_refresh_token: string | null
  authentication_method: string
  created_at: Date | null
  auth_code_issued_at: Date | null
}

const COLUMNS =
  'id, user_id, auth_code, code_challenge_method, code_challenge, provider_type, provider_access_token, provider_refresh_token, authentication_method, created_at, auth_code_issued_at'

function fromRow(r: FlowStateRow): FlowState {
  return {
    id: r.id,
    userId: r.user_id,
    authCode: r.auth_code,
    codeChallengeMethod: r.code_challenge_method,
    codeChallenge: r.code_challenge,
    providerType: r.provider_type,
    providerAccessToken: r.provider_access_token ?? '',
    providerRefreshToken: r.provider_refresh_token ?? '',
    authenticationMethod: r.authentication_method,
    createdAt: r.created_at ?? new Date(0),
    authCodeIssuedAt: r.auth_code_issued_at,
  }
}

/** What {@link insertFlowState} stores. */
export interface NewFlowState {
  readonly id: string
  readonly authCode: string
  readonly codeChallengeMethod: CodeChallengeMethod
  readonly codeChallenge: string
  readonly providerType: string
  readonly authenticationMethod: string
  readonly userId?: string | null
}

/**
 * Inserts a flow state.
 *
 * @param now Epoch milliseconds for `created_at` and `updated_at`.
 */
export async function insertFlowState(
  tx: Queryable,
  f: NewFlowState,
  now: number,
): Promise<FlowState> {
  const { rows } = await tx.query<FlowStateRow>(
    `INSERT INTO ${tx.t.flowState} (id, user_id, auth_code, code_challenge_method, code_challenge,
       provider_type, authentication_method, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING ${COLUMNS}`,
    [
      f.id,
      f.userId ?? null,
      f.authCode,
      f.codeChallengeMethod,
      f.codeChallenge,
      f.providerType,
      f.authenticationMethod,
      new Date(now),
    ],
  )
  return fromRow(rows[0] as FlowStateRow)
}

/** The flow state with this id (locked for update when asked), or `undefined`. */
export async function findFlowStateById(
  tx: Queryable,
  id: string,
  forUpdate = false,
): Promise<FlowState | undefined> {
  const { rows } = await tx.query<FlowStateRow>(
    `SELECT ${COLUMNS} FROM ${tx.t.flowState} WHERE id = $1${forUpdate ? ' FOR UPDATE' : ''}`,
    [id],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/**
 * Records who signed in and the provider's tokens on a flow state, and when its auth code was
 * issued (the callback of an OAuth PKCE flow).
 *
 * @param now Epoch milliseconds for `auth_code_issued_at` and `updated_at`.
 */
export async function issueFlowStateAuthCode(
  tx: Queryable,
  id: string,
  user: { userId: string; providerAccessToken: string; providerRefreshToken: string },
  now: number,
): Promise<void> {
  await tx.query(
    `UPDATE ${tx.t.flowState} SET user_id = $2, provider_access_token = $3,
       provider_refresh_token = $4, auth_code_issued_at = $5, updated_at = $5 WHERE id = $1`,
    [id, user.userId, user.providerAccessToken, user.providerRefreshToken, new Date(now)],
  )
}
