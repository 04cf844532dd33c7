/**
 * Session policy (`SESSIONS_*`): whether a session is still valid, when it was last active and
 * which tag it counts under. Pure: the callers bring the session, the user's factors and "now".
 *
 * @see https://github.com/supabase/auth/blob/master/internal/models/sessions.go (`CheckValidity`,
 *   `LastRefreshedAt`, `DetermineTag`)
 * @module
 */
import type { Settings } from '../conf/settings.js'
import { BadRequestError } from '../errors.js'
import type { Factor } from '../models/factor.js'
import type { Aal, Session } from '../models/session.js'

/** The `SESSIONS_*` settings. */
export type SessionPolicy = Settings['sessions']

/**
 * Why a session is no longer valid, or `valid` (upstream `SessionValidityReason`, checked in
 * this order).
 */
export type SessionValidity = 'valid' | 'past_not_after' | 'past_timebox' | 'timed_out' | 'low_aal'

/**
 * The highest assurance level the user can reach: `aal2` with a verified factor, else `aal1`
 * (upstream `User.HighestPossibleAAL`).
 */
export function highestPossibleAal(factors: readonly Pick<Factor, 'status'>[]): Aal {
  return factors.some((f) => f.status === 'verified') ? 'aal2' : 'aal1'
}

/**
 * When the session was last active, in epoch milliseconds: its `refreshed_at`, else the time of
 * the refresh token being used (`refreshTokenTime`) when later than its creation, else its
 * creation (upstream `LastRefreshedAt`).
 */
export function lastRefreshedAt(session: Session, refreshTokenTime?: Date): number {
  if (session.refreshedAt !== null && session.refreshedAt.getTime() > 0) {
    return session.refreshedAt.getTime()
  }
  const created = session.createdAt.getTime()
  if (refreshTokenTime !== undefined && refreshTokenTime.getTime() > created) {
    return refreshTokenTime.getTime()
  }
  return created
}

/**
 * Whether the session is still valid at `now` (epoch milliseconds) under the policy, else why
 * not: past its `not_after`, past `SESSIONS_TIMEBOX` from its creation, idle longer than
 * `SESSIONS_INACTIVITY_TIMEOUT`, or below the user's highest level for longer than
 * `SESSIONS_ALLOW_LOW_AAL` (upstream `Session.CheckValidity`). A limit of 0 is off.
 *
 * @param refreshTokenTime `updated_at` of the refresh token presented, if any.
 */
export function sessionValidity(
  session: Session,
  policy: SessionPolicy,
  now: number,
  highestAal: Aal,
  refreshTokenTime?: Date,
): SessionValidity {
  const created = session.createdAt.getTime()
  if (session.notAfter !== null && now > session.notAfter.getTime()) return 'past_not_after'
  if (policy.timeboxMs > 0 && now > created + policy.timeboxMs) return 'past_timebox'
  if (
    policy.inactivityTimeoutMs > 0 &&
    now > lastRefreshedAt(session, refreshTokenTime) + policy.inactivityTimeoutMs
  ) {
    return 'timed_out'
  }
  if (
    policy.allowLowAalMs > 0 &&
    session.aal < highestAal &&
    now > created + policy.allowLowAalMs
  ) {
    return 'low_aal'
  }
  return 'valid'
}

/**
 * The error a refresh of an invalid session answers (upstream's texts, all 400
 * `session_expired`).
 */
export function refreshRefusal(validity: Exclude<SessionValidity, 'valid'>): BadRequestError {
  const detail =
    validity === 'timed_out'
      ? ' (Inactivity)'
      : validity === 'low_aal'
        ? ' (Low AAL: User Needs MFA Verification)'
        : ''
  return new BadRequestError('session_expired', `Invalid Refresh Token: Session Expired${detail}`)
}

/**
 * The tag the session counts under for `SESSIONS_SINGLE_PER_USER`: its `tag` when listed in
 * `SESSIONS_TAGS`, else the first listed; `''` when none are (upstream `DetermineTag`).
 */
export function sessionTag(session: Pick<Session, 'tag'>, tags: readonly string[]): string {
  const first = tags[0]
  if (first === undefined) return ''
  return session.tag !== null && tags.includes(session.tag) ? session.tag : first
}

/**
 * The access token's `exp` (Unix seconds) under `SESSIONS_ALLOW_LOW_AAL`: no later than the
 * session's creation plus the allowance while the session is below the user's highest level
 * (upstream `GenerateAccessToken`).
 */
export function capLowAalExpiry(
  exp: number,
  session: Session,
  policy: SessionPolicy,
  highestAal: Aal,
): number {
  if (policy.allowLowAalMs <= 0 || session.aal >= highestAal) return exp
  return Math.min(exp, Math.floor((session.createdAt.getTime() + policy.allowLowAalMs) / 1000))
}
