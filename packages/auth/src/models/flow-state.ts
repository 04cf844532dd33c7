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

/**
 * The `flow_state` row of one external sign-in (`authentication_method` `oauth`), from
 * `/authorize` to `/callback`: implicit flows have one too, without the PKCE columns.
 */
export interface OAuthFlowState {
  readonly id: string
  /** The provider the sign-in started with. */
  readonly providerType: string
  /** The client's PKCE challenge (`?code=` at the end); `null` for the implicit flow. */
  readonly codeChallenge: string | null
  readonly codeChallengeMethod: CodeChallengeMethod | null
  /** The code handed to the client of a PKCE flow; `null` for the implicit flow. */
  readonly authCode: string | null
  /**
   * base64url(SHA-256) of the browser-binding cookie the flow was started with; `null` once the
   * callback claimed the flow (a flow is completed once).
   */
  readonly browserBindingHash: string | null
  /** The PKCE verifier sent to the provider's token endpoint; `null` for providers without PKCE. */
  readonly providerCodeVerifier: string | null
  /** The signed-in user the identity is linked to (`/user/identities/authorize`). */
  readonly linkingTargetId: string | null
  /** The session that asked for the link; it must still exist when the callback links. */
  readonly linkingSessionId: string | null
  readonly userId: string | null
  readonly createdAt: Date
  readonly authCodeIssuedAt: Date | null
}

/** What {@link insertOAuthFlowState} stores. */
export type NewOAuthFlowState = Omit<OAuthFlowState, 'userId' | 'createdAt' | 'authCodeIssuedAt'>

interface OAuthFlowStateRow {
  id: string
  user_id: string | null
  auth_code: string | null
  code_challenge_method: CodeChallengeMethod | null
  code_challenge: string | null
  provider_type: string
  created_at: Date | null
  auth_code_issued_at: Date | null
  browser_binding_hash: string | null
  provider_code_verifier: string | null
  linking_target_id: string | null
  linking_session_id: string | null
}

const OAUTH_COLUMNS = `id, user_id, auth_code, code_challenge_method, code_challenge, provider_type,
  created_at, auth_code_issued_at, browser_binding_hash, provider_code_verifier, linking_target_id,
  linking_session_id`

function oauthFromRow(r: OAuthFlowStateRow): OAuthFlowState {
  return {
    id: r.id,
    providerType: r.provider_type,
    codeChallenge: r.code_challenge,
    codeChallengeMethod: r.code_challenge_method,
    authCode: r.auth_code,
    browserBindingHash: r.browser_binding_hash,
    providerCodeVerifier: r.provider_code_verifier,
    linkingTargetId: r.linking_target_id,
    linkingSessionId: r.linking_session_id,
    userId: r.user_id,
    createdAt: r.created_at ?? new Date(0),
    authCodeIssuedAt: r.auth_code_issued_at,
  }
}

/**
 * Stores the flow state of an external sign-in (`authentication_method` `oauth`).
 *
 * @param now Epoch milliseconds for `created_at` and `updated_at`.
 * @throws The driver's unique violation when `id` exists (a link ticket used twice).
 */
export async function insertOAuthFlowState(
  tx: Queryable,
  flow: NewOAuthFlowState,
  now: number,
): Promise<void> {
  await tx.query(
    `INSERT INTO ${tx.t.flowState} (id, auth_code, code_challenge_method, code_challenge,
       provider_type, authentication_method, browser_binding_hash, provider_code_verifier,
       linking_target_id, linking_session_id, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, 'oauth', $6, $7, $8, $9, $10, $10)`,
    [
      flow.id,
      flow.authCode,
      flow.codeChallengeMethod,
      flow.codeChallenge,
      flow.providerType,
      flow.browserBindingHash,
      flow.providerCodeVerifier,
      flow.linkingTargetId,
      flow.linkingSessionId,
      new Date(now),
    ],
  )
}

/**
 * Claims an external sign-in's flow state for its callback, atomically: only when it is still
 * unclaimed and was started with the browser-binding cookie whose hash is `bindingHash`; the
 * hash is then cleared, so the flow cannot be completed again.
 *
 * @param now Epoch milliseconds for `updated_at`.
 * @returns The claimed flow state (`browserBindingHash` now `null`), or `undefined` when there is
 *   no such unclaimed flow for this browser (see {@link findOAuthFlowState} for why).
 */
export async function claimOAuthFlowState(
  tx: Queryable,
  id: string,
  bindingHash: string,
  now: number,
): Promise<OAuthFlowState | undefined> {
  const { rows } = await tx.query<OAuthFlowStateRow>(
    `UPDATE ${tx.t.flowState} SET browser_binding_hash = NULL, updated_at = $3
     WHERE id = $1 AND authentication_method = 'oauth' AND browser_binding_hash = $2
     RETURNING ${OAUTH_COLUMNS}`,
    [id, bindingHash, new Date(now)],
  )
  return rows[0] ? oauthFromRow(rows[0]) : undefined
}

/** The flow state of an external sign-in, claimed or not, or `undefined`. */
export async function findOAuthFlowState(
  tx: Queryable,
  id: string,
): Promise<OAuthFlowState | undefined> {
  const { rows } = await tx.query<OAuthFlowStateRow>(
    `SELECT ${OAUTH_COLUMNS} FROM ${tx.t.flowState} WHERE id = $1 AND authentication_method = 'oauth'`,
    [id],
  )
  return rows[0] ? oauthFromRow(rows[0]) : undefined
}
