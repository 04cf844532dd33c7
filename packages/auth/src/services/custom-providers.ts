/**
 * The admin API of custom OAuth/OIDC providers (upstream `custom_oauth_admin.go`): list, read,
 * create, update and delete, with upstream's checks, error codes and texts. Every URL goes
 * through the SSRF guard (`security/url-guard.ts`); an OIDC provider's discovery document is
 * fetched (through `@gatehouse/oauth2`), checked and kept when its issuer is set; the client
 * secret is sealed (AES-256-GCM) and never answered.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/custom_oauth_admin.go
 * @module
 */
import { Client } from '@gatehouse/oauth2'
import type { AppContext } from '../context.js'
import { BadRequestError, InternalServerError, NotFoundError } from '../errors.js'
import {
  countCustomProviders,
  deleteCustomProvider,
  findCustomProvider,
  insertCustomProvider,
  listCustomProviders,
  updateCustomProvider,
  type CachedDiscovery,
  type CustomProvider,
  type CustomProviderType,
} from '../models/custom-provider.js'
import type { JsonObject } from '../models/json.js'
import { checkRegisteredUrl } from '../security/url-guard.js'

/** A create or update body, as upstream's `AdminCustomOAuthProviderParams` decodes it. */
export interface CustomProviderParams {
  readonly providerType: string
  readonly identifier: string
  readonly name: string
  readonly clientId: string
  readonly clientSecret: string
  readonly acceptableClientIds?: readonly string[] | undefined
  readonly scopes?: readonly string[] | undefined
  readonly pkceEnabled?: boolean | undefined
  readonly attributeMapping?: JsonObject | undefined
  readonly customClaimsAllowlist?: readonly string[] | undefined
  readonly authorizationParams?: JsonObject | undefined
  readonly enabled?: boolean | undefined
  readonly emailOptional?: boolean | undefined
  readonly allowedEmailDomains?: readonly string[] | undefined
  readonly issuer: string
  readonly discoveryUrl?: string | undefined
  readonly skipNonceCheck?: boolean | undefined
  readonly authorizationUrl: string
  readonly tokenUrl: string
  readonly userinfoUrl: string
  readonly jwksUri?: string | undefined
}

/** Parameters the server controls, never stored as `authorization_params` (upstream's list). */
const RESERVED_PARAMS = [
  'client_id',
  'client_secret',
  'redirect_uri',
  'response_type',
  'state',
  'code_challenge',
  'code_challenge_method',
  'code_verifier',
  'nonce',
]

/** Claims an attribute mapping may not fill (upstream's `blockedTargets`). */
const PROTECTED_TARGETS = [
  'id',
  'aud',
  'role',
  'app_metadata',
  'created_at',
  'updated_at',
  'confirmed_at',
  'email_confirmed_at',
  'phone_confirmed_at',
  'email_verified',
  'phone_verified',
  'banned_until',
  'is_super_admin',
]

/** Upstream's table constraint on identifiers, checked before the database sees one. */
const IDENTIFIER = /^custom:[a-z0-9](?:[a-z0-9-]{0,41}[a-z0-9])?$/

/** A domain name (`example.com`), lowercase letters, digits, hyphens and dots. */
const DOMAIN = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/

const invalid = (message: string) => new BadRequestError('validation_failed', message)

/** `identifier` of a path: upstream's `custom:` prefix check. */
function checkPathIdentifier(identifier: string): void {
  if (identifier === '') throw invalid('identifier is required')
  if (!identifier.startsWith('custom:')) {
    throw invalid(`identifier must start with 'custom:' prefix, e.g. 'custom:${identifier}'`)
  }
}

function notFound(): never {
  throw new NotFoundError('custom_provider_not_found', 'Custom OAuth provider not found')
}

