/**
 * `/admin/sso/providers`: registering, reading, changing and removing SAML identity providers.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/ssoadmin.go
 * @module
 */
import type { AppContext } from '../context.js'
import { BadRequestError, NotFoundError, UnprocessableEntityError } from '../errors.js'
import {
  deleteSsoDomains,
  deleteSsoProvider,
  findSsoProviderByDomain,
  findSsoProviderByEntityId,
  findSsoProviderById,
  findSsoProviderByResourceId,
  insertSsoDomains,
  insertSsoProvider,
  listSsoProviders,
  updateSsoProvider,
  type SamlAttributeMapping,
  type SsoProvider,
  type SsoProviderChange,
} from '../models/sso.js'
import { AdminUrlFetchError, fetchAdminUrl } from '../security/admin-url-fetch.js'
import { isUniqueViolation } from '../storage/db.js'
import { NAME_ID_FORMATS, parseIdpMetadata, type IdpMetadata } from './shared/saml.js'
import { isUuid } from './shared/validation.js'

/** Longest a `metadata_url` fetch may take. */
export const METADATA_FETCH_TIMEOUT_MS = 10_000
/** Largest metadata document fetched from a `metadata_url`. */
export const METADATA_MAX_BYTES = 1_000_000

/** The body of `POST /admin/sso/providers` and `PUT /admin/sso/providers/{idp_id}`. */
export interface SsoProviderParams {
  readonly type: string
  readonly metadataUrl: string
  readonly metadataXml: string
  /** `undefined`: not given (an update leaves the domains). */
  readonly domains: readonly string[] | undefined
  /** `undefined`: not given. */
  readonly attributeMapping: SamlAttributeMapping | undefined
  readonly nameIdFormat: string
  readonly resourceId: string | undefined
  readonly disabled: boolean | undefined
}

function invalid(message: string): BadRequestError {
  return new BadRequestError('validation_failed', message)
}

function notFound(): NotFoundError {
  return new NotFoundError('sso_provider_not_found', 'SSO Identity Provider not found')
}

/** Upstream's checks of the body, then ours of the domains and the mapping. */
function validate(p: SsoProviderParams, forUpdate: boolean): void {
  if (!forUpdate && p.type !== 'saml') {
    throw invalid("Only 'saml' supported for SSO provider type")
  }
  if (p.metadataUrl !== '' && p.metadataXml !== '') {
    throw invalid('Only one of metadata_xml or metadata_url needs to be set')
  }
  if (!forUpdate && p.metadataUrl === '' && p.metadataXml === '') {
    throw invalid('Either metadata_xml or metadata_url must be set')
  }
  if (p.metadataUrl !== '') {
    let url: URL
    try {
      url = new URL(p.metadataUrl)
    } catch {
      throw invalid('metadata_url is not a valid URL')
    }
    if (url.protocol !== 'https:') throw invalid('metadata_url is not a HTTPS URL')
  }
  if (p.nameIdFormat !== '' && !(NAME_ID_FORMATS as readonly string[]).includes(p.nameIdFormat)) {
    throw invalid(`name_id_format must be unspecified or one of ${NAME_ID_FORMATS.join(', ')}`)
  }
  for (const domain of p.domains ?? []) {
    if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/i.test(domain)) {
      throw invalid(`Domain '${domain}' is not a valid domain name`)
    }
  }
  for (const [key, attribute] of Object.entries(p.attributeMapping?.keys ?? {})) {
    const a = attribute as unknown
    if (typeof a !== 'object' || a === null || Array.isArray(a)) {
      throw invalid(`attribute_mapping.keys.${key} must be an object`)
    }
    const { name, names, array } = a as Record<string, unknown>
    if (name !== undefined && typeof name !== 'string') {
      throw invalid(`attribute_mapping.keys.${key}.name must be a string`)
    }
    if (
      names !== undefined &&
      !(Array.isArray(names) && names.every((n) => typeof n === 'string'))
    ) {
      throw invalid(`attribute_mapping.keys.${key}.names must be an array of strings`)
    }
    if (array !== undefined && typeof array !== 'boolean') {
      throw invalid(`attribute_mapping.keys.${key}.array must be a boolean`)
    }
  }
}

/**
 * Fetches a `metadata_url` (HTTPS, 10 s, 1 MB, public addresses unless
 * `SECURITY_ALLOW_PRIVATE_URLS`).
 *
 * @throws {@link BadRequestError} `saml_metadata_fetch_failed` saying why.
 */
