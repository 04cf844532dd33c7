import type { JWTPayload } from 'jose'
import type { Clock } from '../clock.js'
import type { Settings } from '../conf/settings.js'
import type { RequestContext } from '../context.js'
import type { JwtKeys } from '../crypto/jwt.js'
import { generateRefreshToken } from '../crypto/refresh-token.js'
import { customAccessTokenClaims } from '../hooks/custom-access-token.js'
import type { Hooks } from '../hooks/hooks.js'
import { BadRequestError, ConflictError, ForbiddenError } from '../errors.js'
import {
  addAmrClaim,
  listAmrClaims,
  type AmrEntry,
  type AuthenticationMethod,
} from '../models/amr-claim.js'
import { auditActor, type AuditEntry } from '../models/audit-log.js'
import type { AuditTrail } from '../services/shared/audit-trail.js'
import { listFactorsOfUser, type Factor } from '../models/factor.js'
import { findIdentitiesByUser, type Identity } from '../models/identity.js'
import {
  deleteTokensOfSession,
  findActiveTokenOfSession,
  insertRefreshToken,
  lockRefreshToken,
  revokeTokenFamily,
  rotateActiveRefreshToken,
  rotateRefreshToken,
  type LockedRefreshToken,
} from '../models/refresh-token.js'
import {
  hasSessionFromDevice,
  insertSession,
  listSessionsOfUser,
  raiseSessionToAal2,
  touchSession,
  type Aal,
  type Session,
  type SessionClient,
} from '../models/session.js'
import { getUserById, isBanned, updateUser, type User } from '../models/user.js'
import type { Random } from '../random.js'
import { noAuthMetrics, type AuthMetrics } from '../telemetry/auth-metrics.js'
import { isLockTimeout, type Db, type Queryable } from '../storage/db.js'
import {
  capLowAalExpiry,
  highestPossibleAal,
  lastRefreshedAt,
  refreshRefusal,
  sessionTag,
  sessionValidity,
  type SessionPolicy,
} from './policy.js'

/** A signed-in session: the access token, the refresh token and whom they are for. */
export interface IssuedSession {
  /** The JWT. */
  readonly accessToken: string
  /** Seconds until {@link expiresAt}. */
  readonly expiresIn: number
  /** Unix time (seconds) the access token expires. */
  readonly expiresAt: number
  readonly refreshToken: string
  readonly user: User
  readonly identities: readonly Identity[]
  /** The user's MFA factors (the token response lists them). @default [] */
  readonly factors?: readonly Factor[]
  /** The external provider's access token, for sessions of an OAuth sign-in (`provider_token`). */
  readonly providerToken?: string
  /** The external provider's refresh token (`provider_refresh_token`). */
  readonly providerRefreshToken?: string
}

/** Everything needed to sign an access token, gathered inside a transaction. */
export interface PendingTokens {
  readonly user: User
  readonly identities: readonly Identity[]
  readonly session: Session
  readonly refreshToken: string
  readonly amr: AmrEntry[]
  /** The user's MFA factors. @default [] */
  readonly factors?: readonly Factor[]
  /**
   * The authentication method of a session just started (counted as a sign-in by
   * {@link TokenService.finish}).
   */
  readonly signIn?: AuthenticationMethod
  /**
   * The device of a sign-in from a device none of the user's sessions came from, by a user who
   * signed in before (told by {@link TokenService.finish} to its `onNewDevice`).
   */
  readonly newDevice?: NewDevice
  /**
   * How the token is being issued, upstream's `authentication_method` (`password`, `otp`,
   * `token_refresh`, `totp`, …), and the client's IP: what the custom access token hook is told.
   */
  readonly issue?: { readonly method: string; readonly ip: string }
  /**
   * The claims to sign and their `exp`, when they were settled inside the issuing transaction (a
   * `pg-functions://` custom access token hook runs there, as upstream).
   */
  readonly settled?: { readonly claims: JWTPayload; readonly exp: number; readonly iat: number }
}

