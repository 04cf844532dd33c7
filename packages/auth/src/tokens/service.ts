import { randomUUID } from 'node:crypto'
import type { JWTPayload } from 'jose'
import type { Clock } from '../clock.js'
import type { Settings } from '../conf/settings.js'
import type { JwtKeys } from '../crypto/jwt.js'
import { generateRefreshToken } from '../crypto/refresh-token.js'
import {
  addAmrClaim,
  listAmrClaims,
  type AmrEntry,
  type AuthenticationMethod,
} from '../models/amr-claim.js'
import { addAuditLogEntry, type AuditActor } from '../models/audit-log.js'
import { findIdentitiesByUser } from '../models/identity.js'
import {
  findActiveTokenOfSession,
  insertRefreshToken,
  lockRefreshToken,
  revokeTokenFamily,
  rotateActiveRefreshToken,
  rotateRefreshToken,
  type LockedRefreshToken,
} from '../models/refresh-token.js'
import { insertSession, touchSession, type Session, type SessionClient } from '../models/session.js'
import { isBanned, updateUser, userToJson, type User } from '../models/user.js'
import { isLockTimeout, type Db, type Queryable } from '../storage/db.js'
import { BadRequestError, ConflictError } from '../errors.js'

/** The session response of `/token` (upstream `AccessTokenResponse`). */
export interface TokenResponse {
  access_token: string
  token_type: 'bearer'
  /** Seconds until `expires_at`. */
  expires_in: number
  /** Unix time (seconds) the access token expires. */
  expires_at: number
  refresh_token: string
  user: Record<string, unknown>
  weak_password?: { reasons: string[] }
}

/** Request details recorded with a session and in audit entries. */
export interface RequestContext extends SessionClient {
  /** Audience of the request (`X-JWT-AUD` header, else `JWT_AUD`). */
  aud: string
}

/** Everything needed to sign an access token, gathered inside a transaction. */
interface PendingTokens {
  user: User
  session: Session
  refreshToken: string
  amr: AmrEntry[]
  userJson: Record<string, unknown>
}

/** The actor of an audit entry for a user. */
export function auditActor(user: User): AuditActor {
  const name = user.userMetadata.full_name
  return {
    id: user.id,
    username: user.email !== '' ? user.email : user.phone,
    ...(typeof name === 'string' ? { name } : {}),
  }
}

type RefreshOutcome = { kind: 'ok'; pending: PendingTokens } | { kind: 'reused' }

/**
 * Issues sessions, access tokens (JWTs with upstream's claims) and refresh tokens, and runs the
 * refresh-token grant with rotation, reuse interval and reuse detection.
 *
 * @see ../reference §3 (claims) and §4 (refresh algorithm)
 */
export class TokenService {
  private readonly settings: Settings
  private readonly keys: JwtKeys
  private readonly clock: Clock

  constructor(settings: Settings, keys: JwtKeys, clock: Clock) {
    this.settings = settings
    this.keys = keys
    this.clock = clock
  }

  /**
   * The claims of an access token (upstream `AccessTokenClaims`): `aud, exp, iat, iss?, sub,
   * email, phone, app_metadata, user_metadata, role, aal, amr, session_id, is_anonymous`.
   *
   * @param nowSeconds Unix time in seconds used for `iat`.
   */
  claimsFor(user: User, session: Session, amr: AmrEntry[], nowSeconds: number): JWTPayload {
    const claims: JWTPayload = {
      aud: user.aud,
      exp: nowSeconds + this.settings.jwt.exp,
      iat: nowSeconds,
    }
    if (this.settings.jwt.issuer !== '') claims.iss = this.settings.jwt.issuer
    return {
      ...claims,
      sub: user.id,
      email: user.email,
      phone: user.phone,
      app_metadata: user.appMetadata,
      user_metadata: user.userMetadata,
      role: user.role,
      aal: session.aal,
      amr,
      session_id: session.id,
      is_anonymous: user.isAnonymous,
    }
  }

  /**
   * Starts a session for a user inside `tx`: a `sessions` row, its first refresh token, an AMR
   * claim, `last_sign_in_at` and a `login` audit entry (unless `audit` is false).
   *
   * @returns Data to pass to {@link finish} after the transaction commits.
   */
  async startSession(
    tx: Queryable,
    user: User,
    method: AuthenticationMethod,
    ctx: RequestContext,
    audit = true,
  ): Promise<PendingTokens> {
    const now = this.clock.now()
    const session = await insertSession(tx, { id: randomUUID(), userId: user.id }, ctx, now)
    const refresh = await insertRefreshToken(
      tx,
      { token: generateRefreshToken(), userId: user.id, sessionId: session.id, parent: '' },
      now,
    )
    await addAmrClaim(tx, session.id, method, now)
    const updated = await updateUser(tx, user.id, { lastSignInAt: new Date(now) }, now)
    if (audit) {
      await addAuditLogEntry(
        tx,
        {
          actor: auditActor(updated),
          action: 'login',
          traits: { provider: providerOf(method, user) },
          ip: ctx.ip,
        },
        now,
      )
    }
    const identities = await findIdentitiesByUser(tx, user.id)
    return {
      user: updated,
      session,
      refreshToken: refresh.token,
      amr: await listAmrClaims(tx, session.id),
      userJson: userToJson(updated, identities),
    }
  }

