/**
 * Verification (`GET /verify`, `POST /verify`): a mailed link (its token hash) or a typed code
 * (with the email or phone it was sent to) confirms a sign-up or invite, signs in a recovery or
 * magic link, or completes an email or phone change. Each token works once and expires after
 * `MAILER_OTP_EXP` (an SMS code after `SMS_OTP_EXP`; with Twilio Verify, Twilio checks it). A
 * typed code takes `SECURITY_OTP_MAX_ATTEMPTS` wrong answers at most (beyond upstream): the last
 * one invalidates it.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/verify.go
 * @module
 */
import type { AppContext, RequestContext } from '../context.js'
import {
  BadRequestError,
  ForbiddenError,
  NotFoundError,
  UnprocessableEntityError,
} from '../errors.js'
import { auditActor } from '../models/audit-log.js'
import { countWrongAnswer, purgeExpiredAttempts } from './shared/attempts.js'
import { findLatestFlowStateOfUser, markAuthCodeIssued } from '../models/flow-state.js'
import { updateIdentityData } from '../models/identity.js'
import {
  deleteOneTimeTokens,
  findOneTimeToken,
  type OneTimeTokenType,
} from '../models/one-time-token.js'
import {
  findUserByEmail,
  findUserByEmailChange,
  findUserByPhone,
  findUserByPhoneChange,
  getUserById,
  isBanned,
  mergeMetadata,
  updateUser,
  type User,
  type UserChanges,
} from '../models/user.js'
import type { Queryable } from '../storage/db.js'
import { isUniqueViolation } from '../storage/db.js'
import type { IssuedSession, PendingTokens } from '../sessions/token-service.js'
import { applyEmailChange } from './email-change.js'
import { PKCE_TOKEN_PREFIX, tokenHash } from './shared/mail.js'
import { testOtpFor } from './shared/sms.js'
import {
  notifyEmailChanged,
  notifyPhoneChanged,
  type NotificationLog,
} from './shared/notifications.js'
import { applyPhoneChange, assertPhoneFree } from './shared/phone.js'
import { randomPassword } from './shared/passwords.js'
import { assertEmailFree } from './users.js'
import { normalizePhone, validateEmail } from './shared/validation.js'

/** `type` values of `/verify`. */
export const VERIFICATION_TYPES = [
  'signup',
  'invite',
  'recovery',
  'magiclink',
  'email_change',
  'email',
  'sms',
  'phone_change',
] as const

/** One of {@link VERIFICATION_TYPES}. */
export type VerificationType = (typeof VERIFICATION_TYPES)[number]

/** What a verified token turns out to be (`email` resolves to `signup` or `magiclink`). */
export type ResolvedVerificationType = Exclude<VerificationType, 'email'>

/** A verification request; absent fields are `''`. */
export interface VerifyParams {
  readonly type: string
  /** The typed code (POST), or the link's token hash (GET). */
  readonly token: string
  /** POST's `token_hash`. */
  readonly tokenHash: string
  readonly email: string
  readonly phone: string
  /** Where the user lands: the request's validated `redirect_to`, else `SITE_URL`. */
  readonly redirectTo: string
}

/**
 * What a verification gives: a session; for a PKCE link the flow's auth code; or, after the first
 * of the two links of a secure email change, only a message.
 */
export type VerifyOutcome =
  | {
      readonly kind: 'session'
      readonly session: IssuedSession
      readonly type: ResolvedVerificationType
      readonly redirectTo: string
    }
  | { readonly kind: 'code'; readonly authCode: string; readonly redirectTo: string }
  | { readonly kind: 'message'; readonly message: string; readonly redirectTo: string }

/** The message of the first half of a secure email change (upstream `singleConfirmationAccepted`). */
export const SINGLE_CONFIRMATION_ACCEPTED =
  'Confirmation link accepted. Please proceed to confirm link sent to the other email'

