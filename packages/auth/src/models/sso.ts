/**
 * `sso_providers`, `sso_domains`, `saml_providers`, `saml_relay_states` and
 * `saml_used_assertions`: the SAML identity providers an admin registered, the email domains that
 * pick them, the sign-ins started at `/sso` waiting for their assertion, and the assertions
 * already used.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/models/sso.go
 * @module
 */
import type { Queryable } from '../storage/db.js'
import { asObject } from './json.js'

/** One key of an attribute mapping: where a claim comes from in the assertion's attributes. */
export interface SamlAttribute {
  /** The attribute's name. */
  readonly name?: string
  /** Attribute names tried in order (after `name`). */
  readonly names?: readonly string[]
  /** The claim's value when no attribute has one. */
  readonly default?: unknown
  /** Keep every value as an array (else the first value). */
  readonly array?: boolean
}

/** `saml_providers.attribute_mapping` (upstream `SAMLAttributeMapping`). */
export interface SamlAttributeMapping {
  readonly keys?: Readonly<Record<string, SamlAttribute>>
}

/** An SSO identity provider with its SAML connection and domains (upstream `SSOProvider`). */
export interface SsoProvider {
  readonly id: string
  readonly resourceId: string | null
  readonly disabled: boolean | null
  readonly entityId: string
  readonly metadataXml: string
  readonly metadataUrl: string | null
  readonly attributeMapping: SamlAttributeMapping
  readonly nameIdFormat: string | null
  /** The lower-cased domains, in the order they were added. */
  readonly domains: readonly string[]
  readonly createdAt: Date
  readonly updatedAt: Date
  /** When the SAML connection (its metadata) was last written. */
  readonly samlUpdatedAt: Date
}

/** What {@link insertSsoProvider} stores. */
export interface NewSsoProvider {
  readonly id: string
  readonly samlId: string
  readonly resourceId: string | null
  readonly disabled: boolean | null
  readonly entityId: string
  readonly metadataXml: string
  readonly metadataUrl: string | null
  readonly attributeMapping: SamlAttributeMapping
  readonly nameIdFormat: string | null
  /** `[id, domain]` pairs. */
  readonly domains: readonly (readonly [string, string])[]
}

interface ProviderRow {
  id: string
  resource_id: string | null
  disabled: boolean | null
  created_at: Date | null
  updated_at: Date | null
  entity_id: string
  metadata_xml: string
  metadata_url: string | null
  attribute_mapping: unknown
  name_id_format: string | null
  saml_updated_at: Date | null
  domains: string[] | null
}

function select(tx: Queryable, where: string): string {
  const { t } = tx
  return `SELECT p.id, p.resource_id, p.disabled, p.created_at, p.updated_at, s.entity_id,
      s.metadata_xml, s.metadata_url, s.attribute_mapping, s.name_id_format,
      s.updated_at AS saml_updated_at,
      ARRAY(SELECT d.domain FROM ${t.ssoDomains} d WHERE d.sso_provider_id = p.id
            ORDER BY d.created_at, d.domain) AS domains
    FROM ${t.ssoProviders} p JOIN ${t.samlProviders} s ON s.sso_provider_id = p.id
    WHERE ${where}`
}

function fromRow(r: ProviderRow): SsoProvider {
  return {
    id: r.id,
    resourceId: r.resource_id,
    disabled: r.disabled,
    entityId: r.entity_id,
    metadataXml: r.metadata_xml,
    metadataUrl: r.metadata_url,
    attributeMapping: asObject(r.attribute_mapping),
    nameIdFormat: r.name_id_format,
    domains: r.domains ?? [],
    createdAt: r.created_at ?? new Date(0),
    updatedAt: r.updated_at ?? new Date(0),
    samlUpdatedAt: r.saml_updated_at ?? new Date(0),
  }
}

async function findOne(
  tx: Queryable,
  where: string,
  params: readonly unknown[],
): Promise<SsoProvider | undefined> {
  const { rows } = await tx.query<ProviderRow>(`${select(tx, where)} LIMIT 1`, params)
  return rows[0] ? fromRow(rows[0]) : undefined
}

/** Whether a provider may be used (`disabled` is `null` or `false`). */
export function isSsoProviderEnabled(provider: Pick<SsoProvider, 'disabled'>): boolean {
  return provider.disabled !== true
}

/** The provider of an id, or `undefined`. */
export function findSsoProviderById(tx: Queryable, id: string): Promise<SsoProvider | undefined> {
  return findOne(tx, 'p.id = $1', [id])
}

/** The provider of a `resource_id`, or `undefined`. */
export function findSsoProviderByResourceId(
  tx: Queryable,
  resourceId: string,
): Promise<SsoProvider | undefined> {
  return findOne(tx, 'p.resource_id = $1', [resourceId])
}