/** The custom provider's JSON (upstream's model; the client secret never). */
export function serializeCustomProvider(p: CustomProvider): JsonObject {
  const optional = (key: string, value: unknown): JsonObject =>
    value === null || value === undefined ? {} : { [key]: value }
  return {
    id: p.id,
    provider_type: p.providerType,
    identifier: p.identifier,
    name: p.name,
    client_id: p.clientId,
    acceptable_client_ids: [...p.acceptableClientIds],
    scopes: [...p.scopes],
    pkce_enabled: p.pkceEnabled,
    attribute_mapping: p.attributeMapping,
    custom_claims_allowlist: [...p.customClaimsAllowlist],
    authorization_params: p.authorizationParams,
    enabled: p.enabled,
    email_optional: p.emailOptional,
    allowed_email_domains: [...p.allowedEmailDomains],
    ...optional('issuer', p.issuer),
    ...optional('discovery_url', p.discoveryUrl),
    skip_nonce_check: p.skipNonceCheck,
    ...optional('discovery_document', p.cachedDiscovery),
    ...optional('authorization_url', p.authorizationUrl),
    ...optional('token_url', p.tokenUrl),
    ...optional('userinfo_url', p.userinfoUrl),
    ...optional('jwks_uri', p.jwksUri),
    created_at: p.createdAt.toISOString(),
    updated_at: p.updatedAt.toISOString(),
  }
}

/**
 * Every custom provider, the newest first (`?type=oauth2|oidc`).
 *
 * @throws {@link BadRequestError} `validation_failed` "type must be either 'oauth2' or 'oidc'".
 */
export async function listProviders(ctx: AppContext, type: string): Promise<CustomProvider[]> {
  if (type !== '' && type !== 'oauth2' && type !== 'oidc') {
    throw invalid("type must be either 'oauth2' or 'oidc'")
  }
  return listCustomProviders(ctx.db, type === '' ? undefined : type)
}

/**
 * The custom provider `identifier`.
 *
 * @throws {@link NotFoundError} `custom_provider_not_found`; {@link BadRequestError} for an
 *   identifier without `custom:`.
 */
export async function getProvider(ctx: AppContext, identifier: string): Promise<CustomProvider> {
  checkPathIdentifier(identifier)
  return (await findCustomProvider(ctx.db, identifier)) ?? notFound()
}

/** Checks `authorization_params`, `attribute_mapping`, the allowlist and the email domains. */
function checkMaps(params: CustomProviderParams): void {
  for (const [key, value] of Object.entries(params.authorizationParams ?? {})) {
    if (RESERVED_PARAMS.includes(key)) {
      throw invalid(`Cannot override reserved OAuth parameter: ${key}`)
    }
    if (typeof value !== 'string') {
      throw invalid(`Authorization parameter ${JSON.stringify(key)} must be a string`)
    }
  }
  for (const target of Object.keys(params.attributeMapping ?? {})) {
    if (PROTECTED_TARGETS.includes(target)) {
      throw invalid(`Cannot map to protected system field: ${target}`)
    }
  }
  if ((params.customClaimsAllowlist ?? []).some((key) => key.trim() === '')) {
    throw invalid('custom_claims_allowlist entries must be non-empty strings')
  }
  for (const domain of params.allowedEmailDomains ?? []) {
    if (!DOMAIN.test(domain.toLowerCase())) {
      throw invalid(`allowed_email_domains: ${JSON.stringify(domain)} is not a domain name`)
    }
  }
}

/** Scopes with `openid` first when an OIDC provider's lack it (upstream). */
function scopesFor(type: CustomProviderType, scopes: readonly string[]): string[] {
  return type === 'oidc' && !scopes.includes('openid') ? ['openid', ...scopes] : [...scopes]
}

/**
 * Fetches an OIDC provider's discovery document (through `@gatehouse/oauth2`, 10 s and 512 KiB,
 * on the guarded transport; at `discoveryUrl` when set, else the issuer's well-known locations) and checks it names `issuer` and has the endpoints a sign-in needs.
 *
 * @throws {@link BadRequestError} `validation_failed` "OIDC discovery from … failed: …" or
 *   "OIDC discovery document is missing required fields: …".
 */