/** The token columns a verification type may match, with their sent-at column and lifetime. */
interface Candidate {
  readonly tokenType: OneTimeTokenType
  /** What the type means once this column matched (`email` resolves to signup or magiclink). */
  readonly resolved: ResolvedVerificationType
  readonly token: (user: User) => string
  readonly sentAt: (user: User) => Date | null
  /**
   * Whose wrong answers count together: every type that can match the column shares its count
   * (`signup`, `invite`, `email` and `sms` the confirmation code's); both codes of an email
   * change share one.
   */
  readonly counter: string
  /** What invalidates the code once its answers are used up (both codes of an email change). */
  readonly invalidate: { readonly changes: UserChanges; readonly types: OneTimeTokenType[] }
}

const CONFIRMATION = (resolved: ResolvedVerificationType): Candidate => ({
  tokenType: 'confirmation_token',
  resolved,
  token: (u) => u.confirmationToken,
  sentAt: (u) => u.confirmationSentAt,
  counter: 'confirmation_token',
  invalidate: { changes: { confirmationToken: '' }, types: ['confirmation_token'] },
})
const RECOVERY = (resolved: ResolvedVerificationType): Candidate => ({
  tokenType: 'recovery_token',
  resolved,
  token: (u) => u.recoveryToken,
  sentAt: (u) => u.recoverySentAt,
  counter: 'recovery_token',
  invalidate: { changes: { recoveryToken: '' }, types: ['recovery_token'] },
})
/** Invalidating either code of an email change ends the change: one code must never suffice. */
const EMAIL_CHANGE_INVALIDATED: Candidate['invalidate'] = {
  changes: { emailChangeTokenNew: '', emailChangeTokenCurrent: '' },
  types: ['email_change_token_new', 'email_change_token_current'],
}
const EMAIL_CHANGE_NEW: Candidate = {
  tokenType: 'email_change_token_new',
  resolved: 'email_change',
  token: (u) => u.emailChangeTokenNew,
  sentAt: (u) => u.emailChangeSentAt,
  counter: 'email_change',
  invalidate: EMAIL_CHANGE_INVALIDATED,
}
const EMAIL_CHANGE_CURRENT: Candidate = {
  tokenType: 'email_change_token_current',
  resolved: 'email_change',
  token: (u) => u.emailChangeTokenCurrent,
  sentAt: (u) => u.emailChangeSentAt,
  counter: 'email_change',
  invalidate: EMAIL_CHANGE_INVALIDATED,
}

const PHONE_CHANGE: Candidate = {
  tokenType: 'phone_change_token',
  resolved: 'phone_change',
  token: (u) => u.phoneChangeToken,
  sentAt: (u) => u.phoneChangeSentAt,
  counter: 'phone_change_token',
  invalidate: { changes: { phoneChangeToken: '' }, types: ['phone_change_token'] },
}

const CANDIDATES: Readonly<Record<VerificationType, readonly Candidate[]>> = {
  signup: [CONFIRMATION('signup')],
  invite: [CONFIRMATION('invite')],
  recovery: [RECOVERY('recovery')],
  magiclink: [RECOVERY('magiclink')],
  email: [CONFIRMATION('signup'), RECOVERY('magiclink')],
  email_change: [EMAIL_CHANGE_NEW, EMAIL_CHANGE_CURRENT],
  sms: [CONFIRMATION('sms')],
  phone_change: [PHONE_CHANGE],
}

const LINK_INVALID = (): ForbiddenError =>
  new ForbiddenError('otp_expired', 'Email link is invalid or has expired')
const CODE_INVALID = (): ForbiddenError =>
  new ForbiddenError('otp_expired', 'Token has expired or is invalid')

/** Whether a type's code goes to a phone (its lifetime is `SMS_OTP_EXP`). */
function isPhoneType(type: VerificationType): boolean {
  return type === 'sms' || type === 'phone_change'
}

function isVerificationType(type: string): type is VerificationType {
  return (VERIFICATION_TYPES as readonly string[]).includes(type)
}

/** Validated parameters: the form of the request and the type. */
type Checked =
  | { readonly form: 'hash'; readonly type: VerificationType; readonly hash: string }
  | {
      readonly form: 'code'
      readonly type: VerificationType
      readonly code: string
      readonly email: string
      readonly phone: string
    }

