/**
 * The OAuth 2.1 authorization server and OpenID provider (upstream `oauthserver/authorize.go`,
 * `handlers.go`): the authorization request, the user's consent, the token endpoint
 * (`authorization_code` with PKCE S256, `refresh_token` with rotation), ID tokens, UserInfo and
 * the user's grants. Access tokens are the server's JWTs, with the client's `client_id` and the
 * granted `scope`; ID tokens are signed with the asymmetric `JWT_KEYS` signing key.
 *
 * Stricter than upstream: PKCE is required with `S256` (upstream also takes `plain`), the code is
 * stored hashed, a code presented twice ends the session issued for it, and `redirect_uri` must
 * match at the token endpoint whenever it is sent.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/oauthserver/authorize.go
 * @module
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { JWTPayload } from 'jose'
import type { AppContext, RequestContext } from '../context.js'
import { AuthError, BadRequestError, NotFoundError, OAuthJsonError } from '../errors.js'
import type { OAuthClient } from '../models/oauth-client.js'
import { findOAuthClient } from '../models/oauth-client.js'
import {
  bindSessionToClient,
  clientOfRefreshToken,
  deleteSessionById,
  findActiveConsent,
  insertOAuthAuthorization,
  listActiveConsents,
  lockOAuthAuthorization,
  revokeConsent,
  updateOAuthAuthorization,
  upsertConsent,
  type OAuthAuthorization,
} from '../models/oauth-authorization.js'
import { auditActor } from '../models/audit-log.js'
import type { Session } from '../models/session.js'
import type { PendingTokens } from '../sessions/token-service.js'
import { getUserById, isBanned, type User } from '../models/user.js'
import { clientSecretMatches } from './oauth-clients.js'
import { isUuid } from './shared/validation.js'

/** The scopes the server grants (upstream `models.SupportedOAuthScopes`). */
export const OAUTH_SCOPES = ['openid', 'profile', 'email', 'phone', 'offline_access'] as const

/** The issuer: `JWT_ISSUER`, else `API_EXTERNAL_URL`. */
export function oauthIssuer(ctx: AppContext): string {
  return ctx.settings.jwt.issuer || ctx.settings.apiExternalUrl
}

const notFound = () => new NotFoundError('oauth_authorization_not_found', 'authorization not found')

function sha256(value: string): string {
  return createHash('sha256').update(value).digest('base64url')
}

function randomToken(ctx: AppContext): string {
  return Buffer.from(ctx.random.bytes(32)).toString('base64url')
}

/** Whether a URL is `http:` on a loopback IP literal (RFC 8252 §7.3). */
function isLoopbackIp(url: URL): boolean {
  return url.protocol === 'http:' && (url.hostname === '127.0.0.1' || url.hostname === '[::1]')
}

/**
 * Whether `given` is one of the client's redirect URIs: exactly, or (RFC 8252 §7.3) a loopback
 * IP redirect that differs in its port only.
 */
export function redirectUriRegistered(client: OAuthClient, given: string): boolean {
  if (client.redirectUris.includes(given)) return true
  let url: URL
  try {
    url = new URL(given)
  } catch {
    return false
  }
  if (!isLoopbackIp(url)) return false
  return client.redirectUris.some((registered) => {
    const r = URL.canParse(registered) ? new URL(registered) : undefined
    if (r === undefined || !isLoopbackIp(r) || r.hostname !== url.hostname) return false
    r.port = url.port
    return r.href === url.href
  })
}

/** `uri` with `params` added to its query (and `iss`, RFC 9207). */
function withParams(ctx: AppContext, uri: string, params: Record<string, string>): string {
  const url = new URL(uri)
  for (const [name, value] of Object.entries(params)) {
    if (value !== '') url.searchParams.set(name, value)
  }
  url.searchParams.set('iss', oauthIssuer(ctx))
  return url.href
}

/** The parameters of `GET /oauth/authorize` (each `''` when absent). */
export interface AuthorizeParams {
  readonly clientId: string
  readonly redirectUri: string
  readonly responseType: string
  readonly scope: string
  readonly state: string
  readonly resource: string
  readonly codeChallenge: string
  readonly codeChallengeMethod: string
  readonly nonce: string
  readonly prompt: string
}