/** The provider a domain is assigned to (case-insensitive), or `undefined`. */
export function findSsoProviderByDomain(
  tx: Queryable,
  domain: string,
): Promise<SsoProvider | undefined> {
  return findOne(
    tx,
    `p.id = (SELECT sso_provider_id FROM ${tx.t.ssoDomains} WHERE lower(domain) = lower($1) LIMIT 1)`,
    [domain],
  )
}

/** The provider of a SAML entity ID, or `undefined`. */
export function findSsoProviderByEntityId(
  tx: Queryable,
  entityId: string,
): Promise<SsoProvider | undefined> {
  return findOne(tx, 's.entity_id = $1', [entityId])
}

/** Every provider (`resource_id` or `resource_id_prefix` filter), oldest first. */
export async function listSsoProviders(
  tx: Queryable,
  filter: { readonly resourceId?: string; readonly resourceIdPrefix?: string },
): Promise<SsoProvider[]> {
  let where = 'true'
  const params: unknown[] = []
  if (filter.resourceId !== undefined && filter.resourceId !== '') {
    where = 'p.resource_id = $1'
    params.push(filter.resourceId)
  } else if (filter.resourceIdPrefix !== undefined && filter.resourceIdPrefix !== '') {
    where = `p.resource_id LIKE $1 || '%'`
    params.push(filter.resourceIdPrefix.replace(/[\\%_]/g, (c) => `\\${c}`))
  }
  const { rows } = await tx.query<ProviderRow>(
    `${select(tx, where)} ORDER BY p.created_at, p.id`,
    params,
  )
  return rows.map(fromRow)
}

/**
 * Stores a provider, its SAML connection and its domains.
 *
 * @param now Epoch milliseconds.
 */
export async function insertSsoProvider(
  tx: Queryable,
  p: NewSsoProvider,
  now: number,
): Promise<void> {
  const at = new Date(now)
  await tx.query(
    `INSERT INTO ${tx.t.ssoProviders} (id, resource_id, disabled, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $4)`,
    [p.id, p.resourceId, p.disabled, at],
  )
  await tx.query(
    `INSERT INTO ${tx.t.samlProviders} (id, sso_provider_id, entity_id, metadata_xml, metadata_url,
       attribute_mapping, name_id_format, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $8)`,
    [
      p.samlId,
      p.id,
      p.entityId,
      p.metadataXml,
      p.metadataUrl,
      JSON.stringify(p.attributeMapping),
      p.nameIdFormat,
      at,
    ],
  )
  await insertSsoDomains(tx, p.id, p.domains, now)
}

/**
 * Adds domains to a provider.
 *
 * @param now Epoch milliseconds.
 */
export async function insertSsoDomains(
  tx: Queryable,
  providerId: string,
  domains: readonly (readonly [string, string])[],
  now: number,
): Promise<void> {
  for (const [id, domain] of domains) {
    await tx.query(
      `INSERT INTO ${tx.t.ssoDomains} (id, sso_provider_id, domain, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $4)`,
      [id, providerId, domain, new Date(now)],
    )
  }
}

/** Removes domains from a provider. */
export async function deleteSsoDomains(
  tx: Queryable,
  providerId: string,
  domains: readonly string[],
): Promise<void> {
  if (domains.length === 0) return
  await tx.query(
    `DELETE FROM ${tx.t.ssoDomains} WHERE sso_provider_id = $1 AND domain = ANY($2::text[])`,
    [providerId, domains],
  )
}

/** What {@link updateSsoProvider} changes. */
export type SsoProviderChange = Partial<
  Pick<
    SsoProvider,
    'resourceId' | 'disabled' | 'metadataXml' | 'metadataUrl' | 'attributeMapping' | 'nameIdFormat'
  >
>

/**
 * Writes a provider's changed fields (and `updated_at` of the rows it touches).
 *
 * @param now Epoch milliseconds.
 */
export async function updateSsoProvider(
  tx: Queryable,
  id: string,
  change: SsoProviderChange,
  now: number,
): Promise<void> {
  const at = new Date(now)
  await tx.query(
    `UPDATE ${tx.t.ssoProviders} SET
       resource_id = CASE WHEN $2 THEN $3 ELSE resource_id END,
       disabled = CASE WHEN $4 THEN $5::boolean ELSE disabled END,
       updated_at = $6
     WHERE id = $1`,
    [
      id,
      'resourceId' in change,
      change.resourceId ?? null,
      'disabled' in change,
      change.disabled ?? null,
      at,
    ],
  )
  await tx.query(
    `UPDATE ${tx.t.samlProviders} SET
       metadata_xml = COALESCE($2, metadata_xml),
       metadata_url = CASE WHEN $3 THEN $4 ELSE metadata_url END,
       attribute_mapping = COALESCE($5::jsonb, attribute_mapping),
       name_id_format = CASE WHEN $6 THEN $7 ELSE name_id_format END,
       updated_at = CASE WHEN $2::text IS NULL THEN updated_at ELSE $8 END
     WHERE sso_provider_id = $1`,
    [
      id,
      change.metadataXml ?? null,
      'metadataUrl' in change,
      change.metadataUrl ?? null,
      change.attributeMapping === undefined ? null : JSON.stringify(change.attributeMapping),
      'nameIdFormat' in change,
      change.nameIdFormat ?? null,
      at,
    ],
  )
}