/**
 * Checks the parameters of `/verify` in upstream's order and with its texts. These errors are
 * answered as JSON even on GET (before a redirect target is known).
 *
 * @param method `GET` (the token is a hash) or `POST`.
 * @throws {@link BadRequestError} 400 `validation_failed`; {@link UnprocessableEntityError} 422
 *   `validation_failed` "Invalid email format".
 */
export function checkVerifyParams(method: 'GET' | 'POST', params: VerifyParams): Checked {
  if (params.type === '') {
    throw new BadRequestError('validation_failed', 'Verify requires a verification type')
  }
  if (method === 'GET') {
    if (params.token === '') {
      throw new BadRequestError('validation_failed', 'Verify requires a token or a token hash')
    }
  } else if ((params.token === '') === (params.tokenHash === '')) {
    throw new BadRequestError('validation_failed', 'Verify requires either a token or a token hash')
  }
  if (!isVerificationType(params.type)) {
    throw new BadRequestError('validation_failed', 'Unsupported verification type')
  }
  const type = params.type
  const hash = method === 'GET' ? params.token : params.tokenHash
  if (hash !== '') {
    if (method === 'POST' && (params.email !== '' || params.phone !== '')) {
      throw new BadRequestError(
        'validation_failed',
        'Only the token_hash and type should be provided',
      )
    }
    if (type === 'sms' || type === 'phone_change') {
      throw new BadRequestError('validation_failed', 'Invalid email verification type')
    }
    return { form: 'hash', type, hash }
  }
  if ((params.email === '') === (params.phone === '')) {
    throw new BadRequestError(
      'validation_failed',
      'Only an email address or phone number should be provided on verify',
    )
  }
  let email = ''
  if (params.email !== '') {
    try {
      email = validateEmail(params.email)
    } catch {
      throw new UnprocessableEntityError('validation_failed', 'Invalid email format')
    }
  }
  return { form: 'code', type, code: params.token, email, phone: normalizePhone(params.phone) }
}

/** Epoch milliseconds at which `user`'s code of `candidate` expires, or `undefined` for none. */
function expiryOf(ctx: AppContext, user: User, candidate: Candidate): number | undefined {
  const sentAt = candidate.sentAt(user)
  if (candidate.token(user) === '' || sentAt === null) return undefined
  const lifetime = isPhoneType(candidate.resolved)
    ? ctx.settings.sms.otpExpMs
    : ctx.settings.mailer.otpExpMs
  return sentAt.getTime() + lifetime
}

/** Whether `user` has a code of `candidate` out that has not expired at `now`. */
function isPending(ctx: AppContext, user: User, candidate: Candidate, now: number): boolean {
  const expiry = expiryOf(ctx, user, candidate)
  return expiry !== undefined && now <= expiry
}

/** Whether `user`'s pending code of `candidate` is `hash` (or its `pkce_` form). */
function matches(
  ctx: AppContext,
  user: User,
  candidate: Candidate,
  hash: string,
  now: number,
): boolean {
  const expected = candidate.token(user)
  return (
    isPending(ctx, user, candidate, now) &&
    (expected === hash || expected === PKCE_TOKEN_PREFIX + hash)
  )
}

/**
 * What {@link findVerified} found: the token a request verified, or, for a typed code that
 * matched none of a known user's pending codes, those codes (each counts a wrong answer).
 */
type Found =
  | { readonly kind: 'verified'; readonly user: User; readonly candidate: Candidate }
  | { readonly kind: 'wrong'; readonly user: User; readonly pending: readonly Candidate[] }

/**
 * Finds and locks the user of a verification and the token column it matched.
 *
 * @throws {@link ForbiddenError} `otp_expired` when there is nothing to count: no such link, no
 *   such user, or no code out.
 */
