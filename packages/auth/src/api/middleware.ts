import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify'
import type { JWTPayload } from 'jose'
import type { Settings } from '../conf/settings.js'
import type { AuditActor } from '../models/audit-log.js'
import type { Identity } from '../models/identity.js'
import { findSessionById, type Session } from '../models/session.js'
import { findUserContext } from '../models/user-context.js'
import { isBanned, type User } from '../models/user.js'
import type { AppContext } from './context.js'
import { isUuid } from './body.js'
import { BadRequestError, ForbiddenError, UnauthorizedError } from '../errors.js'

/** What {@link requireAuthentication} attaches to the request. */
export interface Authenticated {
  readonly claims: JWTPayload
  readonly user: User
  /** The user's identities. */
  readonly identities: Identity[]
  /** The session named by `session_id`, when the token has one. */
  readonly session: Session | undefined
}

/** What {@link requireAdmin} attaches to the request. */
export interface AdminAuth {
  readonly claims: JWTPayload
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by {@link requireAuthentication}. */
    authenticated: Authenticated | null
    /** Set by {@link requireAdmin}. */
    admin: AdminAuth | null
  }
}

/** Decorates requests with the slots the guards fill. */
export function registerAuthDecorators(app: FastifyInstance): void {
  app.decorateRequest('authenticated', null)
  app.decorateRequest('admin', null)
}

const NIL_UUID = '00000000-0000-0000-0000-000000000000'

/**
 * The bearer token of a request (`Authorization` matching `(?i)^bearer (\S+$)`).
 *
 * @throws {@link AuthError} 401 `no_authorization` "This endpoint requires a valid Bearer token".
 */
export function bearerToken(request: FastifyRequest): string {
  const match = /^bearer (\S+)$/i.exec(request.headers.authorization ?? '')
  if (!match?.[1]) {
    throw new UnauthorizedError('no_authorization', 'This endpoint requires a valid Bearer token')
  }
  return match[1]
}

async function verifiedClaims(ctx: AppContext, request: FastifyRequest): Promise<JWTPayload> {
  const token = bearerToken(request)
  try {
    return await ctx.keys.verify(token, ctx.clock)
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error)
    throw new ForbiddenError(
      'bad_jwt',
      `invalid JWT: unable to parse or verify signature, ${detail}`,
      {
        cause: error,
      },
    )
  }
}

/** The first `aud` of the claims, or `undefined`. */
export function tokenAudience(claims: JWTPayload): string | undefined {
  return Array.isArray(claims.aud) ? claims.aud[0] : claims.aud
}

/**
 * The audience of a request: the `X-JWT-AUD` header, else the token's `aud` (when given), else
 * `JWT_AUD`.
 */
export function requestAudience(
  request: FastifyRequest,
  settings: Settings,
  claims?: JWTPayload,
): string {
  const header = request.headers['x-jwt-aud']
  const fromHeader = Array.isArray(header) ? header[0] : header
  if (fromHeader) return fromHeader
  const fromToken = claims ? tokenAudience(claims) : undefined
  return fromToken ?? settings.jwt.aud
}

/**
 * Guard of user endpoints (upstream `requireAuthentication`): a valid bearer JWT whose `sub` is
 * an existing, unbanned user and whose `session_id` (if any) is an existing session.
 *
 * @throws {@link AuthError} 401 `no_authorization`; 403 `bad_jwt`, `user_not_found`,
 *   `session_not_found`, `user_banned`; 400 `bad_jwt` for a non-UUID `sub`.
 */
export function requireAuthentication(ctx: AppContext): preHandlerAsyncHookHandler {
  return async (request) => {
    const claims = await verifiedClaims(ctx, request)
    const sub = claims.sub
    if (sub === undefined || sub === '') {
      throw new ForbiddenError('bad_jwt', 'invalid claim: missing sub claim')
    }
    if (!isUuid(sub))
      throw new BadRequestError('bad_jwt', 'invalid claim: sub claim must be a UUID')
    const sessionId = claims.session_id
    let wantedSession: string | null = null
    if (sessionId !== undefined && sessionId !== null && sessionId !== '') {
      if (typeof sessionId !== 'string' || !isUuid(sessionId)) {
        throw new ForbiddenError('bad_jwt', 'invalid claim: session_id claim must be a UUID')
      }
      if (sessionId !== NIL_UUID) wantedSession = sessionId
    }
    const found = await findUserContext(ctx.db, sub, wantedSession)
    if (!found) {
      throw new ForbiddenError('user_not_found', 'User from sub claim in JWT does not exist')
    }
    const { user, identities, session } = found
    if (wantedSession !== null && !session) {
      throw new ForbiddenError(
        'session_not_found',
        'Session from session_id claim in JWT does not exist',
      )
    }
    if (isBanned(user, ctx.clock.now())) throw new ForbiddenError('user_banned', 'User is banned')
    request.authenticated = { claims, user, identities, session }
  }
}

/**
 * Guard of admin endpoints (upstream `requireAdmin`): a valid bearer JWT whose `role` is one of
 * `JWT_ADMIN_ROLES` (the service-role key has no `sub` and needs none); a real `session_id` must
 * name an existing session.
 *
 * @param roles Allowed roles. @default settings.jwt.adminRoles
 * @throws {@link AuthError} 401 `no_authorization`; 403 `bad_jwt`, `session_expired`, `not_admin`.
 */
export function requireAdmin(
  ctx: AppContext,
  roles: readonly string[] = ctx.settings.jwt.adminRoles,
): preHandlerAsyncHookHandler {
  return async (request) => {
    const claims = await verifiedClaims(ctx, request)
    const sessionId = claims.session_id
    if (typeof sessionId === 'string' && isUuid(sessionId) && sessionId !== NIL_UUID) {
      if (!(await findSessionById(ctx.db, sessionId))) {
        throw new ForbiddenError('session_expired', 'Session is no longer valid')
      }
    }
    const role = typeof claims.role === 'string' ? claims.role : ''
    if (!roles.includes(role)) throw new ForbiddenError('not_admin', 'User not allowed')
    request.admin = { claims }
  }
}

/**
 * The audit actor of an admin request: the token's `sub` (empty for the service-role key) and its
 * email, else its role.
 */
export function adminActor(request: FastifyRequest): AuditActor {
  const claims = request.admin?.claims
  const sub = typeof claims?.sub === 'string' ? claims.sub : ''
  const email = typeof claims?.email === 'string' ? claims.email : ''
  const role = typeof claims?.role === 'string' ? claims.role : ''
  return { id: sub, username: email !== '' ? email : role }
}

/** The {@link Authenticated} of a request that passed {@link requireAuthentication}. */
export function authOf(request: FastifyRequest): Authenticated {
  if (!request.authenticated) throw new Error('route is missing requireAuthentication')
  return request.authenticated
}