/** Why the remaining parameters of an authorization request are refused, or `undefined`. */
function authorizeProblem(ctx: AppContext, p: AuthorizeParams): string | undefined {
  if ((p.responseType || 'code') !== 'code') return 'only response_type=code is supported'
  const scopes = p.scope.split(' ').filter((s) => s !== '')
  if (scopes.length === 0) return 'scope parameter cannot be empty'
  const unsupported = scopes.find((s) => !(OAUTH_SCOPES as readonly string[]).includes(s))
  if (unsupported !== undefined) return `unsupported scope: ${unsupported}`
  if (scopes.includes('openid') && ctx.keys.idTokenAlgorithm === undefined) {
    return 'scope openid needs an asymmetric signing key (JWT_KEYS) on the server'
  }
  if (p.resource !== '') {
    const url = URL.canParse(p.resource) ? new URL(p.resource) : undefined
    if (url === undefined) return 'resource must be an absolute URI'
    if (p.resource.includes('#')) return 'resource must not include a fragment component'
    if (url.search !== '') return 'resource must not include a query component'
  }
  if (p.codeChallenge === '' || p.codeChallengeMethod === '') {
    return 'PKCE flow requires both code_challenge and code_challenge_method'
  }
  if (p.codeChallengeMethod !== 'S256') return "code_challenge_method must be 'S256'"
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(p.codeChallenge)) {
    return 'code_challenge must be between 43 and 128 characters'
  }
  if (p.state.length > 4096) return 'state cannot exceed 4096 characters'
  if (p.nonce.length > 255) return 'nonce cannot exceed 255 characters'
  if (p.prompt.length > 255) return 'prompt cannot exceed 255 characters'
  const prompts = promptsOf(p.prompt)
  if (prompts.includes('none') && prompts.length > 1) {
    return 'prompt=none cannot be combined with other values'
  }
  return undefined
}

/** The values of a `prompt` parameter (OIDC Core §3.1.2.1). */
function promptsOf(prompt: string | null): string[] {
  return (prompt ?? '').split(' ').filter((value) => value !== '')
}

/**
 * Whether a `prompt=login` request still waits for the user to sign in again: the session the
 * consent page acts in began before the request was made.
 */
function needsFreshSignIn(
  authorization: OAuthAuthorization,
  signedInAt: Date | undefined,
): boolean {
  if (!promptsOf(authorization.prompt).includes('login')) return false
  return signedInAt === undefined || signedInAt.getTime() < authorization.createdAt.getTime()
}

const reauthenticationNeeded = () =>
  new BadRequestError(
    'reauthentication_needed',
    'The client asked for a fresh sign-in (prompt=login): sign in again, then retry',
  )

/**
 * `GET /oauth/authorize`: checks the request and records it, then answers where to send the
 * browser: the app's consent page (`SITE_URL` + `OAUTH_SERVER_AUTHORIZATION_PATH`) with
 * `authorization_id`, or the client's redirect URI with `error` (and `state`, `iss`) once the
 * client and redirect URI are known.
 *
 * @returns The `Location` of the `302`.
 * @throws {BadRequestError} Before the redirect URI is trusted: `validation_failed` "client_id is
 *   required", "redirect_uri is required", "invalid redirect_uri"; `oauth_client_not_found`.
 */