async function findVerified(
  ctx: AppContext,
  tx: Queryable,
  checked: Checked,
  aud: string,
  now: number,
): Promise<Found> {
  const candidates = CANDIDATES[checked.type]
  if (checked.form === 'hash') {
    const row = await findOneTimeToken(
      tx,
      checked.hash,
      candidates.map((c) => c.tokenType),
    )
    const user = row ? await getUserById(tx, row.userId, true) : undefined
    const candidate = user && candidates.find((c) => matches(ctx, user, c, checked.hash, now))
    if (!user || !candidate) throw LINK_INVALID()
    return { kind: 'verified', user, candidate }
  }
  let found: User | undefined
  if (checked.email !== '') {
    found = await findUserByEmail(tx, checked.email, aud)
    if (!found && checked.type === 'email_change') {
      found = await findUserByEmailChange(tx, checked.email, aud)
    }
  } else if (checked.type === 'phone_change') {
    found = await findUserByPhoneChange(tx, checked.phone, aud)
  } else {
    found = await findUserByPhone(tx, checked.phone, aud)
  }
  // The user's row is locked: its codes' answers are checked and counted one at a time.
  const user = found ? await getUserById(tx, found.id, true) : undefined
  if (!user) throw CODE_INVALID()
  const check = ctx.sms.checkOtp
  if (
    check &&
    checked.phone !== '' &&
    isPhoneType(checked.type) &&
    testOtpFor(ctx.settings, checked.phone, now) === undefined
  ) {
    // Twilio Verify drew the code and checks it (upstream): a code must have been requested.
    const pending = candidates.filter((c) => c.token(user) !== '')
    const candidate = pending[0]
    if (!candidate) throw CODE_INVALID()
    let approved: boolean
    try {
      approved = await check(checked.phone, checked.code)
    } catch (error) {
      throw new ForbiddenError('otp_expired', 'Token has expired or is invalid', { cause: error })
    }
    return approved ? { kind: 'verified', user, candidate } : { kind: 'wrong', user, pending }
  }
  const hash = tokenHash(checked.email !== '' ? checked.email : checked.phone, checked.code)
  const candidate = candidates.find((c) => matches(ctx, user, c, hash, now))
  if (candidate) return { kind: 'verified', user, candidate }
  const pending = candidates.filter((c) => isPending(ctx, user, c, now))
  if (pending.length === 0) throw CODE_INVALID()
  return { kind: 'wrong', user, pending }
}

/**
 * Counts a wrong code against each of `user`'s pending codes it was checked against, and
 * invalidates those whose `SECURITY_OTP_MAX_ATTEMPTS` answers are used up (their columns and
 * `one_time_tokens` rows cleared; the sent-at columns stay, so a new code still waits for
 * `SMTP_MAX_FREQUENCY` or `SMS_MAX_FREQUENCY`).
 */
async function countWrongCode(
  ctx: AppContext,
  tx: Queryable,
  user: User,
  pending: readonly Candidate[],
  now: number,
): Promise<void> {
  const counted = new Set<string>()
  const changes: UserChanges = {}
  const types: OneTimeTokenType[] = []
  for (const candidate of pending) {
    const sentAt = candidate.sentAt(user)?.getTime() ?? 0
    const target = `otp:${candidate.counter}:${user.id}:${String(sentAt)}`
    if (counted.has(target)) continue
    counted.add(target)
    const expiry = expiryOf(ctx, user, candidate) ?? now
    if (await countWrongAnswer(ctx, tx, target, expiry, now)) {
      Object.assign(changes, candidate.invalidate.changes)
      types.push(...candidate.invalidate.types)
    }
  }
  if (types.length > 0) {
    await updateUser(tx, user.id, changes, now)
    await deleteOneTimeTokens(tx, user.id, types)
  }
}

/** Confirms the user's email (or phone, for `sms`) and its identity. */
async function confirm(
  tx: Queryable,
  user: User,
  update: UserChanges,
  channel: 'email' | 'phone',
  now: number,
): Promise<void> {
  if (channel === 'email' && user.emailConfirmedAt === null) {
    update.emailConfirmedAt = new Date(now)
    update.userMetadata = mergeMetadata(update.userMetadata ?? user.userMetadata, {
      email_verified: true,
    })
    await updateIdentityData(tx, user.id, 'email', { email_verified: true }, now)
  }
  if (channel === 'phone' && user.phoneConfirmedAt === null) {
    update.phoneConfirmedAt = new Date(now)
    await updateIdentityData(tx, user.id, 'phone', { phone_verified: true }, now)
  }
  if (user.isAnonymous) update.isAnonymous = false
}