export async function fetchSamlMetadata(ctx: AppContext, url: string): Promise<string> {
  try {
    return await fetchAdminUrl(url, {
      allowPrivate: ctx.settings.security.allowPrivateUrls,
      timeoutMs: METADATA_FETCH_TIMEOUT_MS,
      maxBytes: METADATA_MAX_BYTES,
      headers: { accept: 'application/xml;charset=UTF-8', 'accept-charset': 'UTF-8' },
    })
  } catch (error) {
    if (!(error instanceof AdminUrlFetchError)) throw error
    throw new BadRequestError(
      'saml_metadata_fetch_failed',
      `Error fetching SAML Metadata: ${error.message}`,
      { cause: error },
    )
  }
}

async function metadataOf(
  ctx: AppContext,
  p: SsoProviderParams,
): Promise<{ raw: string; metadata: IdpMetadata }> {
  const raw = p.metadataXml !== '' ? p.metadataXml : await fetchSamlMetadata(ctx, p.metadataUrl)
  return { raw, metadata: await parseIdpMetadata(raw) }
}

function normalizeDomains(domains: readonly string[] | undefined): string[] | undefined {
  return domains === undefined
    ? undefined
    : [...new Set(domains.map((d) => d.trim().toLowerCase()))]
}

/**
 * The provider an `{idp_id}` names: its UUID, or `resource_<resource id>`.
 *
 * @throws {@link NotFoundError} `sso_provider_not_found` "SSO Identity Provider not found".
 */
export async function getSsoProvider(ctx: AppContext, idpId: string): Promise<SsoProvider> {
  const provider = idpId.startsWith('resource_')
    ? await findSsoProviderByResourceId(ctx.db, idpId.slice('resource_'.length))
    : isUuid(idpId)
      ? await findSsoProviderById(ctx.db, idpId)
      : undefined
  if (provider === undefined) throw notFound()
  return provider
}

/** Every provider, filtered by `resource_id` or `resource_id_prefix`. */
export function listProviders(
  ctx: AppContext,
  filter: { readonly resourceId?: string; readonly resourceIdPrefix?: string },
): Promise<SsoProvider[]> {
  return listSsoProviders(ctx.db, filter)
}

async function checkDomainsFree(
  ctx: AppContext,
  domains: readonly string[],
  ownId: string | undefined,
): Promise<string[]> {
  const added: string[] = []
  for (const domain of domains) {
    const holder = await findSsoProviderByDomain(ctx.db, domain)
    if (holder === undefined) added.push(domain)
    else if (holder.id !== ownId) {
      throw new BadRequestError(
        'sso_domain_already_exists',
        ownId === undefined
          ? `SSO Domain '${domain}' is already assigned to an SSO identity provider (${holder.id})`
          : `SSO domain '${domain}' already assigned to another provider (${holder.id})`,
      )
    }
  }
  return added
}

/**
 * Registers a SAML identity provider (`POST /admin/sso/providers`).
 *
 * @throws {@link BadRequestError} `validation_failed` for the body or the metadata,
 *   `saml_metadata_fetch_failed`, `sso_domain_already_exists`; {@link UnprocessableEntityError}
 *   `saml_idp_already_exists`.
 */
export async function createSsoProvider(
  ctx: AppContext,
  p: SsoProviderParams,
): Promise<SsoProvider> {
  validate(p, false)
  const { raw, metadata } = await metadataOf(ctx, p)
  const exists = () =>
    new UnprocessableEntityError(
      'saml_idp_already_exists',
      `SAML Identity Provider with this EntityID (${metadata.entityId}) already exists`,
    )
  if ((await findSsoProviderByEntityId(ctx.db, metadata.entityId)) !== undefined) throw exists()
  const domains = normalizeDomains(p.domains) ?? []
  await checkDomainsFree(ctx, domains, undefined)
  const id = ctx.random.uuid()
  try {
    await ctx.db.transaction((tx) =>
      insertSsoProvider(
        tx,
        {
          id,
          samlId: ctx.random.uuid(),
          resourceId: p.resourceId === undefined || p.resourceId === '' ? null : p.resourceId,
          disabled: p.disabled ?? null,
          entityId: metadata.entityId,
          metadataXml: raw,
          metadataUrl: p.metadataUrl === '' ? null : p.metadataUrl,
          attributeMapping: p.attributeMapping ?? {},
          nameIdFormat: p.nameIdFormat === '' ? null : p.nameIdFormat,
          domains: domains.map((d) => [ctx.random.uuid(), d] as const),
        },
        ctx.clock.now(),
      ),
    )
  } catch (error) {
    if (isUniqueViolation(error, ctx.db.t.samlProviders)) throw exists()
    if (conflicts(ctx, error)) {
      throw new UnprocessableEntityError(
        'conflict',
        'Creating SSO provider failed, likely due to a conflict. Try again?',
        { cause: error },
      )
    }
    throw error
  }
  return getSsoProvider(ctx, id)
}