export async function startAuthorization(ctx: AppContext, p: AuthorizeParams): Promise<string> {
  if (p.clientId === '') throw new BadRequestError('validation_failed', 'client_id is required')
  if (p.redirectUri === '') {
    throw new BadRequestError('validation_failed', 'redirect_uri is required')
  }
  if (!isUuid(p.clientId)) {
    throw new BadRequestError('oauth_client_not_found', 'invalid client_id format')
  }
  const client = await findOAuthClient(ctx.db, p.clientId.toLowerCase())
  if (client === undefined) throw new BadRequestError('oauth_client_not_found', 'invalid client_id')
  if (!redirectUriRegistered(client, p.redirectUri)) {
    throw new BadRequestError('validation_failed', 'invalid redirect_uri')
  }
  const error = (code: string, description: string) =>
    withParams(ctx, p.redirectUri, { error: code, error_description: description, state: p.state })
  const params = { ...p, scope: p.scope || ctx.settings.oauthServer.defaultScope }
  const problem = authorizeProblem(ctx, params)
  if (problem !== undefined) {
    return error(
      problem.startsWith('unsupported scope') ? 'invalid_scope' : 'invalid_request',
      problem,
    )
  }
  const path = ctx.settings.oauthServer.authorizationPath
  if (path === '') return error('server_error', 'oauth authorization path not configured')
  const now = ctx.clock.now()
  const authorizationId = randomToken(ctx)
  await insertOAuthAuthorization(ctx.db, {
    id: ctx.random.uuid(),
    authorizationId,
    clientId: client.id,
    redirectUri: params.redirectUri,
    scope: params.scope
      .split(' ')
      .filter((s) => s !== '')
      .join(' '),
    state: params.state,
    resource: params.resource,
    codeChallenge: params.codeChallenge,
    nonce: params.nonce,
    prompt: params.prompt,
    createdAt: new Date(now),
    expiresAt: new Date(now + ctx.settings.oauthServer.authorizationTtlMs),
  })
  const base = ctx.settings.siteUrl.replace(/\/+$/, '')
  const page = new URL(base + (path.startsWith('/') ? path : `/${path}`))
  page.searchParams.set('authorization_id', authorizationId)
  // The page must not ask anything of a prompt=none request: it needs to know.
  if (promptsOf(params.prompt).includes('none')) page.searchParams.set('prompt', 'none')
  return page.href
}

/**
 * `GET /oauth/authorizations/<id>/login_required` (Gatehouse's): where the consent page sends the
 * browser when a `prompt=none` request finds nobody signed in. Ends the request and answers the
 * client's redirect with `error=login_required` (OIDC Core §3.1.2.6), `state` and `iss`. Only a
 * pending `prompt=none` request that no user has opened yet can end so.
 *
 * @returns The `Location` of the `302`.
 * @throws {NotFoundError} `oauth_authorization_not_found` for any other request.
 */
export async function endWithLoginRequired(
  ctx: AppContext,
  authorizationId: string,
): Promise<string> {
  const outcome = await ctx.db.transaction(async (tx) => {
    const authorization = await lockOAuthAuthorization(tx, 'authorization_id', authorizationId)
    if (
      authorization === undefined ||
      authorization.status !== 'pending' ||
      authorization.userId !== null ||
      !promptsOf(authorization.prompt).includes('none')
    ) {
      throw notFound()
    }
    if (authorization.expiresAt.getTime() <= ctx.clock.now()) {
      await updateOAuthAuthorization(tx, authorization.id, { status: 'expired' })
      return undefined
    }
    await updateOAuthAuthorization(tx, authorization.id, { status: 'denied' })
    return withParams(ctx, authorization.redirectUri, {
      error: 'login_required',
      error_description: 'The user is not signed in',
      state: authorization.state ?? '',
    })
  })
  if (outcome === undefined) throw notFound()
  return outcome
}

/** What the consent page shows (`GET /oauth/authorizations/<id>`). */
export interface AuthorizationDetails {
  readonly authorization_id: string
  readonly redirect_uri: string
  readonly client: { id: string; name?: string; uri?: string; logo_uri?: string }
  readonly user: { id: string; email?: string }
  readonly scope: string
}

/** Where the consent sends the browser (`{redirect_url}`). */
export interface ConsentRedirect {
  readonly redirect_url: string
}

/** The client's public face: `id`, and `name`, `uri`, `logo_uri` when set. */
export function clientDetails(client: OAuthClient): AuthorizationDetails['client'] {
  return {
    id: client.id,
    ...(client.clientName ? { name: client.clientName } : {}),
    ...(client.clientUri ? { uri: client.clientUri } : {}),
    ...(client.logoUri ? { logo_uri: client.logoUri } : {}),
  }
}

