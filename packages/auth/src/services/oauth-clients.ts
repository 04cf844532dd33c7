/**
 * The OAuth server's client registry (upstream `oauthserver/service.go`): registration by an admin
 * or through RFC 7591, reading, updating, deleting and regenerating secrets. A confidential
 * client's secret is 32 random bytes (base64url), answered once and stored as base64url(SHA-256);
 * a public client has none. Parameters are checked as upstream checks them, with its messages.
 *
 * @module
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { AppContext } from '../context.js'
import { BadRequestError, ForbiddenError, NotFoundError } from '../errors.js'
import {
  deleteOAuthClient,
  findOAuthClient,
  insertOAuthClient,
  listOAuthClients,
  updateOAuthClient,
  type OAuthClient,
  type OAuthClientType,
  type OAuthRegistrationType,
  type TokenEndpointAuthMethod,
} from '../models/oauth-client.js'
import { isUuid } from './shared/validation.js'

/** The token endpoint authentication methods, in upstream's order. */
export const TOKEN_ENDPOINT_AUTH_METHODS: readonly TokenEndpointAuthMethod[] = [
  'none',
  'client_secret_basic',
  'client_secret_post',
]

/** The grants a client may be registered for. */
export const OAUTH_GRANT_TYPES = ['authorization_code', 'refresh_token'] as const

/** Schemes a redirect URI may never have (script execution or local content). */
const DANGEROUS_SCHEMES = new Set(['javascript', 'data', 'file', 'vbscript', 'about', 'blob'])

/** Hosts an `http:` redirect URI may name (loopback, RFC 8252 §7.3). */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

/** What a client is registered or updated with (`undefined`: not given). */
export interface OAuthClientParams {
  readonly redirectUris?: readonly string[] | undefined
  readonly grantTypes?: readonly string[] | undefined
  readonly clientName?: string | undefined
  readonly clientUri?: string | undefined
  readonly logoUri?: string | undefined
  readonly clientType?: string | undefined
  readonly tokenEndpointAuthMethod?: string | undefined
}

/** A client with the secret just generated for it (absent for public clients). */
export interface ClientWithSecret {
  readonly client: OAuthClient
  readonly clientSecret?: string | undefined
}

const invalid = (message: string) => new BadRequestError('validation_failed', message)

/**
 * Why a redirect URI is refused (RFC 6749 §3.1.2: absolute, no fragment; `http:` only on
 * loopback; no script or local schemes), or `undefined` when it is acceptable.
 */
export function redirectUriProblem(uri: string): string | undefined {
  if (uri === '') return 'redirect URI cannot be empty'
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return 'invalid URL format'
  }
  const scheme = url.protocol.slice(0, -1).toLowerCase()
  if (DANGEROUS_SCHEMES.has(scheme)) {
    return `scheme '${scheme}' is not allowed for security reasons`
  }
  if (url.host === '') return 'must have scheme and host'
  if (scheme === 'http' && !LOOPBACK_HOSTS.has(url.hostname)) {
    return 'HTTP scheme only allowed for localhost'
  }
  if (url.hash !== '' || uri.includes('#')) return 'fragment not allowed in redirect URI'
  return undefined
}

function checkRedirectUris(uris: readonly string[], required: boolean): void {
  if (uris.length === 0) {
    throw invalid(required ? 'redirect_uris is required' : 'redirect_uris cannot be empty')
  }
  if (uris.length > 10) throw invalid('redirect_uris cannot exceed 10 items')
  for (const uri of uris) {
    const problem = redirectUriProblem(uri)
    if (problem !== undefined) throw invalid(`invalid redirect_uri '${uri}': ${problem}`)
    if (uri.includes(',')) throw invalid(`invalid redirect_uri '${uri}': must not contain ','`)
  }
}

function checkUri(name: 'client_uri' | 'logo_uri', value: string | undefined): void {
  if (value === undefined || value === '') return
  if (value.length > 2048) throw invalid(`${name} cannot exceed 2048 characters`)
  if (!URL.canParse(value)) throw invalid(`${name} must be a valid URL`)
}

