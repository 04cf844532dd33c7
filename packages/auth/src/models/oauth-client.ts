/**
 * `oauth_clients` rows: the clients registered with the OAuth server (upstream
 * `models.OAuthServerClient`). The `id` is the public `client_id`; `redirect_uris` and
 * `grant_types` are comma-joined as upstream stores them; a deleted client keeps its row with
 * `deleted_at` set and is no longer found.
 *
 * @module
 */
import type { Queryable } from '../storage/db.js'

/** `client_type`: a public client has no secret and proves itself with PKCE alone. */
export type OAuthClientType = 'public' | 'confidential'

/** How a client authenticates at `POST /oauth/token` (RFC 7591 `token_endpoint_auth_method`). */
export type TokenEndpointAuthMethod = 'none' | 'client_secret_basic' | 'client_secret_post'

/** `registration_type`: by an admin (`manual`) or through RFC 7591 (`dynamic`). */
export type OAuthRegistrationType = 'manual' | 'dynamic'

/** A registered OAuth client. */
export interface OAuthClient {
  readonly id: string
  /** base64url(SHA-256(secret)); `null` for public clients. */
  readonly clientSecretHash: string | null
  readonly registrationType: OAuthRegistrationType
  readonly clientType: OAuthClientType
  readonly tokenEndpointAuthMethod: TokenEndpointAuthMethod
  readonly redirectUris: readonly string[]
  readonly grantTypes: readonly string[]
  readonly clientName: string | null
  readonly clientUri: string | null
  readonly logoUri: string | null
  readonly createdAt: Date
  readonly updatedAt: Date
}

interface Row {
  id: string
  client_secret_hash: string | null
  registration_type: OAuthRegistrationType
  client_type: OAuthClientType
  token_endpoint_auth_method: TokenEndpointAuthMethod
  redirect_uris: string
  grant_types: string
  client_name: string | null
  client_uri: string | null
  logo_uri: string | null
  created_at: Date
  updated_at: Date
}

const COLUMNS = `id, client_secret_hash, registration_type, client_type, token_endpoint_auth_method,
  redirect_uris, grant_types, client_name, client_uri, logo_uri, created_at, updated_at`

function fromRow(row: Row): OAuthClient {
  return {
    id: row.id,
    clientSecretHash: row.client_secret_hash,
    registrationType: row.registration_type,
    clientType: row.client_type,
    tokenEndpointAuthMethod: row.token_endpoint_auth_method,
    redirectUris: row.redirect_uris === '' ? [] : row.redirect_uris.split(','),
    grantTypes: row.grant_types === '' ? [] : row.grant_types.split(','),
    clientName: row.client_name,
    clientUri: row.client_uri,
    logoUri: row.logo_uri,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

function values(client: OAuthClient): unknown[] {
  return [
    client.id,
    client.clientSecretHash,
    client.registrationType,
    client.clientType,
    client.tokenEndpointAuthMethod,
    client.redirectUris.join(','),
    client.grantTypes.join(','),
    client.clientName,
    client.clientUri,
    client.logoUri,
    client.createdAt,
    client.updatedAt,
  ]
}

/** Records a new client. */
export async function insertOAuthClient(tx: Queryable, client: OAuthClient): Promise<void> {
  await tx.query(
    `INSERT INTO ${tx.t.oauthClients} (${COLUMNS})
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    values(client),
  )
}

/** Writes every field of a client back (its `id` and `created_at` stay). */
export async function updateOAuthClient(tx: Queryable, client: OAuthClient): Promise<void> {
  const all = values(client)
  await tx.query(
    `UPDATE ${tx.t.oauthClients} SET client_secret_hash = $2, registration_type = $3,
       client_type = $4, token_endpoint_auth_method = $5, redirect_uris = $6, grant_types = $7,
       client_name = $8, client_uri = $9, logo_uri = $10, updated_at = $11
     WHERE id = $1 AND deleted_at IS NULL`,
    [...all.slice(0, 10), all[11]],
  )
}

/**
 * The client with this `client_id` that is not deleted, or `undefined`.
 *
 * @param forUpdate Lock the row until the transaction ends.
 */
export async function findOAuthClient(
  tx: Queryable,
  id: string,
  forUpdate = false,
): Promise<OAuthClient | undefined> {
  const { rows } = await tx.query<Row>(
    `SELECT ${COLUMNS} FROM ${tx.t.oauthClients} WHERE id = $1 AND deleted_at IS NULL
     ${forUpdate ? 'FOR UPDATE' : ''}`,
    [id],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/** Every client that is not deleted, newest first (upstream's list has no pages). */
export async function listOAuthClients(tx: Queryable): Promise<OAuthClient[]> {
  const { rows } = await tx.query<Row>(
    `SELECT ${COLUMNS} FROM ${tx.t.oauthClients} WHERE deleted_at IS NULL
     ORDER BY created_at DESC, id`,
  )
  return rows.map(fromRow)
}

/**
 * Marks a client deleted (upstream soft-deletes) and ends the sessions its tokens belong to.
 *
 * @returns Whether a client was deleted.
 */
export async function deleteOAuthClient(tx: Queryable, id: string, now: Date): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE ${tx.t.oauthClients} SET deleted_at = $2, updated_at = $2
     WHERE id = $1 AND deleted_at IS NULL`,
    [id, now],
  )
  if (rowCount === 0) return false
  await tx.query(`DELETE FROM ${tx.t.sessions} WHERE oauth_client_id = $1`, [id])
  return true
}