/** Approves inside `tx`: a new code (stored hashed) and the redirect carrying it. */
async function approve(
  ctx: AppContext,
  tx: Parameters<Parameters<AppContext['db']['transaction']>[0]>[0],
  authorization: OAuthAuthorization,
): Promise<string> {
  const code = randomToken(ctx)
  await updateOAuthAuthorization(tx, authorization.id, {
    status: 'approved',
    codeHash: sha256(code),
    approvedAt: new Date(ctx.clock.now()),
  })
  return withParams(ctx, authorization.redirectUri, { code, state: authorization.state ?? '' })
}

/**
 * Locks a pending authorization request of this user (claiming it for the user on first
 * sight); an expired one is marked so, after which it is not found.
 */
async function lockPending(
  ctx: AppContext,
  tx: Parameters<Parameters<AppContext['db']['transaction']>[0]>[0],
  authorizationId: string,
  user: User,
  claim: boolean,
): Promise<OAuthAuthorization | 'expired'> {
  const authorization = await lockOAuthAuthorization(tx, 'authorization_id', authorizationId)
  if (authorization === undefined) throw notFound()
  if (authorization.userId !== null && authorization.userId !== user.id) throw notFound()
  if (authorization.status === 'expired') throw notFound()
  if (authorization.status === 'pending' && authorization.expiresAt.getTime() <= ctx.clock.now()) {
    await updateOAuthAuthorization(tx, authorization.id, { status: 'expired' })
    return 'expired'
  }
  if (authorization.status !== 'pending') {
    throw new BadRequestError(
      'validation_failed',
      claim
        ? 'authorization request cannot be processed'
        : 'authorization request is no longer pending',
    )
  }
  if (authorization.userId === null) {
    if (!claim) throw notFound()
    await updateOAuthAuthorization(tx, authorization.id, { userId: user.id })
  }
  return authorization
}

/**
 * `GET /oauth/authorizations/<id>` for the signed-in user: the request's details for the consent
 * page, or, when the user already consented to every requested scope of this client (and the
 * request did not ask `prompt=consent`), the redirect with the code at once. With `prompt=none`
 * and no such consent, the redirect carries `error=consent_required` (OIDC Core §3.1.2.6) and the
 * request ends.
 *
 * @param signedInAt When the session the page acts in began (its `created_at`): a `prompt=login`
 *   request needs a session begun after it.
 * @throws {NotFoundError} `oauth_authorization_not_found` for an unknown, expired or another
 *   user's request.
 * @throws {BadRequestError} `reauthentication_needed` for a `prompt=login` request and an older
 *   session (the request stays pending: sign in again, then retry).
 */
export async function authorizationDetails(
  ctx: AppContext,
  authorizationId: string,
  user: User,
  signedInAt?: Date,
): Promise<AuthorizationDetails | ConsentRedirect> {
  const outcome = await ctx.db.transaction(async (tx) => {
    const authorization = await lockPending(ctx, tx, authorizationId, user, true)
    if (authorization === 'expired') return authorization
    if (needsFreshSignIn(authorization, signedInAt)) throw reauthenticationNeeded()
    const client = await findOAuthClient(tx, authorization.clientId)
    if (client === undefined) throw notFound()
    const prompts = promptsOf(authorization.prompt)
    const consent = await findActiveConsent(tx, user.id, client.id)
    const covered =
      consent !== undefined &&
      authorization.scope.split(' ').every((s) => consent.scopes.includes(s))
    if (covered && !prompts.includes('consent')) {
      return { redirect_url: await approve(ctx, tx, authorization) }
    }
    if (prompts.includes('none')) {
      await updateOAuthAuthorization(tx, authorization.id, { status: 'denied' })
      return {
        redirect_url: withParams(ctx, authorization.redirectUri, {
          error: 'consent_required',
          error_description: 'The user has not consented to this client and scope',
          state: authorization.state ?? '',
        }),
      }
    }
    return {
      authorization_id: authorization.authorizationId,
      redirect_uri: authorization.redirectUri,
      client: clientDetails(client),
      user: { id: user.id, ...(user.email ? { email: user.email } : {}) },
      scope: authorization.scope,
    }
  })
  if (outcome === 'expired') throw notFound()
  return outcome
}