/** What {@link applyVerification} did: sign in, or wait for the other email-change link. */
type Applied =
  | {
      readonly kind: 'signed_in'
      readonly user: User
      /** The address before a completed email change. */
      readonly oldEmail?: string
      /** The number before a completed phone change (`''` when there was none). */
      readonly oldPhone?: string
    }
  | { readonly kind: 'half' }

/** Carries out a verified token's effect inside `tx` and consumes the token. */
async function applyVerification(
  ctx: AppContext,
  tx: Queryable,
  user: User,
  candidate: Candidate,
  client: RequestContext,
  now: number,
): Promise<Applied> {
  const update: UserChanges = {}
  const type = candidate.resolved
  const audit = async (
    action: 'user_signedup' | 'invite_accepted' | 'user_modified',
  ): Promise<void> => {
    await ctx.audit.record(
      tx,
      { id: ctx.random.uuid(), actor: auditActor(user), action, ip: client.ip },
      now,
    )
  }
  let oldEmail: string | undefined
  let oldPhone: string | undefined
  switch (type) {
    case 'signup':
    case 'invite':
      update.confirmationToken = ''
      // An invitee without a password gets a random one; the app then asks for a real one.
      if (user.encryptedPassword === '' && user.invitedAt !== null) {
        update.encryptedPassword = await ctx.passwords.hash(randomPassword(ctx))
      }
      await confirm(tx, user, update, 'email', now)
      await audit(type === 'invite' ? 'invite_accepted' : 'user_signedup')
      break
    case 'sms':
      update.confirmationToken = ''
      await confirm(tx, user, update, 'phone', now)
      break
    case 'phone_change':
      await assertPhoneFree(tx, user.phoneChange)
      oldPhone = user.phone
      await applyPhoneChange(ctx, tx, user, update, now)
      await audit('user_modified')
      break
    case 'recovery':
    case 'magiclink':
      update.recoveryToken = ''
      await confirm(tx, user, update, 'email', now)
      break
    case 'email_change': {
      // With two tokens out (secure change), the first link only records itself.
      const both = user.emailChangeTokenNew !== '' && user.emailChangeTokenCurrent !== ''
      if (both && user.emailChangeConfirmStatus === 0) {
        await updateUser(
          tx,
          user.id,
          candidate.tokenType === 'email_change_token_new'
            ? { emailChangeTokenNew: '', emailChangeConfirmStatus: 1 }
            : { emailChangeTokenCurrent: '', emailChangeConfirmStatus: 1 },
          now,
        )
        await deleteOneTimeTokens(tx, user.id, [candidate.tokenType])
        return { kind: 'half' }
      }
      await assertEmailFree(tx, user.emailChange)
      oldEmail = user.email
      await applyEmailChange(ctx, tx, user, update, now)
    }
  }
  const updated = await updateUser(tx, user.id, update, now)
  await deleteOneTimeTokens(
    tx,
    user.id,
    type === 'email_change'
      ? ['email_change_token_new', 'email_change_token_current']
      : [candidate.tokenType],
  )
  return {
    kind: 'signed_in',
    user: updated,
    ...(oldEmail === undefined ? {} : { oldEmail }),
    ...(oldPhone === undefined ? {} : { oldPhone }),
  }
}