async function discover(
  ctx: AppContext,
  issuer: string,
  discoveryUrl: string | null,
): Promise<CachedDiscovery> {
  const fetch = ctx.customProviders?.fetch
  const at = discoveryUrl ?? `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`
  let metadata
  try {
    const client = await Client.discover(issuer, 'discovery', undefined, {
      clock: ctx.clock,
      connectionOpts: { timeout: 10_000, maxResponseBytes: 512 * 1024 },
      ...(discoveryUrl === null ? {} : { discoveryUrl }),
      ...(fetch === undefined ? {} : { fetch }),
    })
    metadata = client.options.metadata
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    throw invalid(`OIDC discovery from ${JSON.stringify(at)} failed: ${reason}`)
  }
  const m = metadata ?? { issuer: '' }
  const missing = (
    [
      ['issuer', m.issuer],
      ['authorization_endpoint', m.authorization_endpoint],
      ['token_endpoint', m.token_endpoint],
      ['jwks_uri', m.jwks_uri],
    ] as const
  )
    .filter(([, value]) => typeof value !== 'string' || value === '')
    .map(([key]) => key)
  if (missing.length > 0) {
    throw invalid(`OIDC discovery document is missing required fields: ${missing.join(', ')}`)
  }
  const strings = (value: unknown) =>
    Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : undefined
  const doc: Record<string, unknown> = {
    issuer: m.issuer,
    authorization_endpoint: m.authorization_endpoint,
    token_endpoint: m.token_endpoint,
    userinfo_endpoint: m.userinfo_endpoint,
    jwks_uri: m.jwks_uri,
    scopes_supported: strings(m.scopes_supported),
    response_types_supported: strings(m.response_types_supported),
    grant_types_supported: strings(m.grant_types_supported),
    subject_types_supported: strings(m.subject_types_supported),
    id_token_signing_alg_values_supported: strings(m.id_token_signing_alg_values_supported),
  }
  for (const key of Object.keys(doc)) if (doc[key] === undefined) Reflect.deleteProperty(doc, key)
  return doc as unknown as CachedDiscovery
}

/** The SSRF guard for one URL. */
function guard(ctx: AppContext, url: string): Promise<void> {
  return checkRegisteredUrl(
    url,
    ctx.customProviders?.guard ?? { allowPrivate: ctx.settings.security.allowPrivateUrls },
  )
}

/** Seals the client secret for the row `id`. */
function seal(ctx: AppContext, secret: string, id: string): string {
  const box = ctx.customProviders?.box
  if (box === undefined) {
    throw new InternalServerError(
      'unexpected_failure',
      'Error encrypting custom OAuth provider client secret',
      { cause: new Error('set CUSTOM_OAUTH_ENCRYPTION_KEY or JWT_SECRET') },
    )
  }
  return box.seal(secret, id)
}

/**
 * Creates a custom provider (`POST /admin/custom-providers`), in upstream's order of checks:
 * type, required fields, maps, quota, URLs (the SSRF guard), identifier taken, discovery.
 *
 * @throws {@link BadRequestError} `validation_failed`, `over_custom_provider_quota`, `conflict`.
 */