/**
 * `POST /oauth/authorizations/<id>/consent`: `approve` records the consent and answers the
 * redirect with the code; `deny` answers the redirect with `error=access_denied`.
 *
 * @param signedInAt When the session the page acts in began: approving a `prompt=login` request
 *   needs a session begun after it.
 * @throws {BadRequestError} `validation_failed` "action must be 'approve' or 'deny'";
 *   `reauthentication_needed` when approving a `prompt=login` request from an older session.
 */
export async function consentTo(
  ctx: AppContext,
  authorizationId: string,
  user: User,
  action: string,
  signedInAt?: Date,
): Promise<ConsentRedirect> {
  if (action !== 'approve' && action !== 'deny') {
    throw new BadRequestError('validation_failed', "action must be 'approve' or 'deny'")
  }
  const outcome = await ctx.db.transaction(async (tx) => {
    const authorization = await lockPending(ctx, tx, authorizationId, user, false)
    if (authorization === 'expired') return authorization
    if (action === 'deny') {
      await updateOAuthAuthorization(tx, authorization.id, { status: 'denied' })
      return withParams(ctx, authorization.redirectUri, {
        error: 'access_denied',
        error_description: 'User denied the request',
        state: authorization.state ?? '',
      })
    }
    if (needsFreshSignIn(authorization, signedInAt)) throw reauthenticationNeeded()
    await upsertConsent(
      tx,
      {
        id: ctx.random.uuid(),
        userId: user.id,
        clientId: authorization.clientId,
        scopes: authorization.scope.split(' '),
      },
      new Date(ctx.clock.now()),
    )
    return approve(ctx, tx, authorization)
  })
  if (outcome === 'expired') throw notFound()
  return { redirect_url: outcome }
}

/** The parameters of `POST /oauth/token` (each `''` when absent). */
export interface TokenParams {
  readonly grantType: string
  readonly code: string
  readonly redirectUri: string
  readonly codeVerifier: string
  readonly refreshToken: string
  readonly resource: string
  readonly clientId: string
  readonly clientSecret: string
}

/** The client credentials of a token request: from `Authorization: Basic`, else the body. */
export interface ClientCredentials {
  readonly clientId: string
  readonly clientSecret: string
  readonly method: 'client_secret_basic' | 'client_secret_post' | 'none'
}

const invalidClient = () =>
  new OAuthJsonError('invalid_client', 'Client authentication failed', { status: 401 })

/**
 * The client credentials of a token request (RFC 6749 §2.3.1): `Authorization: Basic` (its two
 * halves form-urlencoded), else `client_id` and `client_secret` in the body.
 *
 * @throws {OAuthJsonError} 400 `invalid_request` for a malformed header or two methods at once.
 */
export function clientCredentials(
  authorization: string | undefined,
  params: TokenParams,
): ClientCredentials {
  if (authorization !== undefined && /^basic /i.test(authorization)) {
    const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    if (colon < 0) throw new OAuthJsonError('invalid_request', 'Invalid Basic authorization header')
    if (params.clientSecret !== '') {
      throw new OAuthJsonError(
        'invalid_request',
        'Only one client authentication method may be used',
      )
    }
    try {
      return {
        clientId: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')),
        clientSecret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')),
        method: 'client_secret_basic',
      }
    } catch {
      throw new OAuthJsonError('invalid_request', 'Invalid Basic authorization header')
    }
  }
  return {
    clientId: params.clientId,
    clientSecret: params.clientSecret,
    method: params.clientSecret === '' ? 'none' : 'client_secret_post',
  }
}

