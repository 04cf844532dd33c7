/**
 * Rows of `custom_oauth_providers` (upstream `models.CustomOAuthProvider`): OAuth 2.0 and OIDC
 * providers an administrator adds at run time. `client_secret` holds the sealed secret (see
 * `crypto/secret-box.ts`), never the secret itself.
 *
 * @module
 */
import type { JsonObject } from './json.js'
import type { Queryable } from '../storage/db.js'

/** `provider_type`. */
export type CustomProviderType = 'oauth2' | 'oidc'

/** The discovery fields kept from an OIDC provider's document (upstream `OIDCDiscovery`). */
export interface CachedDiscovery {
  readonly issuer: string
  readonly authorization_endpoint: string
  readonly token_endpoint: string
  readonly userinfo_endpoint?: string
  readonly jwks_uri: string
  readonly scopes_supported?: readonly string[]
  readonly response_types_supported?: readonly string[]
  readonly grant_types_supported?: readonly string[]
  readonly subject_types_supported?: readonly string[]
  readonly id_token_signing_alg_values_supported?: readonly string[]
}

/** One custom provider. */
export interface CustomProvider {
  readonly id: string
  readonly providerType: CustomProviderType
  /** `custom:<name>`: how `/authorize?provider=` and identities name it. */
  readonly identifier: string
  readonly name: string
  readonly clientId: string
  /** The sealed client secret. */
  readonly sealedClientSecret: string
  /** Other audiences its ID tokens may carry (native apps' client ids). */
  readonly acceptableClientIds: readonly string[]
  readonly scopes: readonly string[]
  readonly pkceEnabled: boolean
  /** Target claim → source claim name (a string) or a literal value. */
  readonly attributeMapping: JsonObject
  /** Provider claims copied into `custom_claims` as they are. */
  readonly customClaimsAllowlist: readonly string[]
  /** Extra authorization request parameters (strings). */
  readonly authorizationParams: Readonly<Record<string, string>>
  readonly enabled: boolean
  /** Users may sign in without an email address. */
  readonly emailOptional: boolean
  /** Email domains users of this provider must have (Gatehouse's); empty: any. */
  readonly allowedEmailDomains: readonly string[]
  readonly issuer: string | null
  readonly discoveryUrl: string | null
  readonly skipNonceCheck: boolean
  readonly cachedDiscovery: CachedDiscovery | null
  readonly authorizationUrl: string | null
  readonly tokenUrl: string | null
  readonly userinfoUrl: string | null
  readonly jwksUri: string | null
  readonly createdAt: Date
  readonly updatedAt: Date
}

interface Row {
  id: string
  provider_type: CustomProviderType
  identifier: string
  name: string
  client_id: string
  client_secret: string
  acceptable_client_ids: string[]
  scopes: string[]
  pkce_enabled: boolean
  attribute_mapping: JsonObject
  custom_claims_allowlist: string[]
  authorization_params: Record<string, string>
  enabled: boolean
  email_optional: boolean
  allowed_email_domains: string[]
  issuer: string | null
  discovery_url: string | null
  skip_nonce_check: boolean
  cached_discovery: CachedDiscovery | null
  authorization_url: string | null
  token_url: string | null
  userinfo_url: string | null
  jwks_uri: string | null
  created_at: Date
  updated_at: Date
}

function fromRow(r: Row): CustomProvider {
  return {
    id: r.id,
    providerType: r.provider_type,
    identifier: r.identifier,
    name: r.name,
    clientId: r.client_id,
    sealedClientSecret: r.client_secret,
    acceptableClientIds: r.acceptable_client_ids,
    scopes: r.scopes,
    pkceEnabled: r.pkce_enabled,
    attributeMapping: r.attribute_mapping,
    customClaimsAllowlist: r.custom_claims_allowlist,
    authorizationParams: r.authorization_params,
    enabled: r.enabled,
    emailOptional: r.email_optional,
    allowedEmailDomains: r.allowed_email_domains,
    issuer: r.issuer,
    discoveryUrl: r.discovery_url,
    skipNonceCheck: r.skip_nonce_check,
    cachedDiscovery: r.cached_discovery,
    authorizationUrl: r.authorization_url,
    tokenUrl: r.token_url,
    userinfoUrl: r.userinfo_url,
    jwksUri: r.jwks_uri,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  }
}

