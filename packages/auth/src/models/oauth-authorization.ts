/**
 * `oauth_authorizations` and `oauth_consents` rows (upstream `models.OAuthServerAuthorization`,
 * `models.OAuthServerConsent`): an authorization request from `/oauth/authorize` until its code
 * is exchanged, and the scopes a user consented to per client.
 *
 * @module
 */
import type { Queryable } from '../storage/db.js'

/** Where an authorization request stands. */
export type OAuthAuthorizationStatus = 'pending' | 'approved' | 'denied' | 'expired'

/** An authorization request. */
export interface OAuthAuthorization {
  readonly id: string
  /** The public id the consent page reads it by. */
  readonly authorizationId: string
  readonly clientId: string
  readonly userId: string | null
  readonly redirectUri: string
  readonly scope: string
  readonly state: string | null
  readonly resource: string | null
  readonly codeChallenge: string
  readonly nonce: string | null
  readonly prompt: string | null
  readonly status: OAuthAuthorizationStatus
  /** base64url(SHA-256(code)) once approved. */
  readonly codeHash: string | null
  readonly createdAt: Date
  readonly expiresAt: Date
  readonly approvedAt: Date | null
  /** The session the code was exchanged for, once it was. */
  readonly sessionId: string | null
}

interface Row {
  id: string
  authorization_id: string
  client_id: string
  user_id: string | null
  redirect_uri: string
  scope: string
  state: string | null
  resource: string | null
  code_challenge: string | null
  nonce: string | null
  prompt: string | null
  status: OAuthAuthorizationStatus
  authorization_code: string | null
  created_at: Date
  expires_at: Date
  approved_at: Date | null
  session_id: string | null
}

const COLUMNS = `id, authorization_id, client_id, user_id, redirect_uri, scope, state, resource,
  code_challenge, nonce, prompt, status, authorization_code, created_at, expires_at, approved_at,
  session_id`

function fromRow(r: Row): OAuthAuthorization {
  return {
    id: r.id,
    authorizationId: r.authorization_id,
    clientId: r.client_id,
    userId: r.user_id,
    redirectUri: r.redirect_uri,
    scope: r.scope,
    state: r.state,
    resource: r.resource,
    codeChallenge: r.code_challenge ?? '',
    nonce: r.nonce,
    prompt: r.prompt,
    status: r.status,
    codeHash: r.authorization_code,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    approvedAt: r.approved_at,
    sessionId: r.session_id,
  }
}

/** What a new authorization request records. */
export interface NewOAuthAuthorization {
  readonly id: string
  readonly authorizationId: string
  readonly clientId: string
  readonly redirectUri: string
  readonly scope: string
  readonly state: string
  readonly resource: string
  readonly codeChallenge: string
  readonly nonce: string
  readonly prompt: string
  readonly createdAt: Date
  readonly expiresAt: Date
}

/** Records a pending authorization request (PKCE is always S256). */
export async function insertOAuthAuthorization(
  tx: Queryable,
  a: NewOAuthAuthorization,
): Promise<void> {
  await tx.query(
    `INSERT INTO ${tx.t.oauthAuthorizations} (id, authorization_id, client_id, redirect_uri, scope,
       state, resource, code_challenge, code_challenge_method, nonce, prompt, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), NULLIF($7, ''), $8, 's256', NULLIF($9, ''),
       NULLIF($10, ''), $11, $12)`,
    [
      a.id,
      a.authorizationId,
      a.clientId,
      a.redirectUri,
      a.scope,
      a.state,
      a.resource,
      a.codeChallenge,
      a.nonce,
      a.prompt,
      a.createdAt,
      a.expiresAt,
    ],
  )
}

/**
 * The authorization request with this public id (`authorization_id`) or whose code has this hash
 * (`authorization_code`), locked until the transaction ends.
 */