  /** Signs the access token and assembles the token response. */
  async finish(pending: PendingTokens): Promise<TokenResponse> {
    const nowSeconds = Math.floor(this.clock.now() / 1000)
    const claims = this.claimsFor(pending.user, pending.session, pending.amr, nowSeconds)
    const exp = claims.exp as number
    return {
      access_token: await this.keys.sign(claims),
      token_type: 'bearer',
      expires_in: exp - nowSeconds,
      expires_at: exp,
      refresh_token: pending.refreshToken,
      user: pending.userJson,
    }
  }

  /**
   * The refresh-token grant. All refreshes of one session are serialised by a lock on the
   * session's row (taken before the token's, the order of every path that changes a session's
   * tokens), so that a rotation and a replay of an older token of the same session never
   * interleave. An active token is rotated in one statement (one round trip); every other case
   * runs in a transaction holding the same locks:
   * - unknown → 400 `refresh_token_not_found`; banned user → 400 `user_banned`; no session → 400
   *   `session_not_found`; session past `not_after` → 400 `session_expired`;
   * - active → revoked, and a child token (same session, `parent` = it) is issued;
   * - revoked less than `SECURITY_REFRESH_TOKEN_REUSE_INTERVAL` ago, and the session's active
   *   token is its child → that child is returned again (a client that lost the response
   *   retries; also what parallel refreshes of one token get);
   * - revoked less than the reuse interval ago, rotation on, and the session still has an active
   *   token → a new child is issued;
   * - revoked otherwise → with rotation on, every token of the session is revoked (committed);
   *   400 `refresh_token_already_used` either way. A session without active tokens (revoked for
   *   reuse) is never revived.
   *
   * @throws {@link AuthError} As listed; 409 `conflict` when a lock stays taken for 5 s.
   */
  async refresh(db: Db, presented: string, ctx: RequestContext): Promise<TokenResponse> {
    let outcome: RefreshOutcome
    try {
      const rotated = await rotateActiveRefreshToken(
        db,
        presented,
        { child: generateRefreshToken(), client: ctx, ip: ctx.ip },
        this.clock.now(),
      )
      outcome = rotated
        ? { kind: 'ok', pending: pendingOf(rotated, rotated.user, rotated.session, rotated.child) }
        : await db.transaction((tx) => this.#refreshInTx(tx, presented, ctx))
    } catch (error) {
      if (isLockTimeout(error)) {
        throw new ConflictError(
          'conflict',
          'There is a concurrent request on this refresh token.',
          {
            cause: error,
          },
        )
      }
      throw error
    }
    if (outcome.kind === 'reused') {
      throw new BadRequestError('refresh_token_already_used', 'Invalid Refresh Token: Already Used')
    }
    return this.finish(outcome.pending)
  }

  async #refreshInTx(
    tx: Queryable,
    presented: string,
    ctx: RequestContext,
  ): Promise<RefreshOutcome> {
    const now = this.clock.now()
    const locked = await lockRefreshToken(tx, presented)
    if (!locked?.user) {
      throw new BadRequestError(
        'refresh_token_not_found',
        'Invalid Refresh Token: Refresh Token Not Found',
      )
    }
    const { token, user, session } = locked
    if (isBanned(user, now)) {
      throw new BadRequestError('user_banned', 'Invalid Refresh Token: User Banned')
    }
    if (!session) {
      throw new BadRequestError(
        'session_not_found',
        'Invalid Refresh Token: No Valid Session Found',
      )
    }
    if (session.notAfter !== null && now > session.notAfter.getTime()) {
      throw new BadRequestError('session_expired', 'Invalid Refresh Token: Session Expired')
    }
    const actor = auditActor(user)
    if (token.revoked) {
      // The session is locked: this sees every refresh of it that came before.
      const active = await findActiveTokenOfSession(tx, session.id)
      const security = this.settings.security
      const inInterval =
        now <= token.updatedAt.getTime() + security.refreshTokenReuseInterval * 1000
      if (active && inInterval && active.parent === token.token) {
        await touchSession(tx, session.id, ctx, now)
        return { kind: 'ok', pending: pendingOf(locked, user, session, active.token) }
      }
      // No active token left means the family was already revoked for reuse: never revive it.
      if (!active || !inInterval || !security.refreshTokenRotationEnabled) {
        if (active && security.refreshTokenRotationEnabled) {
          await revokeTokenFamily(tx, token, now)
          await addAuditLogEntry(
            tx,
            { actor, action: 'token_revoked', traits: { reason: 'reuse' }, ip: ctx.ip },
            now,
          )
        }
        return { kind: 'reused' }
      }
    }
    const issued = await rotateRefreshToken(
      tx,
      {
        parent: token,
        child: generateRefreshToken(),
        sessionId: session.id,
        client: ctx,
        revokedAudit: { actor, action: 'token_revoked', ip: ctx.ip },
        refreshedAudit: { actor, action: 'token_refreshed', ip: ctx.ip },
      },
      now,
    )
    return { kind: 'ok', pending: pendingOf(locked, user, session, issued) }
  }
}

/** The tokens to sign for a refreshed session. */
function pendingOf(
  locked: LockedRefreshToken,
  user: User,
  session: Session,
  refreshToken: string,
): PendingTokens {
  return {
    user,
    session,
    refreshToken,
    amr: locked.amr,
    userJson: userToJson(user, locked.identities),
  }
}

function providerOf(method: AuthenticationMethod, user: User): string {
  if (method === 'password') return user.email !== '' ? 'email' : 'phone'
  return method
}