/** Deletes a provider (its SAML connection, domains and relay states go with it). */
export async function deleteSsoProvider(tx: Queryable, id: string): Promise<void> {
  await tx.query(`DELETE FROM ${tx.t.ssoProviders} WHERE id = $1`, [id])
}

/** A sign-in started at `/sso`, waiting for its assertion (upstream `SAMLRelayState`). */
export interface SamlRelayState {
  readonly id: string
  readonly ssoProviderId: string
  /** The AuthnRequest's ID: the assertion's `InResponseTo`. */
  readonly requestId: string
  readonly redirectTo: string
  readonly flowStateId: string | null
  readonly createdAt: Date
}

/**
 * Stores a relay state.
 *
 * @param now Epoch milliseconds.
 */
export async function insertSamlRelayState(
  tx: Queryable,
  state: Omit<SamlRelayState, 'createdAt'>,
  now: number,
): Promise<void> {
  await tx.query(
    `INSERT INTO ${tx.t.samlRelayStates} (id, sso_provider_id, request_id, redirect_to,
       flow_state_id, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $6)`,
    [
      state.id,
      state.ssoProviderId,
      state.requestId,
      state.redirectTo,
      state.flowStateId,
      new Date(now),
    ],
  )
}

/**
 * Takes a relay state: deletes it and returns what it was (`undefined` when there is none), so
 * that each is used once, whatever happens next.
 */
export async function takeSamlRelayState(
  tx: Queryable,
  id: string,
): Promise<SamlRelayState | undefined> {
  const { rows } = await tx.query<{
    id: string
    sso_provider_id: string
    request_id: string
    redirect_to: string | null
    flow_state_id: string | null
    created_at: Date | null
  }>(
    `DELETE FROM ${tx.t.samlRelayStates} WHERE id = $1
     RETURNING id, sso_provider_id, request_id, redirect_to, flow_state_id, created_at`,
    [id],
  )
  const r = rows[0]
  if (r === undefined) return undefined
  return {
    id: r.id,
    ssoProviderId: r.sso_provider_id,
    requestId: r.request_id,
    redirectTo: r.redirect_to ?? '',
    flowStateId: r.flow_state_id,
    createdAt: r.created_at ?? new Date(0),
  }
}

/**
 * Records that an assertion was used, deleting a few records past their expiry on the way.
 *
 * @param expiresAt Epoch milliseconds after which the assertion can no longer be accepted.
 * @param now Epoch milliseconds.
 * @returns `false` when this provider's assertion of that ID was already recorded (a replay).
 */
export async function recordSamlAssertionUse(
  tx: Queryable,
  use: { readonly ssoProviderId: string; readonly assertionId: string; readonly expiresAt: number },
  now: number,
): Promise<boolean> {
  const table = tx.t.samlUsedAssertions
  await tx.query(
    `DELETE FROM ${table} WHERE (sso_provider_id, assertion_id) IN (
       SELECT sso_provider_id, assertion_id FROM ${table} WHERE expires_at < $1
       LIMIT 100 FOR UPDATE SKIP LOCKED)`,
    [new Date(now)],
  )
  const { rowCount } = await tx.query(
    `INSERT INTO ${table} (sso_provider_id, assertion_id, created_at, expires_at)
     VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
    [use.ssoProviderId, use.assertionId, new Date(now), new Date(use.expiresAt)],
  )
  return rowCount === 1
}

/**
 * Replaces a provider's metadata fetched again from its `metadata_url` (and `updated_at` of its
 * SAML connection, from which the next refresh is counted).
 *
 * @param now Epoch milliseconds.
 */
export async function refreshSamlMetadata(
  tx: Queryable,
  ssoProviderId: string,
  metadataXml: string,
  now: number,
): Promise<void> {
  await tx.query(
    `UPDATE ${tx.t.samlProviders} SET metadata_xml = $2, updated_at = $3 WHERE sso_provider_id = $1`,
    [ssoProviderId, metadataXml, new Date(now)],
  )
}