/**
 * The client a token request authenticates, with the method it registered
 * (`token_endpoint_auth_method`, as upstream's `ValidateClientAuthMethod`): a confidential client
 * by its secret, in the `Authorization: Basic` header for `client_secret_basic` and in the body for
 * `client_secret_post`; a public one (`none`) by its `client_id` alone (its proof is PKCE).
 *
 * @throws {OAuthJsonError} 401 `invalid_client` "Client authentication failed" (an unknown
 *   client, a wrong secret, or another method than the registered one).
 */
export async function authenticateClient(
  ctx: AppContext,
  credentials: ClientCredentials,
): Promise<OAuthClient> {
  if (credentials.clientId === '' || !isUuid(credentials.clientId)) throw invalidClient()
  const client = await findOAuthClient(ctx.db, credentials.clientId.toLowerCase())
  if (client === undefined) throw invalidClient()
  const registered = client.clientType === 'public' ? 'none' : client.tokenEndpointAuthMethod
  if (credentials.method !== registered) throw invalidClient()
  if (registered !== 'none' && !clientSecretMatches(client, credentials.clientSecret)) {
    throw invalidClient()
  }
  return client
}

/** The answer of `POST /oauth/token` (RFC 6749 §5.1). */
export interface OAuthTokenResponse {
  readonly access_token: string
  readonly token_type: 'bearer'
  readonly expires_in: number
  readonly refresh_token: string
  readonly scope: string
  readonly id_token?: string
}

const invalidGrant = (description: string) => new OAuthJsonError('invalid_grant', description)

/** Whether `verifier` is the PKCE verifier of `challenge` (S256), compared in constant time. */
export function pkceMatches(verifier: string, challenge: string): boolean {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false
  const computed = Buffer.from(sha256(verifier))
  const expected = Buffer.from(challenge)
  return computed.length === expected.length && timingSafeEqual(computed, expected)
}

/** How a code exchange ends inside its transaction: refused, or a session to sign. */
type CodeOutcome =
  | { readonly refusal: string }
  | {
      readonly pending: PendingTokens
      readonly authorization: OAuthAuthorization
      readonly authTime: Date
    }

/**
 * `POST /oauth/token` with `grant_type=authorization_code`: exchanges an approved code (once,
 * within `OAUTH_SERVER_AUTHORIZATION_TTL`) for a session of the client's, answered as an access
 * token, a refresh token and, for `openid`, an ID token. A code presented again ends the session
 * it was exchanged for (RFC 6749 §4.1.2).
 *
 * @throws {OAuthJsonError} `invalid_request`, `invalid_grant` as RFC 6749 §5.2.
 */