export async function lockOAuthAuthorization(
  tx: Queryable,
  by: 'authorization_id' | 'authorization_code',
  value: string,
): Promise<OAuthAuthorization | undefined> {
  const { rows } = await tx.query<Row>(
    `SELECT ${COLUMNS} FROM ${tx.t.oauthAuthorizations} WHERE ${by} = $1 FOR UPDATE`,
    [value],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/** Changes an authorization request's user, status, code or session. */
export async function updateOAuthAuthorization(
  tx: Queryable,
  id: string,
  change: {
    readonly userId?: string
    readonly status?: OAuthAuthorizationStatus
    readonly codeHash?: string
    readonly approvedAt?: Date
    readonly sessionId?: string
  },
): Promise<void> {
  await tx.query(
    `UPDATE ${tx.t.oauthAuthorizations} SET user_id = COALESCE($2, user_id),
       status = COALESCE($3, status),
       authorization_code = COALESCE($4, authorization_code), approved_at = COALESCE($5, approved_at),
       session_id = COALESCE($6, session_id)
     WHERE id = $1`,
    [
      id,
      change.userId ?? null,
      change.status ?? null,
      change.codeHash ?? null,
      change.approvedAt ?? null,
      change.sessionId ?? null,
    ],
  )
}

/** A user's consent to a client. */
export interface OAuthConsent {
  readonly clientId: string
  readonly scopes: readonly string[]
  readonly grantedAt: Date
}

/** The user's active (not revoked) consent to a client, or `undefined`. */
export async function findActiveConsent(
  tx: Queryable,
  userId: string,
  clientId: string,
): Promise<OAuthConsent | undefined> {
  const { rows } = await tx.query<{ client_id: string; scopes: string; granted_at: Date }>(
    `SELECT client_id, scopes, granted_at FROM ${tx.t.oauthConsents}
     WHERE user_id = $1 AND client_id = $2 AND revoked_at IS NULL`,
    [userId, clientId],
  )
  const row = rows[0]
  return row
    ? { clientId: row.client_id, scopes: row.scopes.split(' '), grantedAt: row.granted_at }
    : undefined
}

/** The user's active consents to clients that are not deleted, newest first. */
export async function listActiveConsents(tx: Queryable, userId: string): Promise<OAuthConsent[]> {
  const { rows } = await tx.query<{ client_id: string; scopes: string; granted_at: Date }>(
    `SELECT c.client_id, c.scopes, c.granted_at FROM ${tx.t.oauthConsents} c
     JOIN ${tx.t.oauthClients} k ON k.id = c.client_id AND k.deleted_at IS NULL
     WHERE c.user_id = $1 AND c.revoked_at IS NULL ORDER BY c.granted_at DESC`,
    [userId],
  )
  return rows.map((r) => ({
    clientId: r.client_id,
    scopes: r.scopes.split(' '),
    grantedAt: r.granted_at,
  }))
}

/** Records a consent to these scopes (replacing the user's earlier consent to the client). */
export async function upsertConsent(
  tx: Queryable,
  consent: { id: string; userId: string; clientId: string; scopes: readonly string[] },
  now: Date,
): Promise<void> {
  await tx.query(
    `INSERT INTO ${tx.t.oauthConsents} (id, user_id, client_id, scopes, granted_at)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (user_id, client_id) DO UPDATE
       SET scopes = EXCLUDED.scopes, granted_at = EXCLUDED.granted_at, revoked_at = NULL`,
    [consent.id, consent.userId, consent.clientId, consent.scopes.join(' '), now],
  )
}

/**
 * Revokes the user's consent to a client and ends the sessions of the tokens issued to it.
 *
 * @returns Whether there was an active consent.
 */
export async function revokeConsent(
  tx: Queryable,
  userId: string,
  clientId: string,
  now: Date,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE ${tx.t.oauthConsents} SET revoked_at = GREATEST($3, granted_at)
     WHERE user_id = $1 AND client_id = $2 AND revoked_at IS NULL`,
    [userId, clientId, now],
  )
  if (rowCount === 0) return false
  await tx.query(`DELETE FROM ${tx.t.sessions} WHERE user_id = $1 AND oauth_client_id = $2`, [
    userId,
    clientId,
  ])
  return true
}

/** Sets the OAuth client and scopes of a session just started. */
export async function bindSessionToClient(
  tx: Queryable,
  sessionId: string,
  clientId: string,
  scopes: string,
): Promise<void> {
  await tx.query(`UPDATE ${tx.t.sessions} SET oauth_client_id = $2, scopes = $3 WHERE id = $1`, [
    sessionId,
    clientId,
    scopes,
  ])
}

/** The OAuth client of the session a refresh token belongs to (`null`: none), or `undefined`. */
export async function clientOfRefreshToken(
  tx: Queryable,
  token: string,
): Promise<string | null | undefined> {
  const { rows } = await tx.query<{ oauth_client_id: string | null }>(
    `SELECT s.oauth_client_id FROM ${tx.t.refreshTokens} r
     JOIN ${tx.t.sessions} s ON s.id = r.session_id WHERE r.token = $1`,
    [token],
  )
  return rows[0] ? rows[0].oauth_client_id : undefined
}

/** Ends a session (a reused authorization code's), with its refresh tokens. */
export async function deleteSessionById(tx: Queryable, sessionId: string): Promise<void> {
  await tx.query(`DELETE FROM ${tx.t.sessions} WHERE id = $1`, [sessionId])
}