export async function createProvider(
  ctx: AppContext,
  params: CustomProviderParams,
): Promise<CustomProvider> {
  const type = params.providerType
  if (type !== 'oauth2' && type !== 'oidc') {
    throw invalid("provider_type must be either 'oauth2' or 'oidc'")
  }
  if (params.identifier === '') throw invalid('identifier is required')
  if (!params.identifier.startsWith('custom:')) {
    throw invalid(`identifier must start with 'custom:' prefix, e.g. 'custom:${params.identifier}'`)
  }
  if (!IDENTIFIER.test(params.identifier)) {
    throw invalid(
      "identifier must be 'custom:' and 1 to 43 lowercase letters, digits or inner hyphens",
    )
  }
  if (params.name === '') throw invalid('name is required')
  if (params.name.length > 100) throw invalid('name must be at most 100 characters')
  if (params.clientId === '') throw invalid('client_id is required')
  if (params.clientId.length > 512) throw invalid('client_id must be at most 512 characters')
  if (params.clientSecret === '') throw invalid('client_secret is required')
  if (type === 'oidc') {
    if (params.issuer === '') throw invalid('issuer is required for OIDC providers')
  } else {
    if (params.authorizationUrl === '') {
      throw invalid('authorization_url is required for OAuth2 providers')
    }
    if (params.tokenUrl === '') throw invalid('token_url is required for OAuth2 providers')
    if (params.userinfoUrl === '') throw invalid('userinfo_url is required for OAuth2 providers')
  }
  checkMaps(params)
  const max = ctx.settings.customOauth.maxProviders
  if (max > 0 && (await countCustomProviders(ctx.db)) >= max) {
    throw new BadRequestError(
      'over_custom_provider_quota',
      'Maximum number of custom OAuth/OIDC providers reached',
    )
  }
  const urls =
    type === 'oidc'
      ? [params.issuer, params.discoveryUrl ?? '']
      : [params.authorizationUrl, params.tokenUrl, params.userinfoUrl, params.jwksUri ?? '']
  for (const url of urls) {
    if (url.length > 2048) throw invalid('URLs must be at most 2048 characters')
    if (url !== '') await guard(ctx, url)
  }
  const conflict = () =>
    new BadRequestError('conflict', 'A custom OAuth provider with this identifier already exists')
  if ((await findCustomProvider(ctx.db, params.identifier)) !== undefined) throw conflict()
  const id = ctx.random.uuid()
  const now = new Date(ctx.clock.now())
  const oidc = type === 'oidc'
  const provider: CustomProvider = {
    id,
    providerType: type,
    identifier: params.identifier,
    name: params.name,
    clientId: params.clientId,
    sealedClientSecret: seal(ctx, params.clientSecret, id),
    acceptableClientIds: [...(params.acceptableClientIds ?? [])],
    scopes: scopesFor(type, params.scopes ?? []),
    pkceEnabled: params.pkceEnabled ?? true,
    attributeMapping: params.attributeMapping ?? {},
    customClaimsAllowlist: [...(params.customClaimsAllowlist ?? [])],
    authorizationParams: (params.authorizationParams ?? {}) as Record<string, string>,
    enabled: params.enabled ?? true,
    emailOptional: params.emailOptional ?? false,
    allowedEmailDomains: (params.allowedEmailDomains ?? []).map((d) => d.toLowerCase()),
    issuer: oidc ? params.issuer : null,
    discoveryUrl: oidc && params.discoveryUrl !== '' ? (params.discoveryUrl ?? null) : null,
    skipNonceCheck: oidc ? (params.skipNonceCheck ?? false) : false,
    cachedDiscovery: oidc
      ? await discover(
          ctx,
          params.issuer,
          params.discoveryUrl === '' ? null : (params.discoveryUrl ?? null),
        )
      : null,
    authorizationUrl: oidc ? null : params.authorizationUrl,
    tokenUrl: oidc ? null : params.tokenUrl,
    userinfoUrl: oidc ? null : params.userinfoUrl,
    jwksUri: oidc || params.jwksUri === '' ? null : (params.jwksUri ?? null),
    createdAt: now,
    updatedAt: now,
  }
  if (!(await insertCustomProvider(ctx.db, provider))) throw conflict()
  return provider
}

/**
 * Updates a custom provider (`PUT /admin/custom-providers/{identifier}`): the fields given
 * (non-empty strings, present lists, maps and flags) replace the stored ones; a new issuer or
 * discovery URL is discovered again; a new client secret is sealed.
 *
 * @throws {@link BadRequestError} `validation_failed`; {@link NotFoundError}
 *   `custom_provider_not_found`.
 */