/** The custom provider called `identifier`, `undefined` when there is none. */
export async function findCustomProvider(
  tx: Queryable,
  identifier: string,
): Promise<CustomProvider | undefined> {
  const { rows } = await tx.query<Row>(
    `SELECT * FROM ${tx.t.customOauthProviders} WHERE identifier = $1`,
    [identifier],
  )
  const row = rows[0]
  return row === undefined ? undefined : fromRow(row)
}

/** Every custom provider (of `type`, when given), the newest first. */
export async function listCustomProviders(
  tx: Queryable,
  type?: CustomProviderType,
): Promise<CustomProvider[]> {
  const { rows } =
    type === undefined
      ? await tx.query<Row>(`SELECT * FROM ${tx.t.customOauthProviders} ORDER BY created_at DESC`)
      : await tx.query<Row>(
          `SELECT * FROM ${tx.t.customOauthProviders} WHERE provider_type = $1
           ORDER BY created_at DESC`,
          [type],
        )
  return rows.map(fromRow)
}

/** How many custom providers there are. */
export async function countCustomProviders(tx: Queryable): Promise<number> {
  const { rows } = await tx.query<{ n: string }>(
    `SELECT count(*) AS n FROM ${tx.t.customOauthProviders}`,
  )
  return Number(rows[0]?.n ?? 0)
}

const COLUMNS = [
  'provider_type',
  'identifier',
  'name',
  'client_id',
  'client_secret',
  'acceptable_client_ids',
  'scopes',
  'pkce_enabled',
  'attribute_mapping',
  'custom_claims_allowlist',
  'authorization_params',
  'enabled',
  'email_optional',
  'allowed_email_domains',
  'issuer',
  'discovery_url',
  'skip_nonce_check',
  'cached_discovery',
  'discovery_cached_at',
  'authorization_url',
  'token_url',
  'userinfo_url',
  'jwks_uri',
] as const

function values(p: CustomProvider, now: Date): unknown[] {
  return [
    p.providerType,
    p.identifier,
    p.name,
    p.clientId,
    p.sealedClientSecret,
    p.acceptableClientIds,
    p.scopes,
    p.pkceEnabled,
    JSON.stringify(p.attributeMapping),
    p.customClaimsAllowlist,
    JSON.stringify(p.authorizationParams),
    p.enabled,
    p.emailOptional,
    p.allowedEmailDomains,
    p.issuer,
    p.discoveryUrl,
    p.skipNonceCheck,
    p.cachedDiscovery === null ? null : JSON.stringify(p.cachedDiscovery),
    p.cachedDiscovery === null ? null : now,
    p.authorizationUrl,
    p.tokenUrl,
    p.userinfoUrl,
    p.jwksUri,
  ]
}

/** Casts of the JSON columns. */
const CASTS: Partial<Record<(typeof COLUMNS)[number], string>> = {
  attribute_mapping: '::jsonb',
  authorization_params: '::jsonb',
  cached_discovery: '::jsonb',
}

/**
 * Stores a new custom provider (its `id`, `createdAt` and `updatedAt` as given).
 *
 * @returns `false` when one with its identifier exists already.
 */
export async function insertCustomProvider(tx: Queryable, p: CustomProvider): Promise<boolean> {
  const placeholders = COLUMNS.map((c, i) => `$${String(i + 4)}${CASTS[c] ?? ''}`)
  const { rowCount } = await tx.query(
    `INSERT INTO ${tx.t.customOauthProviders} (id, created_at, updated_at, ${COLUMNS.join(', ')})
     VALUES ($1, $2, $3, ${placeholders.join(', ')})
     ON CONFLICT (identifier) DO NOTHING`,
    [p.id, p.createdAt, p.updatedAt, ...values(p, p.updatedAt)],
  )
  return rowCount === 1
}

/** Writes every field of an existing custom provider (by `id`), `updated_at` included. */
export async function updateCustomProvider(tx: Queryable, p: CustomProvider): Promise<void> {
  const sets = COLUMNS.map((c, i) => `${c} = $${String(i + 3)}${CASTS[c] ?? ''}`)
  await tx.query(
    `UPDATE ${tx.t.customOauthProviders} SET updated_at = $2, ${sets.join(', ')} WHERE id = $1`,
    [p.id, p.updatedAt, ...values(p, p.updatedAt)],
  )
}

/**
 * Deletes the custom provider called `identifier`.
 *
 * @returns Whether there was one.
 */
export async function deleteCustomProvider(tx: Queryable, identifier: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    `DELETE FROM ${tx.t.customOauthProviders} WHERE identifier = $1`,
    [identifier],
  )
  return rowCount === 1
}
