/**
 * The grants of `POST /token`: password sign-in and refresh-token rotation.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/token.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/token_refresh.go
 * @module
 */
import type { AppContext, RequestContext } from '../context.js'
import type { WeakPassword } from '../crypto/password.js'
import { isWellFormedRefreshToken } from '../crypto/refresh-token.js'
import {
  BadRequestError,
  InternalServerError,
  RequestRateLimitError,
  UnprocessableEntityError,
} from '../errors.js'
import { findUserByEmail, findUserByPhone, isBanned, type User } from '../models/user.js'
import type { IssuedSession } from '../sessions/token-service.js'
import { passwordAccount } from '../limiter/password-backoff.js'
import { PASSWORD_REJECTION_MESSAGE, readDecision } from '../hooks/decision.js'
import { deleteSessions } from '../models/session.js'
import { passwordWeakness } from './shared/passwords.js'
import { normalizePhone } from './shared/validation.js'

/** A bcrypt hash of a random string, compared against when the user is unknown (even timing). */
const DUMMY_HASH = '$2b$10$j7JTc//0K8Zwwl6p53y8fet1YiZyM11XI1EgYVwfWCQUOT1dnG.06'

/** The credentials of a password grant; absent fields are `''`. */
export interface PasswordCredentials {
  readonly email: string
  readonly phone: string
  /** RFC 6749 §4.3.2 `username`: an email when it has "@", else a phone. */
  readonly username: string
  readonly password: string
}

/** A password sign-in: the session, and why the password no longer meets the policy, if it does not. */
export interface PasswordSignIn {
  readonly session: IssuedSession
  readonly weakPassword?: WeakPassword
}

/**
 * The password grant: finds the user by email or phone in the request's audience, checks the
 * password (against a dummy hash for unknown users, so that timing tells nothing), then the ban
 * and the confirmation, and starts a session.
 *
 * After `RATE_LIMIT_PASSWORD_FAILURES` failed passwords for one email or phone, further attempts
 * back off (see `PasswordBackoff`, shared by every instance through the database); a correct
 * password clears it.
 *
 * @param signal Aborts the queued password check (the request's deadline).
 * @throws {@link BadRequestError} `validation_failed`, `invalid_credentials`, `user_banned`,
 *   `email_not_confirmed`, `phone_not_confirmed`; {@link UnprocessableEntityError}
 *   `email_provider_disabled`, `phone_provider_disabled`; {@link RequestRateLimitError}
 *   `over_request_rate_limit` while the account backs off.
 */
export async function passwordGrant(
  ctx: AppContext,
  credentials: PasswordCredentials,
  client: RequestContext,
  signal: AbortSignal,
): Promise<PasswordSignIn> {
  const { settings } = ctx
  let { email, phone } = credentials
  const { username, password } = credentials
  if (email === '' && phone === '' && username !== '') {
    if (username.includes('@')) email = username
    else phone = username
  }
  if (email !== '' && phone !== '') {
    throw new BadRequestError(
      'validation_failed',
      'Only an email address or phone number should be provided on login.',
    )
  }
  let user: User | undefined
  let account: string
  if (email !== '') {
    if (!settings.external.emailEnabled) {
      throw new UnprocessableEntityError('email_provider_disabled', 'Email logins are disabled')
    }
    account = passwordAccount('email', client.aud, email)
    await backOff(ctx, account)
    user = await findUserByEmail(ctx.db, email.toLowerCase(), client.aud)
  } else if (phone !== '') {
    if (!settings.external.phoneEnabled) {
      throw new UnprocessableEntityError('phone_provider_disabled', 'Phone logins are disabled')
    }
    const normalized = normalizePhone(phone)
    account = passwordAccount('phone', client.aud, normalized)
    await backOff(ctx, account)
    user = await findUserByPhone(ctx.db, normalized, client.aud)
  } else {
    throw new BadRequestError('validation_failed', 'missing email or phone')
  }
  // The hash (or the dummy one) is always checked first: who does not know the password learns
  // nothing about the account, not even that it is banned.
  const ok = await ctx.passwords.verify(password, user?.encryptedPassword || DUMMY_HASH, signal)
  const valid = user !== undefined && user.encryptedPassword !== '' && ok
  // A wrong password counts towards the back-off whatever the hook decides.
  if (!valid) await ctx.passwordBackoff.failed(ctx.db, account, ctx.clock.now())
  if (user) await passwordAttemptHook(ctx, user, valid, client)
  if (!user || !valid) {
    throw new BadRequestError('invalid_credentials', 'Invalid login credentials')
  }
  // Only a password the hook let through clears the back-off.
  await ctx.passwordBackoff.succeeded(ctx.db, account)
  if (isBanned(user, ctx.clock.now())) throw new BadRequestError('user_banned', 'User is banned')
  if (email !== '' && user.emailConfirmedAt === null) {
    throw new BadRequestError('email_not_confirmed', 'Email not confirmed')
  }
  if (phone !== '' && user.phoneConfirmedAt === null) {
    throw new BadRequestError('phone_not_confirmed', 'Phone not confirmed')
  }
  const signedIn = user
  const pending = await ctx.db.transaction((tx) =>
    ctx.tokens.startSession(tx, signedIn, 'password', client),
  )
  const session = await ctx.tokens.finish(pending)
  const weak = await signInWeakness(ctx, password)
  return weak ? { session, weakPassword: weak } : { session }
}