/** Checks the fields every registration and update may carry. */
function checkCommon(params: OAuthClientParams): void {
  if (params.grantTypes !== undefined) {
    if (params.grantTypes.length === 0) throw invalid('grant_types cannot be empty')
    if (!params.grantTypes.every((g) => (OAUTH_GRANT_TYPES as readonly string[]).includes(g))) {
      throw invalid("grant_types must only contain 'authorization_code' and/or 'refresh_token'")
    }
  }
  if ((params.clientName ?? '').length > 1024) {
    throw invalid('client_name cannot exceed 1024 characters')
  }
  checkUri('client_uri', params.clientUri)
  checkUri('logo_uri', params.logoUri)
}

function isAuthMethod(method: string): method is TokenEndpointAuthMethod {
  return (TOKEN_ENDPOINT_AUTH_METHODS as readonly string[]).includes(method)
}

const methodList = `[${TOKEN_ENDPOINT_AUTH_METHODS.join(' ')}]`

/** The client type a token endpoint authentication method implies. */
function typeOfMethod(method: TokenEndpointAuthMethod): OAuthClientType {
  return method === 'none' ? 'public' : 'confidential'
}

/** base64url(SHA-256(secret)): how a client secret is stored. */
export function hashClientSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url')
}

/** Whether `secret` is the client's, compared in constant time. */
export function clientSecretMatches(client: OAuthClient, secret: string): boolean {
  if (client.clientSecretHash === null) return false
  const stored = Buffer.from(client.clientSecretHash, 'base64url')
  const given = createHash('sha256').update(secret).digest()
  return stored.length === given.length && timingSafeEqual(stored, given)
}

function newSecret(ctx: AppContext): string {
  return Buffer.from(ctx.random.bytes(32)).toString('base64url')
}

/**
 * Registers a client (upstream `registerOAuthServerClient`): `client_type` as given, else implied
 * by `token_endpoint_auth_method`, else `confidential`; the method defaults to `none` for public
 * clients and `client_secret_basic` for confidential ones (RFC 7591 §2).
 *
 * @throws {BadRequestError} `validation_failed` with upstream's message.
 */
export async function registerOAuthClient(
  ctx: AppContext,
  params: OAuthClientParams,
  registrationType: OAuthRegistrationType,
): Promise<ClientWithSecret> {
  checkRedirectUris(params.redirectUris ?? [], true)
  checkCommon(params)
  const explicitType = params.clientType ?? ''
  if (explicitType !== '' && explicitType !== 'public' && explicitType !== 'confidential') {
    throw invalid("client_type must be 'public' or 'confidential'")
  }
  const method = params.tokenEndpointAuthMethod ?? ''
  if (method !== '' && !isAuthMethod(method)) {
    throw invalid(`token_endpoint_auth_method must be one of: ${methodList}`)
  }
  if (explicitType !== '' && method !== '' && isAuthMethod(method)) {
    const expected = typeOfMethod(method)
    if (expected !== explicitType) {
      throw invalid(
        `client_type '${explicitType}' is inconsistent with token_endpoint_auth_method '${method}' (expected client_type '${expected}')`,
      )
    }
  }
  const clientType: OAuthClientType =
    explicitType !== ''
      ? explicitType
      : method !== '' && isAuthMethod(method)
        ? typeOfMethod(method)
        : 'confidential'
  const authMethod: TokenEndpointAuthMethod = isAuthMethod(method)
    ? method
    : clientType === 'public'
      ? 'none'
      : 'client_secret_basic'
  const secret = clientType === 'confidential' ? newSecret(ctx) : undefined
  const now = new Date(ctx.clock.now())
  const client: OAuthClient = {
    id: ctx.random.uuid(),
    clientSecretHash: secret === undefined ? null : hashClientSecret(secret),
    registrationType,
    clientType,
    tokenEndpointAuthMethod: authMethod,
    redirectUris: [...(params.redirectUris ?? [])],
    grantTypes: [...(params.grantTypes ?? OAUTH_GRANT_TYPES)],
    clientName: params.clientName || null,
    clientUri: params.clientUri || null,
    logoUri: params.logoUri || null,
    createdAt: now,
    updatedAt: now,
  }
  await insertOAuthClient(ctx.db, client)
  return { client, clientSecret: secret }
}

/**
 * Registers a client through RFC 7591 (`POST /oauth/clients/register`), when
 * `OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION` allows it.
 *
 * @throws {ForbiddenError} `oauth_dynamic_client_registration_disabled` otherwise.
 */