/** The device of a sign-in, for the new-sign-in notification, with the request's languages. */
export interface NewDevice extends SessionClient {
  /** The request's `Accept-Language`, `''` when none: picks the notification's language. */
  readonly acceptLanguage: string
}

/**
 * Told of a sign-in from a new device once its session is committed
 * (`MAILER_NOTIFICATIONS_NEW_SIGN_IN_ENABLED`); it must not throw.
 */
export type NewDeviceListener = (user: User, device: NewDevice) => Promise<void>

type RefreshOutcome = { kind: 'ok'; pending: PendingTokens } | { kind: 'reused' }

/**
 * Issues sessions, access tokens (JWTs with upstream's claims) and refresh tokens, raises a
 * session to `aal2` with a new refresh token once MFA is verified, and runs the refresh-token
 * grant with rotation, reuse interval and reuse detection: every session token is minted here.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/tokens/service.go
 */
export class TokenService {
  private readonly settings: Settings
  private readonly keys: JwtKeys
  private readonly clock: Clock
  private readonly random: Random
  private readonly metrics: AuthMetrics
  private readonly onNewDevice: NewDeviceListener | undefined
  private readonly audit: AuditTrail
  private readonly hooks: Hooks | undefined

  /**
   * @param options Where audit events go (`audit`), the counters of sign-ins, refreshes and
   *   reuse detections (`metrics`, default {@link noAuthMetrics}), who is told of a sign-in
   *   from a new device (`onNewDevice`), and the auth hooks (`hooks`;
   *   `HOOK_CUSTOM_ACCESS_TOKEN` shapes every access token).
   */
  constructor(
    settings: Settings,
    keys: JwtKeys,
    clock: Clock,
    random: Random,
    options: {
      readonly audit: AuditTrail
      readonly metrics?: AuthMetrics
      readonly onNewDevice?: NewDeviceListener
      readonly hooks?: Hooks
    },
  ) {
    this.settings = settings
    this.keys = keys
    this.clock = clock
    this.random = random
    this.metrics = options.metrics ?? noAuthMetrics
    this.onNewDevice = options.onNewDevice
    this.audit = options.audit
    this.hooks = options.hooks
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
      exp: nowSeconds + this.settings.jwt.expMs / 1000,
      iat: nowSeconds,
    }
    if (this.settings.jwt.issuer !== '') claims.iss = this.settings.jwt.issuer
    // Added one by one in upstream's order, not spread: on Node 20 an object literal that spreads
    // an object and then adds keys of its own builds new hidden classes on every call, about
    // 13 µs here against 0.1 µs (measured in isolation), paid on every token issued.
    claims.sub = user.id
    claims.email = user.email
    claims.phone = user.phone
    claims.app_metadata = user.appMetadata
    claims.user_metadata = user.userMetadata
    claims.role = user.role
    claims.aal = session.aal
    claims.amr = amr
    claims.session_id = session.id
    claims.is_anonymous = user.isAnonymous
    // A session of the OAuth server's: the client it was issued to and the scopes granted.
    if (session.oauthClientId) {
      claims.client_id = session.oauthClientId
      claims.scope = session.scopes ?? ''
    }
    return claims
  }

  /**
   * Starts a session for a user inside `tx`: a `sessions` row, its first refresh token, an AMR
   * claim, `last_sign_in_at` and a `login` audit entry (unless `audit` is false).
   *
   * @param notAfter The session's `not_after` (a SAML assertion's `SessionNotOnOrAfter`), or none.
   * @returns Data to pass to {@link finish} after the transaction commits.
   */
  async startSession(
    tx: Queryable,
    user: User,
    method: AuthenticationMethod,
    ctx: RequestContext,
    audit = true,
    notAfter: Date | null = null,
  ): Promise<PendingTokens> {
    const now = this.clock.now()
    const random = this.random
    // A user who signed in before, now on a device none of their sessions came from.
    const newDevice =
      this.onNewDevice !== undefined &&
      this.settings.mailer.notifications.newSignIn &&
      user.lastSignInAt !== null &&
      !(await hasSessionFromDevice(tx, user.id, ctx))
    const session = await insertSession(
      tx,
      { id: random.uuid(), userId: user.id, notAfter },
      ctx,
      now,
    )
    const refresh = await insertRefreshToken(
      tx,
      { token: generateRefreshToken(random), userId: user.id, sessionId: session.id, parent: '' },
      now,
    )
    await addAmrClaim(tx, { id: random.uuid(), sessionId: session.id, method }, now)
    const updated = await updateUser(tx, user.id, { lastSignInAt: new Date(now) }, now)
    if (audit) {
      await this.audit.record(
        tx,
        {
          id: random.uuid(),
          actor: auditActor(updated),
          action: 'login',
          traits: { provider: providerOf(method, user) },
          ip: ctx.ip,
        },
        now,
      )
    }
    return this.#settle(tx, {
      user: updated,
      identities: await findIdentitiesByUser(tx, user.id),
      session,
      refreshToken: refresh.token,
      amr: await listAmrClaims(tx, session.id),
      factors: await listFactorsOfUser(tx, user.id),
      signIn: method,
      issue: { method, ip: ctx.ip },
      ...(newDevice
        ? {
            newDevice: {
              userAgent: ctx.userAgent,
              ip: ctx.ip,
              acceptLanguage: ctx.acceptLanguage ?? '',
            },
          }
        : {}),
    })
  }

  /**
   * Raises a session to `aal2` inside `tx` once a factor is verified (upstream `MFAVerify`): the
   * session's `aal` and factor, an `amr` entry for `via.method`, and its refresh tokens replaced
   * by a new one. The tokens of the `aal1` session are deleted (with a `token_revoked` audit
   * entry, reason `mfa_verified`, when there were any), so that none of them can refresh the
   * raised session, even within `SECURITY_REFRESH_TOKEN_REUSE_INTERVAL` (upstream moves its token
   * counter past them for the same reason).
   *
   * @param now Unix time in milliseconds of the caller's transaction (the factor's verification
   *   and the raise share it).
   * @returns Data to pass to {@link finish} after the transaction commits (without `factors`).
   * @throws {@link ForbiddenError} 403 `session_not_found` when the session no longer exists.
   */
  async raiseSession(
    tx: Queryable,
    user: User,
    session: Session,
    via: { readonly factorId: string; readonly method: AuthenticationMethod },
    ctx: RequestContext,
    now: number,
  ): Promise<PendingTokens> {
    const random = this.random
    // The session's row first: the order of every path that changes a session's tokens.
    const raised = await raiseSessionToAal2(tx, session.id, via.factorId, now)
    if (!raised) {
      throw new ForbiddenError(
        'session_not_found',
        'Session from session_id claim in JWT does not exist',
      )
    }
    await addAmrClaim(tx, { id: random.uuid(), sessionId: session.id, method: via.method }, now)
    const current = await getUserById(tx, user.id)
    if ((await deleteTokensOfSession(tx, session.id)) > 0) {
      await this.audit.record(
        tx,
        {
          id: random.uuid(),
          actor: auditActor(current),
          action: 'token_revoked',
          traits: { reason: 'mfa_verified' },
          ip: ctx.ip,
        },
        now,
      )
    }
    const refresh = await insertRefreshToken(
      tx,
      { token: generateRefreshToken(random), userId: user.id, sessionId: session.id, parent: '' },
      now,
    )
    return this.#settle(tx, {
      user: current,
      identities: await findIdentitiesByUser(tx, user.id),
      session: raised,
      refreshToken: refresh.token,
      amr: await listAmrClaims(tx, session.id),
      issue: { method: via.method, ip: ctx.ip },
    })
  }

  /**
   * Signs the access token of a session started by {@link startSession} once it is committed
   * (and counts the sign-in). With `HOOK_CUSTOM_ACCESS_TOKEN`, the hook's claims are signed
   * instead: an HTTP hook's here, after the commit; a `pg-functions://` hook's were settled inside
   * the issuing transaction (see `startSession`, `raiseSession`, `refresh`).
   *
   * @throws `AuthError` When the custom access token hook fails or answers claims that drop or
   *   retype a required claim (500 `unexpected_failure`, as upstream).
   */
  async finish(pending: PendingTokens): Promise<IssuedSession> {
    const { claims, exp, iat: nowSeconds } = pending.settled ?? this.#claims(pending)
    const accessToken = await this.keys.sign(
      pending.settled ? claims : await this.#customized(claims, pending),
    )
    if (pending.signIn !== undefined) this.metrics.signIn(pending.signIn)
    if (pending.newDevice !== undefined) await this.onNewDevice?.(pending.user, pending.newDevice)
    return {
      accessToken,
      expiresIn: exp - nowSeconds,
      expiresAt: exp,
      refreshToken: pending.refreshToken,
      user: pending.user,
      identities: pending.identities,
      factors: pending.factors ?? [],
    }
  }

  /**
   * The refresh-token grant. All refreshes of one session are serialised by a lock on the
   * session's row (taken before the token's, the order of every path that changes a session's
   * tokens), so that a rotation and a replay of an older token of the same session never
   * interleave. An active token is rotated in one statement (one round trip) while no `SESSIONS_*`
   * limit is on; every other case runs in a transaction holding the same locks:
   * - unknown → 400 `refresh_token_not_found`; banned user → 400 `user_banned`; no session → 400
   *   `session_not_found`; session past `not_after` or ended by `SESSIONS_TIMEBOX`,
   *   `SESSIONS_INACTIVITY_TIMEOUT` or `SESSIONS_ALLOW_LOW_AAL` → 400 `session_expired` (upstream's
   *   message for each, see `policy.ts`); with `SESSIONS_SINGLE_PER_USER`, another valid session
   *   of the user with the same tag active later → 400 `session_expired` "… (Revoked by Newer
   *   Login)";
   * - active → revoked, and a child token (same session, `parent` = it) is issued;
   * - revoked, and the session's active token is its child (so that child was never used) →
   *   that child is returned again, as upstream does at any time: a client that lost the
   *   response retries (also what parallel refreshes of one token get);
   * - revoked less than the reuse interval ago, rotation on, and the session still has an active
   *   token → a new child is issued;
   * - revoked otherwise → with rotation on, every token of the session is revoked (committed);
   *   400 `refresh_token_already_used` either way. A session without active tokens (revoked for
   *   reuse) is never revived.
   *
   * A token of a session issued to an OAuth client (`sessions.oauth_client_id`) is refreshed only
   * for that client, and only such tokens for a client: any other is `refresh_token_not_found`,
   * changing nothing (stricter than upstream, whose `/token` refreshes a client's token too).
   *
   * @param oauthClientId The OAuth client refreshing (`POST /oauth/token`), `null` for `/token`.
   * @throws {@link BadRequestError} As listed; {@link ConflictError} when a lock stays taken
   *   for 5 s.
   */
  async refresh(
    db: Db,
    presented: string,
    ctx: RequestContext,
    oauthClientId: string | null = null,
  ): Promise<IssuedSession> {
    let outcome: RefreshOutcome
    const random = this.random
    try {
      // The one-statement rotation knows `not_after` only: with a session limit on, every refresh
      // takes the transactional path, which applies them all.
      // So does a `pg-functions://` custom access token hook: it runs in the refresh's transaction.
      const limited =
        hasSessionLimits(this.settings.sessions) ||
        this.hooks?.isPgFunction('customAccessToken') === true
      const auditIds = limited ? undefined : ([random.uuid(), random.uuid()] as const)
      const rotated =
        auditIds === undefined
          ? undefined
          : await rotateActiveRefreshToken(
              db,
              presented,
              {
                child: generateRefreshToken(random),
                client: ctx,
                ip: ctx.ip,
                auditIds,
                audit: this.audit.postgres,
                oauthClientId,
              },
              this.clock.now(),
            )
      if (rotated && auditIds) this.#logRotation(rotated.user, auditIds, ctx.ip)
      outcome = rotated
        ? {
            kind: 'ok',
            pending: pendingOf(rotated, rotated.user, rotated.session, rotated.child, ctx),
          }
        : await db.transaction((tx) => this.#refreshInTx(tx, presented, ctx, oauthClientId))
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
      this.metrics.refreshTokenReuse()
      throw new BadRequestError('refresh_token_already_used', 'Invalid Refresh Token: Already Used')
    }
    const issued = await this.finish(outcome.pending)
    this.metrics.tokenRefresh()
    return issued
  }

  /** The claims of a pending token, before the custom access token hook, and their `exp`. */
  #claims(pending: PendingTokens): { claims: JWTPayload; exp: number; iat: number } {
    const iat = Math.floor(this.clock.now() / 1000)
    const claims = this.claimsFor(pending.user, pending.session, pending.amr, iat)
    // SESSIONS_ALLOW_LOW_AAL: an aal1 session of a user with a factor gets no token beyond it.
    const exp = capLowAalExpiry(
      claims.exp as number,
      pending.session,
      this.settings.sessions,
      highestPossibleAal(pending.factors ?? []),
    )
    claims.exp = exp
    return { claims, exp, iat }
  }

  /**
   * With a `pg-functions://` custom access token hook, settles the claims inside `tx`, the
   * issuing transaction, as upstream runs the function there: it sees the session's rows, and
   * its failure (or its answer's) rolls the sign-in or refresh back. An HTTP hook runs in
   * {@link finish}, after the commit.
   */
  async #settle(tx: Queryable, pending: PendingTokens): Promise<PendingTokens> {
    if (!this.hooks?.isPgFunction('customAccessToken')) return pending
    const { claims, exp, iat } = this.#claims(pending)
    return {
      ...pending,
      settled: { claims: await this.#customized(claims, pending, tx), exp, iat },
    }
  }

  /**
   * The claims to sign: the custom access token hook's, when it is on.
   *
   * @param tx The issuing transaction, for a `pg-functions://` hook (see {@link #settle}).
   */
  async #customized(
    claims: JWTPayload,
    pending: PendingTokens,
    tx?: Queryable,
  ): Promise<JWTPayload> {
    const hooks = this.hooks
    if (!hooks?.enabled('customAccessToken')) return claims
    const output = await hooks.invoke(
      'customAccessToken',
      {
        user_id: pending.user.id,
        claims,
        authentication_method: pending.issue?.method ?? '',
      },
      { ip: pending.issue?.ip ?? '' },
      tx,
    )
    return customAccessTokenClaims(output)
  }

  async #refreshInTx(
    tx: Queryable,
    presented: string,
    ctx: RequestContext,
    oauthClientId: string | null,
  ): Promise<RefreshOutcome> {
    const now = this.clock.now()
    const locked = await lockRefreshToken(tx, presented)
    if (!locked?.user || (locked.session?.oauthClientId ?? null) !== oauthClientId) {
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
    const policy = this.settings.sessions
    const highestAal = highestPossibleAal(locked.factors)
    const validity = sessionValidity(session, policy, now, highestAal, token.updatedAt)
    if (validity !== 'valid') throw refreshRefusal(validity)
    if (policy.singlePerUser) {
      await this.#refuseUnlessNewest(tx, session, policy, now, highestAal, token.updatedAt)
    }
    const actor = auditActor(user)
    if (token.revoked) {
      // The session is locked: this sees every refresh of it that came before.
      const active = await findActiveTokenOfSession(tx, session.id)
      const security = this.settings.security
      // The client never received (or never stored) this token's child: it is still the
      // session's active token, so nobody has used it. Upstream returns it again, at any time
      // (its `FindCurrentlyActiveRefreshToken` branch): a refresh whose answer was lost (a
      // timeout, a connection cut after the commit) is retried without logging the user out.
      if (active && active.parent === token.token) {
        await touchSession(tx, session.id, ctx, now)
        const pending = await this.#settle(tx, pendingOf(locked, user, session, active.token, ctx))
        return { kind: 'ok', pending }
      }
      const inInterval = now <= token.updatedAt.getTime() + security.refreshTokenReuseIntervalMs
      // No active token left means the family was already revoked for reuse: never revive it.
      if (!active || !inInterval || !security.refreshTokenRotationEnabled) {
        if (active && security.refreshTokenRotationEnabled) {
          await revokeTokenFamily(tx, token, now)
          await this.audit.record(
            tx,
            {
              id: this.random.uuid(),
              actor,
              action: 'token_revoked',
              traits: { reason: 'reuse' },
              ip: ctx.ip,
            },
            now,
          )
        }
        return { kind: 'reused' }
      }
    }
    const revokedAudit: AuditEntry = {
      id: this.random.uuid(),
      actor,
      action: 'token_revoked',
      ip: ctx.ip,
    }
    const refreshedAudit: AuditEntry = {
      ...revokedAudit,
      id: this.random.uuid(),
      action: 'token_refreshed',
    }
    const issued = await rotateRefreshToken(
      tx,
      {
        parent: token,
        child: generateRefreshToken(this.random),
        sessionId: session.id,
        client: ctx,
        revokedAudit,
        refreshedAudit,
        audit: this.audit.postgres,
      },
      now,
    )
    const pending = await this.#settle(tx, pendingOf(locked, user, session, issued.token, ctx))
    if (issued.revoked) this.audit.log(revokedAudit, now)
    this.audit.log(refreshedAudit, now)
    return { kind: 'ok', pending }
  }

  /**
   * Logs the `token_revoked` and `token_refreshed` events of a one-statement rotation (which
   * writes them itself, unless `AUDIT_LOG_DISABLE_POSTGRES`).
   */
  #logRotation(user: User, ids: readonly [string, string], ip: string): void {
    const now = this.clock.now()
    const actor = auditActor(user)
    this.audit.log({ id: ids[0], actor, action: 'token_revoked', ip }, now)
    this.audit.log({ id: ids[1], actor, action: 'token_refreshed', ip }, now)
  }

  /**
   * `SESSIONS_SINGLE_PER_USER`: refuses the refresh when another valid session of the user, with
   * the same tag, was active later than this one (upstream's check in `RefreshTokenGrant`; the
   * older sessions end at their next refresh, not at the new sign-in).
   *
   * @throws {@link BadRequestError} 400 `session_expired` "… (Revoked by Newer Login)".
   */
  async #refuseUnlessNewest(
    tx: Queryable,
    session: Session,
    policy: SessionPolicy,
    now: number,
    highestAal: Aal,
    refreshTokenTime: Date,
  ): Promise<void> {
    const tag = sessionTag(session, policy.tags)
    const active = lastRefreshedAt(session, refreshTokenTime)
    for (const other of await listSessionsOfUser(tx, session.userId)) {
      if (
        other.id !== session.id &&
        sessionValidity(other, policy, now, highestAal) === 'valid' &&
        sessionTag(other, policy.tags) === tag &&
        lastRefreshedAt(other) > active
      ) {
        throw new BadRequestError(
          'session_expired',
          'Invalid Refresh Token: Session Expired (Revoked by Newer Login)',
        )
      }
    }
  }
}

/** Whether any `SESSIONS_*` limit beyond a session's own `not_after` is on. */
function hasSessionLimits(p: SessionPolicy): boolean {
  return p.timeboxMs > 0 || p.inactivityTimeoutMs > 0 || p.allowLowAalMs > 0 || p.singlePerUser
}

/** The tokens to sign for a refreshed session. */
function pendingOf(
  locked: LockedRefreshToken,
  user: User,
  session: Session,
  refreshToken: string,
  ctx: RequestContext,
): PendingTokens {
  return {
    user,
    identities: locked.identities,
    session,
    refreshToken,
    amr: locked.amr,
    factors: locked.factors,
    issue: { method: 'token_refresh', ip: ctx.ip },
  }
}

function providerOf(method: AuthenticationMethod, user: User): string {
  if (method === 'password') return user.email !== '' ? 'email' : 'phone'
  return method
}