/**
 * Verifies a link or code and carries out its effect in one transaction (the user row is locked,
 * so a token is used once): confirmation, sign-in, or email change. A PKCE link (GET, `pkce_`
 * hash) answers the flow's auth code instead of a session; POST always answers a session. A
 * wrong typed code counts against the user's pending codes it was checked against, and the
 * `SECURITY_OTP_MAX_ATTEMPTS`-th invalidates them; the answer is the same whether or not the
 * address or number belongs to a user (a link's hash names no user, so it counts nothing).
 *
 * @param method `GET` (a link) or `POST`.
 * @param log Where a failed email- or phone-changed notification is reported (the request's
 *   logger).
 * @throws The errors of {@link checkVerifyParams}; {@link ForbiddenError} 403 `otp_expired`
 *   "Email link is invalid or has expired" (hash) or "Token has expired or is invalid" (code, or
 *   a code Twilio Verify did not approve), 403 `user_banned`; {@link NotFoundError} 404
 *   `flow_state_not_found`; 422 `email_exists` / `phone_exists` when the new address or number
 *   was taken meanwhile.
 */
export async function verify(
  ctx: AppContext,
  method: 'GET' | 'POST',
  params: VerifyParams,
  client: RequestContext,
  log?: NotificationLog,
): Promise<VerifyOutcome> {
  const checked = checkVerifyParams(method, params)
  const { redirectTo } = params
  /** The verified user, with the previous email or phone of a completed change. */
  type Changed = Extract<Applied, { kind: 'signed_in' }>
  type Done =
    | {
        kind: 'pending'
        pending: PendingTokens
        type: ResolvedVerificationType
        changed: Changed
      }
    | { kind: 'code'; authCode: string; changed: Changed }
    | { kind: 'half' }
    | { kind: 'wrong' }
  let done: Done
  try {
    done = await ctx.db.transaction(async (tx): Promise<Done> => {
      const now = ctx.clock.now()
      const found = await findVerified(ctx, tx, checked, client.aud, now)
      if (found.kind === 'wrong') {
        // Committed before answering, so that every wrong code counts.
        await countWrongCode(ctx, tx, found.user, found.pending, now)
        return { kind: 'wrong' }
      }
      const { user, candidate } = found
      if (isBanned(user, now)) throw new ForbiddenError('user_banned', 'User is banned')
      const pkce = method === 'GET' && candidate.token(user).startsWith(PKCE_TOKEN_PREFIX)
      const applied = await applyVerification(ctx, tx, user, candidate, client, now)
      if (applied.kind === 'half') return { kind: 'half' }
      if (pkce) {
        const flowMethod = candidate.resolved === 'signup' ? 'email/signup' : candidate.resolved
        const flow = await findLatestFlowStateOfUser(tx, user.id, flowMethod)
        if (!flow) {
          throw new NotFoundError(
            'flow_state_not_found',
            'invalid flow state, no valid flow state found',
          )
        }
        await markAuthCodeIssued(tx, flow.id, now)
        return { kind: 'code', authCode: flow.authCode, changed: applied }
      }
      const pending = await ctx.tokens.startSession(tx, applied.user, 'otp', client)
      return { kind: 'pending', pending, type: candidate.resolved, changed: applied }
    })
  } catch (error) {
    if (isUniqueViolation(error, ctx.db.t.users)) {
      throw checked.type === 'phone_change'
        ? new UnprocessableEntityError(
            'phone_exists',
            'A user with this phone number has already been registered',
          )
        : new UnprocessableEntityError(
            'email_exists',
            'A user with this email address has already been registered',
          )
    }
    throw error
  }
  if (done.kind === 'wrong') {
    await purgeExpiredAttempts(ctx)
    throw CODE_INVALID()
  }
  if (done.kind === 'half') {
    return { kind: 'message', message: SINGLE_CONFIRMATION_ACCEPTED, redirectTo }
  }
  const { changed } = done
  if (changed.oldEmail !== undefined) {
    await notifyEmailChanged(ctx, changed.user, changed.oldEmail, log, client.acceptLanguage)
  }
  if (changed.oldPhone !== undefined) {
    await notifyPhoneChanged(ctx, changed.user, changed.oldPhone, log, client.acceptLanguage)
  }
  if (done.kind === 'code') return { kind: 'code', authCode: done.authCode, redirectTo }
  const session = await ctx.tokens.finish(done.pending)
  return { kind: 'session', session, type: done.type, redirectTo }
}