/** A unique index of the domains or the resource ids refused a write (a concurrent change). */
function conflicts(ctx: AppContext, error: unknown): boolean {
  return (
    isUniqueViolation(error, ctx.db.t.ssoDomains) || isUniqueViolation(error, ctx.db.t.ssoProviders)
  )
}

function sameMapping(a: SamlAttributeMapping, b: SamlAttributeMapping): boolean {
  return JSON.stringify(a.keys ?? {}) === JSON.stringify(b.keys ?? {})
}

/**
 * Changes a provider (`PUT /admin/sso/providers/{idp_id}`): new metadata (same entity ID),
 * domains (when given; `[]` removes them all), attribute mapping, `name_id_format` (empty
 * clears it), `resource_id`, `disabled`.
 *
 * @throws As {@link createSsoProvider}; {@link BadRequestError} `saml_entity_id_mismatch`;
 *   {@link UnprocessableEntityError} `conflict`.
 */
export async function updateSsoProviderAsAdmin(
  ctx: AppContext,
  provider: SsoProvider,
  p: SsoProviderParams,
): Promise<SsoProvider> {
  validate(p, true)
  const change: { -readonly [K in keyof SsoProviderChange]: SsoProviderChange[K] } = {}
  if (p.metadataXml !== '' || p.metadataUrl !== '') {
    const { raw, metadata } = await metadataOf(ctx, p)
    if (metadata.entityId !== provider.entityId) {
      throw new BadRequestError(
        'saml_entity_id_mismatch',
        `SAML Metadata can be updated only if the EntityID matches for the provider; expected '${provider.entityId}' but got '${metadata.entityId}'`,
      )
    }
    change.metadataXml = raw
    if (p.metadataUrl !== '') change.metadataUrl = p.metadataUrl
  }
  const domains = normalizeDomains(p.domains)
  const added = domains === undefined ? [] : await checkDomainsFree(ctx, domains, provider.id)
  const removed = domains === undefined ? [] : provider.domains.filter((d) => !domains.includes(d))
  if (
    p.attributeMapping?.keys !== undefined &&
    !sameMapping(p.attributeMapping, provider.attributeMapping)
  ) {
    change.attributeMapping = p.attributeMapping
  }
  if (p.nameIdFormat !== (provider.nameIdFormat ?? '')) {
    change.nameIdFormat = p.nameIdFormat === '' ? null : p.nameIdFormat
  }
  if (p.resourceId !== undefined && p.resourceId !== (provider.resourceId ?? '')) {
    change.resourceId = p.resourceId === '' ? null : p.resourceId
  }
  if (p.disabled !== undefined && p.disabled !== provider.disabled) change.disabled = p.disabled
  if (Object.keys(change).length === 0 && added.length === 0 && removed.length === 0) {
    return provider
  }
  try {
    await ctx.db.transaction(async (tx) => {
      const now = ctx.clock.now()
      await updateSsoProvider(tx, provider.id, change, now)
      await deleteSsoDomains(tx, provider.id, removed)
      await insertSsoDomains(
        tx,
        provider.id,
        added.map((d) => [ctx.random.uuid(), d] as const),
        now,
      )
    })
  } catch (error) {
    if (!conflicts(ctx, error)) throw error
    throw new UnprocessableEntityError(
      'conflict',
      'Updating SSO provider failed, likely due to a conflict. Try again?',
      { cause: error },
    )
  }
  return getSsoProvider(ctx, provider.id)
}

/** Removes a provider (`DELETE /admin/sso/providers/{idp_id}`); its users stay. */
export async function deleteSsoProviderAsAdmin(
  ctx: AppContext,
  provider: SsoProvider,
): Promise<SsoProvider> {
  await deleteSsoProvider(ctx.db, provider.id)
  return provider
}