/**
 * `HOOK_PASSWORD_VERIFICATION_ATTEMPT` (upstream, after every password check of a known user):
 * `{ user_id, valid }`; `decision: "reject"` refuses the sign-in with the hook's message (400
 * `invalid_credentials`) and, with `should_logout_user`, first ends every session of the user.
 *
 * @throws {@link BadRequestError} `invalid_credentials` on a rejection; the hook's failure.
 */
async function passwordAttemptHook(
  ctx: AppContext,
  user: User,
  valid: boolean,
  client: RequestContext,
): Promise<void> {
  if (!ctx.hooks.enabled('passwordVerificationAttempt')) return
  const output = await ctx.hooks.invoke(
    'passwordVerificationAttempt',
    { user_id: user.id, valid },
    client,
    ctx.db,
  )
  const decision = readDecision(output, PASSWORD_REJECTION_MESSAGE)
  if (!decision.reject) return
  if (decision.shouldLogoutUser) {
    await ctx.db.transaction((tx) => deleteSessions(tx, user.id, 'all'))
  }
  throw new BadRequestError('invalid_credentials', decision.message)
}

/**
 * What a sign-in reports about its password (upstream `ResourceOwnerPasswordGrant`): the policy's
 * reasons and `pwned`; a failed leaked-password lookup is no reason to refuse a sign-in, even
 * under `PASSWORD_HIBP_FAIL_CLOSED` (then, as upstream, nothing is reported).
 */
async function signInWeakness(
  ctx: AppContext,
  password: string,
): Promise<WeakPassword | undefined> {
  try {
    return await passwordWeakness(ctx, password)
  } catch (error) {
    if (error instanceof InternalServerError) return undefined
    throw error
  }
}

/**
 * Refuses a sign-in of an account still backing off after failed passwords, before any lookup:
 * known and unknown accounts get the same answer.
 *
 * @throws {@link RequestRateLimitError} 429 `over_request_rate_limit` with `Retry-After`.
 */
async function backOff(ctx: AppContext, account: string): Promise<void> {
  const wait = await ctx.passwordBackoff.wait(ctx.db, account, ctx.clock.now())
  if (wait > 0) throw new RequestRateLimitError(wait / 1000)
}

/**
 * The refresh-token grant: rotates a well-formed token (see `TokenService.refresh`).
 *
 * @throws {@link BadRequestError} `validation_failed` "Refresh token is not valid" for a token of
 *   the wrong shape, and the refresh errors.
 */
export async function refreshTokenGrant(
  ctx: AppContext,
  refreshToken: string,
  client: RequestContext,
): Promise<IssuedSession> {
  if (!isWellFormedRefreshToken(refreshToken)) {
    throw new BadRequestError('validation_failed', 'Refresh token is not valid')
  }
  return ctx.tokens.refresh(ctx.db, refreshToken, client)
}
