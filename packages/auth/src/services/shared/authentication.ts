/**
 * Who a bearer token speaks for: a user with a live session (user endpoints) or an admin role
 * (admin endpoints).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/auth.go
 * @module
 */
import type { JWTPayload } from 'jose'
import type { AppContext } from '../../context.js'
import { BadRequestError, ForbiddenError } from '../../errors.js'
import type { Identity } from '../../models/identity.js'
import { findSessionById, type Session } from '../../models/session.js'
import { listFactorsOfUser, type Factor } from '../../models/factor.js'
import { findUserContext } from '../../models/user-context.js'
import { isBanned, type User } from '../../models/user.js'
import { highestPossibleAal, sessionValidity } from '../../sessions/policy.js'
import { isUuid, NIL_UUID } from './validation.js'

/** A request authenticated as a user (see {@link authenticateUser}). */
export interface Authenticated {
  readonly claims: JWTPayload
  readonly user: User
  /** The user's identities. */
  readonly identities: Identity[]
  /** The user's MFA factors (listed by `GET /user`). */
  readonly factors: Factor[]
  /** The session named by `session_id`, when the token has one. */
  readonly session: Session | undefined
}

/**
 * Verifies a bearer JWT (signature, `exp` required) with the server's keys.
 *
 * @throws {@link ForbiddenError} `bad_jwt` "invalid JWT: unable to parse or verify signature, …".
 */
export async function verifyBearerToken(ctx: AppContext, token: string): Promise<JWTPayload> {
  try {
    return await ctx.keys.verify(token, ctx.clock)
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error)
    throw new ForbiddenError(
      'bad_jwt',
      `invalid JWT: unable to parse or verify signature, ${detail}`,
      { cause: error },
    )
  }
}

/** The first `aud` of the claims, or `undefined`. */
export function tokenAudience(claims: JWTPayload): string | undefined {
  return Array.isArray(claims.aud) ? claims.aud[0] : claims.aud
}

/**
 * Authenticates a user (upstream `requireAuthentication`): a valid JWT whose `sub` is an
 * existing, unbanned user and whose `session_id` (if any) is an existing session. One database
 * round trip.
 *
 * @throws {@link ForbiddenError} `bad_jwt`, `user_not_found`, `session_not_found`,
 *   `user_banned`; {@link BadRequestError} `bad_jwt` for a non-UUID `sub`.
 */
export async function authenticateUser(ctx: AppContext, token: string): Promise<Authenticated> {
  const claims = await verifyBearerToken(ctx, token)
  const sub = claims.sub
  if (sub === undefined || sub === '') {
    throw new ForbiddenError('bad_jwt', 'invalid claim: missing sub claim')
  }
  if (!isUuid(sub)) throw new BadRequestError('bad_jwt', 'invalid claim: sub claim must be a UUID')
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
  const { user, identities, factors, session } = found
  if (wantedSession !== null && !session) {
    throw new ForbiddenError(
      'session_not_found',
      'Session from session_id claim in JWT does not exist',
    )
  }
  if (isBanned(user, ctx.clock.now())) throw new ForbiddenError('user_banned', 'User is banned')
  return { claims, user, identities, factors, session }
}

/**
 * Authorizes an admin (upstream `requireAdmin`): a valid JWT whose `role` is one of `roles` (the
 * service-role key has no `sub` and needs none); a real `session_id` must name an existing
 * session that is still valid under `SESSIONS_*` (upstream `requireAdminCredentials`).
 *
 * @returns The token's claims.
 * @throws {@link ForbiddenError} `bad_jwt`, `session_expired`, `not_admin`.
 */
export async function authorizeAdmin(
  ctx: AppContext,
  token: string,
  roles: readonly string[],
): Promise<JWTPayload> {
  const claims = await verifyBearerToken(ctx, token)
  const sessionId = claims.session_id
  if (typeof sessionId === 'string' && isUuid(sessionId) && sessionId !== NIL_UUID) {
    const session = await findSessionById(ctx.db, sessionId)
    // The user's factors only matter to SESSIONS_ALLOW_LOW_AAL.
    const factors =
      session && ctx.settings.sessions.allowLowAalMs > 0
        ? await listFactorsOfUser(ctx.db, session.userId)
        : []
    if (
      !session ||
      sessionValidity(
        session,
        ctx.settings.sessions,
        ctx.clock.now(),
        highestPossibleAal(factors),
      ) !== 'valid'
    ) {
      throw new ForbiddenError('session_expired', 'Session is no longer valid')
    }
  }
  const role = typeof claims.role === 'string' ? claims.role : ''
  if (!roles.includes(role)) throw new ForbiddenError('not_admin', 'User not allowed')
  return claims
}