export async function exchangeCode(
  ctx: AppContext,
  client: OAuthClient,
  params: TokenParams,
  request: RequestContext,
): Promise<OAuthTokenResponse> {
  if (params.code === '') {
    throw new OAuthJsonError('invalid_request', 'code is required for authorization_code grant')
  }
  const outcome = await ctx.db.transaction(async (tx): Promise<CodeOutcome> => {
    const authorization = await lockOAuthAuthorization(
      tx,
      'authorization_code',
      sha256(params.code),
    )
    if (authorization === undefined || authorization.status !== 'approved') {
      return { refusal: 'Invalid authorization code' }
    }
    if (authorization.clientId !== client.id) {
      return { refusal: 'Authorization code was not issued for this client' }
    }
    if (authorization.sessionId !== null) {
      // The code was exchanged before: whoever holds it now may have stolen it.
      await deleteSessionById(tx, authorization.sessionId)
      await updateOAuthAuthorization(tx, authorization.id, { status: 'expired' })
      return { refusal: 'Authorization code already used' }
    }
    if (authorization.expiresAt.getTime() <= ctx.clock.now()) {
      return { refusal: 'Authorization code has expired' }
    }
    if (params.redirectUri !== '' && params.redirectUri !== authorization.redirectUri) {
      return { refusal: 'Invalid redirect_uri' }
    }
    if (params.resource !== '' && params.resource !== (authorization.resource ?? '')) {
      return {
        refusal: 'Authorization code resource does not match the resource parameter',
      }
    }
    if (!pkceMatches(params.codeVerifier, authorization.codeChallenge)) {
      return { refusal: 'PKCE verification failed' }
    }
    if (authorization.userId === null) return { refusal: 'Invalid authorization code' }
    const user = await getUserById(tx, authorization.userId)
    if (isBanned(user, ctx.clock.now())) return { refusal: 'User is banned' }
    const authTime = user.lastSignInAt ?? authorization.approvedAt ?? new Date(ctx.clock.now())
    const pending = await ctx.tokens.startSession(tx, user, 'oauth', request)
    await bindSessionToClient(tx, pending.session.id, client.id, authorization.scope)
    await updateOAuthAuthorization(tx, authorization.id, { sessionId: pending.session.id })
    const session: Session = {
      ...pending.session,
      oauthClientId: client.id,
      scopes: authorization.scope,
    }
    return { pending: { ...pending, session }, authorization, authTime }
  })
  if ('refusal' in outcome) throw invalidGrant(outcome.refusal)
  const issued = await ctx.tokens.finish(outcome.pending)
  const scope = outcome.authorization.scope
  const response: OAuthTokenResponse = {
    access_token: issued.accessToken,
    token_type: 'bearer',
    expires_in: issued.expiresIn,
    refresh_token: issued.refreshToken,
    scope,
  }
  if (!scope.split(' ').includes('openid')) return response
  const idToken = await signIdToken(ctx, {
    user: issued.user,
    clientId: client.id,
    scopes: scope.split(' '),
    nonce: outcome.authorization.nonce,
    authTime: outcome.authTime,
    amr: outcome.pending.amr.map((a) => a.method),
    accessToken: issued.accessToken,
    expiresAt: issued.expiresAt,
  })
  return { ...response, id_token: idToken }
}

/** The `at_hash` of an access token (OIDC Core §3.1.3.6) for the ID token's algorithm. */
export function accessTokenHash(accessToken: string, alg: string): string {
  const hash = alg.endsWith('256') ? 'sha256' : 'sha512'
  const digest = createHash(hash).update(accessToken).digest()
  return digest.subarray(0, digest.length / 2).toString('base64url')
}

/** The claims of a user a scope releases (UserInfo and ID tokens). */
export function scopedClaims(user: User, scopes: readonly string[]): Record<string, unknown> {
  const claims: Record<string, unknown> = {}
  if (scopes.includes('email') && user.email !== '') {
    claims.email = user.email
    claims.email_verified = user.emailConfirmedAt !== null
  }
  if (scopes.includes('phone') && user.phone !== '') {
    claims.phone_number = user.phone
    claims.phone_number_verified = user.phoneConfirmedAt !== null
  }
  if (scopes.includes('profile')) {
    const meta = user.userMetadata
    const text = (...names: string[]) =>
      names.map((n) => meta[n]).find((v): v is string => typeof v === 'string' && v !== '')
    const name = text('name', 'full_name') ?? (user.email || undefined)
    const picture = text('picture', 'avatar_url')
    const username = text('preferred_username', 'username', 'user_name')
    if (name !== undefined) claims.name = name
    if (picture !== undefined) claims.picture = picture
    if (username !== undefined) claims.preferred_username = username
    claims.updated_at = Math.floor(user.updatedAt.getTime() / 1000)
  }
  return claims
}

async function signIdToken(
  ctx: AppContext,
  t: {
    user: User
    clientId: string
    scopes: readonly string[]
    nonce: string | null
    authTime: Date
    amr: readonly string[]
    accessToken: string
    expiresAt: number
  },
): Promise<string> {
  const alg = ctx.keys.idTokenAlgorithm ?? 'RS256'
  const claims: JWTPayload = {
    iss: oauthIssuer(ctx),
    sub: t.user.id,
    aud: t.clientId,
    exp: t.expiresAt,
    iat: Math.floor(ctx.clock.now() / 1000),
    auth_time: Math.floor(t.authTime.getTime() / 1000),
    ...(t.nonce ? { nonce: t.nonce } : {}),
    at_hash: accessTokenHash(t.accessToken, alg),
    amr: [...new Set(t.amr)],
    client_id: t.clientId,
    ...scopedClaims(t.user, t.scopes),
  }
  return ctx.keys.signIdToken(claims)
}