export async function updateProvider(
  ctx: AppContext,
  identifier: string,
  params: CustomProviderParams,
): Promise<CustomProvider> {
  checkPathIdentifier(identifier)
  checkMaps(params)
  const existing = (await findCustomProvider(ctx.db, identifier)) ?? notFound()
  const oidc = existing.providerType === 'oidc'
  const given = (value: string | undefined) =>
    value === undefined || value === '' ? undefined : value
  const urls = oidc
    ? [given(params.issuer), given(params.discoveryUrl)]
    : [
        given(params.authorizationUrl),
        given(params.tokenUrl),
        given(params.userinfoUrl),
        given(params.jwksUri),
      ]
  for (const url of urls) {
    if (url === undefined) continue
    if (url.length > 2048) throw invalid('URLs must be at most 2048 characters')
    await guard(ctx, url)
  }
  if (given(params.name) !== undefined && params.name.length > 100) {
    throw invalid('name must be at most 100 characters')
  }
  if (given(params.clientId) !== undefined && params.clientId.length > 512) {
    throw invalid('client_id must be at most 512 characters')
  }
  const issuer = oidc ? (given(params.issuer) ?? existing.issuer) : null
  const discoveryUrl = oidc ? (given(params.discoveryUrl) ?? existing.discoveryUrl) : null
  const rediscover =
    oidc && (given(params.issuer) !== undefined || params.discoveryUrl !== undefined)
  const updated: CustomProvider = {
    ...existing,
    name: given(params.name) ?? existing.name,
    clientId: given(params.clientId) ?? existing.clientId,
    acceptableClientIds: params.acceptableClientIds ?? existing.acceptableClientIds,
    scopes:
      params.scopes === undefined
        ? existing.scopes
        : scopesFor(existing.providerType, params.scopes),
    pkceEnabled: params.pkceEnabled ?? existing.pkceEnabled,
    attributeMapping: params.attributeMapping ?? existing.attributeMapping,
    customClaimsAllowlist: params.customClaimsAllowlist ?? existing.customClaimsAllowlist,
    authorizationParams:
      (params.authorizationParams as Record<string, string> | undefined) ??
      existing.authorizationParams,
    enabled: params.enabled ?? existing.enabled,
    emailOptional: params.emailOptional ?? existing.emailOptional,
    allowedEmailDomains:
      params.allowedEmailDomains?.map((d) => d.toLowerCase()) ?? existing.allowedEmailDomains,
    issuer,
    discoveryUrl,
    skipNonceCheck: oidc ? (params.skipNonceCheck ?? existing.skipNonceCheck) : false,
    cachedDiscovery:
      rediscover && issuer !== null
        ? await discover(ctx, issuer, discoveryUrl)
        : existing.cachedDiscovery,
    authorizationUrl: oidc ? null : (given(params.authorizationUrl) ?? existing.authorizationUrl),
    tokenUrl: oidc ? null : (given(params.tokenUrl) ?? existing.tokenUrl),
    userinfoUrl: oidc ? null : (given(params.userinfoUrl) ?? existing.userinfoUrl),
    jwksUri: oidc ? null : (given(params.jwksUri) ?? existing.jwksUri),
    sealedClientSecret:
      params.clientSecret === ''
        ? existing.sealedClientSecret
        : seal(ctx, params.clientSecret, existing.id),
    // Later than the stored one, so that providers built from the old row are rebuilt.
    updatedAt: new Date(Math.max(ctx.clock.now(), existing.updatedAt.getTime() + 1)),
  }
  await updateCustomProvider(ctx.db, updated)
  return updated
}

/**
 * Deletes a custom provider (`DELETE /admin/custom-providers/{identifier}`); its users'
 * identities stay.
 *
 * @throws {@link NotFoundError} `custom_provider_not_found`.
 */
export async function removeProvider(ctx: AppContext, identifier: string): Promise<void> {
  checkPathIdentifier(identifier)
  if (!(await deleteCustomProvider(ctx.db, identifier))) notFound()
}
