import type { Queryable } from '../storage/db.js'

/** `flow_state.code_challenge_method` (upstream's enum). */
export type CodeChallengeMethod = 's256' | 'plain'

/** A row of `flow_state`: one PKCE flow, from the request that starts it to the code exchange. */
export interface FlowState {
  readonly id: string
  /** The user the flow signs in; `null` until known (OAuth flows learn it at the callback). */
  readonly userId: string | null
  /** The code handed to the client (`?code=`), a random UUID. */
  readonly authCode: string
  readonly codeChallengeMethod: CodeChallengeMethod
  readonly codeChallenge: string
  /** `email` for the email flows, the provider's name for OAuth. */
  readonly providerType: string
  /** What the session's `amr` records: `email/signup`, `magiclink`, `recovery`, `email_change`, … */
  readonly authenticationMethod: string
  readonly createdAt: Date
  /** When `/verify` (or the callback) handed out the code; `null` before. */
  readonly authCodeIssuedAt: Date | null
  /** OAuth flows: the provider's access token, `''` when none (`provider_token`). */
  readonly providerAccessToken: string
  /** OAuth flows: the provider's refresh token, `''` when none (`provider_refresh_token`). */
  readonly providerRefreshToken: string
}

/** What {@link insertFlowState} stores. */
export type NewFlowState = Omit<
  FlowState,
  'createdAt' | 'authCodeIssuedAt' | 'providerAccessToken' | 'providerRefreshToken'
>

interface FlowStateRow {
  id: string
  user_id: string | null
  auth_code: string
  code_challenge_method: CodeChallengeMethod
  code_challenge: string
  provider_type: string
  authentication_method: string
  created_at: Date | null
  auth_code_issued_at: Date | null
  provider_access_token: string | null
  provider_refresh_token: string | null
}

const COLUMNS = `id, user_id, auth_code, code_challenge_method, code_challenge, provider_type,
  authentication_method, created_at, auth_code_issued_at, provider_access_token,
  provider_refresh_token`

function fromRow(r: FlowStateRow): FlowState {
  return {
    id: r.id,
    userId: r.user_id,
    authCode: r.auth_code,
    codeChallengeMethod: r.code_challenge_method,
    codeChallenge: r.code_challenge,
    providerType: r.provider_type,
    authenticationMethod: r.authentication_method,
    createdAt: r.created_at ?? new Date(0),
    authCodeIssuedAt: r.auth_code_issued_at,
    providerAccessToken: r.provider_access_token ?? '',
    providerRefreshToken: r.provider_refresh_token ?? '',
  }
}

/**
 * Stores a new flow state (upstream `NewFlowState` + create).
 *
 * @param now Epoch milliseconds for `created_at` and `updated_at`.
 */
export async function insertFlowState(
  tx: Queryable,
  flow: NewFlowState,
  now: number,
): Promise<void> {
  await tx.query(
    `INSERT INTO ${tx.t.flowState} (id, user_id, auth_code, code_challenge_method, code_challenge,
       provider_type, authentication_method, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
    [
      flow.id,
      flow.userId,
      flow.authCode,
      flow.codeChallengeMethod,
      flow.codeChallenge,
      flow.providerType,
      flow.authenticationMethod,
      new Date(now),
    ],
  )
}

/**
 * The flow state of an auth code, or `undefined`.
 *
 * @param forUpdate Lock the row until the transaction ends (one exchange per code).
 */
export async function findFlowStateByAuthCode(
  tx: Queryable,
  authCode: string,
  forUpdate = false,
): Promise<FlowState | undefined> {
  const { rows } = await tx.query<FlowStateRow>(
    `SELECT ${COLUMNS} FROM ${tx.t.flowState} WHERE auth_code = $1 LIMIT 1${forUpdate ? ' FOR UPDATE' : ''}`,
    [authCode],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/** The user's newest flow state of an authentication method (upstream `FindFlowStateByUserID`), or `undefined`. */
export async function findLatestFlowStateOfUser(
  tx: Queryable,
  userId: string,
  authenticationMethod: string,
): Promise<FlowState | undefined> {
  const { rows } = await tx.query<FlowStateRow>(
    `SELECT ${COLUMNS} FROM ${tx.t.flowState}
     WHERE user_id = $1 AND authentication_method = $2 ORDER BY created_at DESC LIMIT 1`,
    [userId, authenticationMethod],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/**
 * Records that the flow's code was handed out (`auth_code_issued_at`).
 *
 * @param now Epoch milliseconds.
 */
export async function markAuthCodeIssued(tx: Queryable, id: string, now: number): Promise<void> {
  await tx.query(
    `UPDATE ${tx.t.flowState} SET auth_code_issued_at = $2, updated_at = $2 WHERE id = $1`,
    [id, new Date(now)],
  )
}

/** Deletes a flow state (after its code was exchanged). */
export async function deleteFlowState(tx: Queryable, id: string): Promise<void> {
  await tx.query(`DELETE FROM ${tx.t.flowState} WHERE id = $1`, [id])
}

/** The flow state with this id (locked until the transaction ends when asked), or `undefined`. */
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
 * Records the user an OAuth flow signed in and the provider's tokens, and hands out its code
 * (`auth_code_issued_at`): the callback of an OAuth PKCE flow.
 *
 * @param now Epoch milliseconds.
 */
export async function issueOAuthAuthCode(
  tx: Queryable,
  id: string,
  signedIn: { userId: string; providerAccessToken: string; providerRefreshToken: string },
  now: number,
): Promise<void> {
  await tx.query(
    `UPDATE ${tx.t.flowState} SET user_id = $2, provider_access_token = $3,
       provider_refresh_token = $4, auth_code_issued_at = $5, updated_at = $5 WHERE id = $1`,
    [
      id,
      signedIn.userId,
      signedIn.providerAccessToken,
      signedIn.providerRefreshToken,
      new Date(now),
    ],
  )
}