/**
 * `POST /oauth/token` with `grant_type=refresh_token`: the session's refresh with rotation and
 * reuse detection, for a refresh token issued to this client only.
 *
 * @throws {OAuthJsonError} `invalid_request`, or `invalid_grant` with the refusal's message.
 */
export async function refreshForClient(
  ctx: AppContext,
  client: OAuthClient,
  params: TokenParams,
  request: RequestContext,
): Promise<OAuthTokenResponse> {
  if (params.refreshToken === '') {
    throw new OAuthJsonError('invalid_request', 'refresh_token is required for refresh_token grant')
  }
  const owner = await clientOfRefreshToken(ctx.db, params.refreshToken)
  if (owner !== client.id) throw invalidGrant('Invalid Refresh Token: Refresh Token Not Found')
  try {
    const issued = await ctx.tokens.refresh(ctx.db, params.refreshToken, request, client.id)
    const claims = await ctx.keys.verify(issued.accessToken, ctx.clock)
    return {
      access_token: issued.accessToken,
      token_type: 'bearer',
      expires_in: issued.expiresIn,
      refresh_token: issued.refreshToken,
      scope: typeof claims.scope === 'string' ? claims.scope : '',
    }
  } catch (error) {
    if (error instanceof BadRequestError) throw invalidGrant(error.message)
    throw error
  }
}

/**
 * `GET /oauth/userinfo`: `sub` and the claims the access token's scopes release (a token not
 * issued to an OAuth client has no scopes: `sub` alone, as upstream).
 */
export function userInfo(user: User, session: Session | undefined): Record<string, unknown> {
  const scopes = (session?.scopes ?? '').split(' ')
  return { sub: user.id, ...scopedClaims(user, scopes) }
}

/** One of the user's grants (`GET /user/oauth/grants`). */
export interface OAuthGrant {
  readonly client: AuthorizationDetails['client']
  readonly scopes: readonly string[]
  readonly granted_at: string
}

/** The clients the user gave consent to, newest first. */
export async function listGrants(ctx: AppContext, userId: string): Promise<OAuthGrant[]> {
  const consents = await listActiveConsents(ctx.db, userId)
  const grants: OAuthGrant[] = []
  for (const consent of consents) {
    const client = await findOAuthClient(ctx.db, consent.clientId)
    if (client === undefined) continue
    grants.push({
      client: clientDetails(client),
      scopes: consent.scopes,
      granted_at: consent.grantedAt.toISOString(),
    })
  }
  return grants
}

/**
 * `DELETE /user/oauth/grants?client_id=`: revokes the user's consent to a client and ends the
 * sessions of the tokens issued to it (their refresh tokens stop working at once).
 *
 * @throws {BadRequestError} `validation_failed` for a missing or malformed `client_id`.
 * @throws {NotFoundError} `oauth_consent_not_found` "No active grant found for this client".
 */
export async function revokeGrant(
  ctx: AppContext,
  user: User,
  clientId: string,
  request: RequestContext,
): Promise<void> {
  if (clientId === '') {
    throw new BadRequestError('validation_failed', 'client_id query parameter is required')
  }
  if (!isUuid(clientId)) throw new BadRequestError('validation_failed', 'invalid client_id format')
  const revoked = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const done = await revokeConsent(tx, user.id, clientId.toLowerCase(), new Date(now))
    if (done) {
      await ctx.audit.record(
        tx,
        {
          id: ctx.random.uuid(),
          actor: auditActor(user),
          action: 'token_revoked',
          traits: { oauth_client_id: clientId.toLowerCase(), action: 'revoke_oauth_grant' },
          ip: request.ip,
        },
        now,
      )
    }
    return done
  })
  if (!revoked) {
    throw new NotFoundError('oauth_consent_not_found', 'No active grant found for this client')
  }
}

/** Whether an error is one the token endpoint answers as it is. */
export function isAuthError(error: unknown): error is AuthError {
  return error instanceof AuthError
}