export async function registerDynamicClient(
  ctx: AppContext,
  params: OAuthClientParams,
): Promise<ClientWithSecret> {
  if (!ctx.settings.oauthServer.allowDynamicRegistration) {
    throw new ForbiddenError(
      'oauth_dynamic_client_registration_disabled',
      'Dynamic client registration is not enabled',
    )
  }
  return registerOAuthClient(ctx, params, 'dynamic')
}

/**
 * The client with this `client_id`.
 *
 * @throws {BadRequestError} `validation_failed` "invalid client_id format" for a non-UUID.
 * @throws {NotFoundError} `oauth_client_not_found` when there is none (or it was deleted).
 */
export async function getOAuthClient(ctx: AppContext, clientId: string): Promise<OAuthClient> {
  if (!isUuid(clientId)) throw invalid('invalid client_id format')
  const client = await findOAuthClient(ctx.db, clientId.toLowerCase())
  if (client === undefined)
    throw new NotFoundError('oauth_client_not_found', 'OAuth client not found')
  return client
}

/** Every registered client, newest first. */
export function allOAuthClients(ctx: AppContext): Promise<OAuthClient[]> {
  return listOAuthClients(ctx.db)
}

/**
 * Updates the fields given (upstream `updateOAuthServerClient`); `token_endpoint_auth_method`
 * must suit the client's type, which never changes.
 *
 * @throws {BadRequestError} `validation_failed` "No fields provided for update", or a field's
 *   problem.
 */
export async function updateOAuthClientFields(
  ctx: AppContext,
  clientId: string,
  params: OAuthClientParams,
): Promise<OAuthClient> {
  const client = await getOAuthClient(ctx, clientId)
  const given = [
    params.redirectUris,
    params.grantTypes,
    params.clientName,
    params.clientUri,
    params.logoUri,
    params.tokenEndpointAuthMethod,
  ]
  if (given.every((field) => field === undefined)) throw invalid('No fields provided for update')
  if (params.redirectUris !== undefined) checkRedirectUris(params.redirectUris, false)
  checkCommon(params)
  const method = params.tokenEndpointAuthMethod
  if (method !== undefined) {
    if (!isAuthMethod(method)) {
      throw invalid(`invalid token_endpoint_auth_method: must be one of ${methodList}`)
    }
    if (typeOfMethod(method) !== client.clientType) {
      const valid =
        client.clientType === 'public' ? '[none]' : '[client_secret_basic client_secret_post]'
      throw invalid(
        `token_endpoint_auth_method '${method}' is not valid for client_type '${client.clientType}'; valid methods: ${valid}`,
      )
    }
  }
  const updated: OAuthClient = {
    ...client,
    redirectUris: params.redirectUris ?? client.redirectUris,
    grantTypes: params.grantTypes ?? client.grantTypes,
    clientName: params.clientName === undefined ? client.clientName : params.clientName || null,
    clientUri: params.clientUri === undefined ? client.clientUri : params.clientUri || null,
    logoUri: params.logoUri === undefined ? client.logoUri : params.logoUri || null,
    tokenEndpointAuthMethod: method ?? client.tokenEndpointAuthMethod,
    updatedAt: new Date(ctx.clock.now()),
  }
  await updateOAuthClient(ctx.db, updated)
  return updated
}

/**
 * Deletes a client; the sessions of the tokens issued to it end with it (upstream keeps them
 * until they expire).
 */
export async function removeOAuthClient(ctx: AppContext, clientId: string): Promise<void> {
  const client = await getOAuthClient(ctx, clientId)
  await ctx.db.transaction((tx) => deleteOAuthClient(tx, client.id, new Date(ctx.clock.now())))
}

/**
 * A new secret for a confidential client; the old one stops working at once.
 *
 * @throws {BadRequestError} `validation_failed` "Cannot regenerate secret for public client".
 */
export async function regenerateClientSecret(
  ctx: AppContext,
  clientId: string,
): Promise<ClientWithSecret> {
  const client = await getOAuthClient(ctx, clientId)
  if (client.clientType !== 'confidential') {
    throw invalid('Cannot regenerate secret for public client')
  }
  const secret = newSecret(ctx)
  const updated: OAuthClient = {
    ...client,
    clientSecretHash: hashClientSecret(secret),
    updatedAt: new Date(ctx.clock.now()),
  }
  await updateOAuthClient(ctx.db, updated)
  return { client: updated, clientSecret: secret }
}
