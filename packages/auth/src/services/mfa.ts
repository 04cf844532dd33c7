/**
 * Multi-factor authentication (upstream `api/mfa.go`): enrolling TOTP and phone factors,
 * challenging and verifying them (which raises the session to `aal2`), unenrolling, the admin's
 * view of a user's factors, and the `aal2` rule for sensitive changes.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/mfa.go
 * @module
 */
import { timingSafeEqual } from 'node:crypto'
import type { JWTPayload } from 'jose'
import QRCode from 'qrcode'
import type { AppContext, RequestContext } from '../context.js'
import { generateTotpSecret, matchTotpStep, totpUri } from '../crypto/totp.js'
import {
  BadRequestError,
  ForbiddenError,
  InternalServerError,
  NotFoundError,
  RequestRateLimitError,
  TooManyRequestsError,
  UnauthorizedError,
  UnprocessableEntityError,
} from '../errors.js'
import { MFA_REJECTION_MESSAGE, readDecision } from '../hooks/decision.js'
import { downgradeSessionsOfFactor } from '../models/amr-claim.js'
import {
  deleteChallenge,
  insertChallenge,
  lockChallengeOfFactor,
  markChallengeVerified,
} from '../models/challenge.js'
import { auditActor, type AuditActor } from '../models/audit-log.js'
import {
  deleteExpiredFactors,
  deleteFactor,
  deleteUnverifiedFactors,
  findFactorOfUser,
  hasVerifiedFactor,
  insertFactor,
  listFactorsOfUser,
  markFactorVerified,
  saveFactorWebauthnCredential,
  touchFactorChallenged,
  updateFactor,
  type Factor,
  type FactorType,
} from '../models/factor.js'
import { deleteSessions, deleteSessionsBelowAal2, type Session } from '../models/session.js'
import { getUserById, type User } from '../models/user.js'
import type { JsonObject } from '../models/json.js'
import {
  checkWebauthnAnswer,
  readWebauthnAnswer,
  webauthnFactorOptions,
  type WebauthnFactorOptions,
} from './mfa-webauthn.js'
import type { Queryable } from '../storage/db.js'
import type { IssuedSession } from '../sessions/token-service.js'
import { sendNotification, type NotificationLog } from './shared/notifications.js'
import { isUuid, validatePhone } from './shared/validation.js'
import { generateOtp } from './shared/mail.js'
import { validateChannel } from './shared/phone.js'
import { sendSmsByHook, smsText, takeSmsBudget } from './shared/sms.js'
import {
  countWrongAnswer,
  factorBackoff,
  factorTarget,
  purgeExpiredAttempts,
} from './shared/attempts.js'

/** Who asks: the bearer token's user and session (see `authenticateUser`). */
export interface MfaCaller {
  readonly user: User
  readonly session: Session | undefined
  /** The token's claims; `is_anonymous` is read from them. */
  readonly claims: JWTPayload
}

/** What `POST /factors` asks for. */
export interface EnrollParams {
  /** `totp` or `phone` (anything else is refused). */
  readonly factorType: string
  /** `''` for none. */
  readonly friendlyName: string
  /** TOTP: who the account is with, shown by authenticator apps; `''`: `SITE_URL`'s host. */
  readonly issuer: string
  /** Phone factors: the number (E.164). */
  readonly phone: string
}

/** What enrolment answers: the factor, and for TOTP what the authenticator app needs. */
export interface Enrolled {
  readonly factor: Factor
  /** TOTP only. */
  readonly totp?: {
    /** An SVG image (markup) of the QR code of {@link uri}. */
    readonly qrCode: string
    /** The Base32 secret, for typing in by hand. */
    readonly secret: string
    /** The `otpauth://totp/…` key URI. */
    readonly uri: string
  }
  /** Phone only: the number as it was given. */
  readonly phone?: string
}

/** What `POST /factors/<id>/challenge` answers. */
export interface ChallengeIssued {
  readonly id: string
  readonly type: FactorType
  /** Unix time (seconds) after which the challenge can no longer be verified. */
  readonly expiresAt: number
  /** WebAuthn factors: the ceremony and its options. */
  readonly webauthn?: WebauthnFactorOptions
}

function factorNotFound(): NotFoundError {
  return new NotFoundError('mfa_factor_not_found', 'Factor not found')
}

/** The caller's session; every factor endpoint needs one (upstream: 500 without). */
function sessionOf(caller: MfaCaller, what: string): Session {
  if (!caller.session) {
    throw new InternalServerError(
      'unexpected_failure',
      `A valid session and a registered user are required to ${what}`,
    )
  }
  return caller.session
}

/**
 * Refuses anonymous users (upstream `requireNotAnonymous` on `/factors`).
 *
 * @throws {@link ForbiddenError} `no_authorization` "Anonymous user not allowed to perform these
 *   actions".
 */
export function refuseAnonymous(caller: MfaCaller): void {
  if (caller.claims.is_anonymous === true) {
    throw new ForbiddenError(
      'no_authorization',
      'Anonymous user not allowed to perform these actions',
    )
  }
}

/**
 * Requires an `aal2` session for a change of password, email or phone when the user has a verified
 * factor (upstream `UserUpdate`: `HasMFAEnabled && !session.IsAAL2()`). Call it before changing
 * anything.
 *
 * @param changes Which sensitive fields the request changes.
 * @throws {@link UnauthorizedError} 401 `insufficient_aal` "AAL2 session is required to update
 *   email or password when MFA is enabled."
 */
export async function requireAal2IfVerifiedFactors(
  q: Queryable,
  caller: { readonly user: User; readonly session: Session | undefined },
  changes: { readonly password?: boolean; readonly email?: boolean; readonly phone?: boolean },
): Promise<void> {
  if (!changes.password && !changes.email && !changes.phone) return
  if (caller.session?.aal === 'aal2') return
  if (!(await hasVerifiedFactor(q, caller.user.id))) return
  throw new UnauthorizedError(
    'insufficient_aal',
    'AAL2 session is required to update email or password when MFA is enabled.',
  )
}

/** 422 `mfa_factor_name_conflict`: another of the user's factors has this friendly name. */
function nameConflict(friendlyName: string): UnprocessableEntityError {
  return new UnprocessableEntityError(
    'mfa_factor_name_conflict',
    `A factor with the friendly name ${JSON.stringify(friendlyName)} for this user already exists`,
  )
}

/** Upstream `validateFactors`: name conflicts, the two limits, and aal2 once one is verified. */
function checkEnrolment(
  ctx: AppContext,
  factors: readonly Factor[],
  friendlyName: string,
  session: Session,
): void {
  const { mfa } = ctx.settings
  if (factors.some((f) => f.friendlyName === friendlyName)) throw nameConflict(friendlyName)
  const verified = factors.filter((f) => f.status === 'verified').length
  if (factors.length >= mfa.maxEnrolledFactors || verified >= mfa.maxVerifiedFactors) {
    throw new UnprocessableEntityError(
      'too_many_enrolled_mfa_factors',
      'Maximum number of verified factors reached, unenroll to continue',
    )
  }
  if (verified > 0 && session.aal !== 'aal2') {
    throw new ForbiddenError('insufficient_aal', 'AAL2 required to enroll a new factor')
  }
}

/**
 * Once a user has a verified factor, only an `aal2` session may complete the enrolment of
 * another: challenge or verify an unverified factor (beyond upstream, which checks this at
 * enrolment only; with the password alone, a factor left unverified would otherwise raise a new
 * `aal1` session to `aal2`). Answered as upstream answers the enrolment.
 *
 * @throws {@link ForbiddenError} 403 `insufficient_aal` "AAL2 required to enroll a new factor".
 */
async function requireAal2ToCompleteEnrolment(
  q: Queryable,
  factor: Factor,
  session: Session,
): Promise<void> {
  if (factor.status === 'verified' || session.aal === 'aal2') return
  if (await hasVerifiedFactor(q, factor.userId)) {
    throw new ForbiddenError('insufficient_aal', 'AAL2 required to enroll a new factor')
  }
}

/** `SITE_URL`'s host, upstream's default TOTP issuer. */
function siteHost(ctx: AppContext): string {
  try {
    return new URL(ctx.settings.siteUrl).host
  } catch (error) {
    throw new InternalServerError('unexpected_failure', 'site url is improperly formatted', {
      cause: error,
    })
  }
}

/**
 * Enrolls a factor (`POST /factors`), unverified until its first challenge is verified. TOTP:
 * a new secret, its key URI and QR code. Phone: the number; an unverified factor of the same
 * number is replaced (the new one keeps its last challenge time); at most
 * `MFA_PHONE_MAX_UNVERIFIED_FACTORS` phone factors are unverified at once. Unverified,
 * never-challenged factors older than `MFA_FACTOR_EXPIRY_DURATION` are deleted first.
 *
 * @throws {@link UnprocessableEntityError} `mfa_totp_enroll_not_enabled`,
 *   `mfa_phone_enroll_not_enabled`, `mfa_factor_name_conflict`, `too_many_enrolled_mfa_factors`
 *   (also for `MFA_PHONE_MAX_UNVERIFIED_FACTORS`), `mfa_verified_factor_exists`; {@link BadRequestError} `validation_failed` (factor type,
 *   phone); {@link ForbiddenError} `insufficient_aal` (a verified factor exists and the session
 *   is `aal1`).
 */
export async function enrollFactor(
  ctx: AppContext,
  caller: MfaCaller,
  params: EnrollParams,
  ip: string,
): Promise<Enrolled> {
  const session = sessionOf(caller, 'enroll a factor')
  const { user } = caller
  const { mfa } = ctx.settings
  let phone = ''
  if (params.factorType === 'phone') {
    if (!mfa.phoneEnrollEnabled) {
      throw new UnprocessableEntityError(
        'mfa_phone_enroll_not_enabled',
        'MFA enroll is disabled for Phone',
      )
    }
    if (params.phone === '') {
      throw new BadRequestError('validation_failed', 'Phone number required to enroll Phone factor')
    }
    phone = validatePhone(params.phone)
  } else if (params.factorType === 'webauthn') {
    if (!mfa.webAuthnEnrollEnabled) {
      throw new UnprocessableEntityError(
        'mfa_webauthn_enroll_not_enabled',
        'MFA enroll is disabled for WebAuthn',
      )
    }
  } else if (params.factorType === 'totp') {
    if (!mfa.totpEnrollEnabled) {
      throw new UnprocessableEntityError(
        'mfa_totp_enroll_not_enabled',
        'MFA enroll is disabled for TOTP',
      )
    }
  } else {
    throw new BadRequestError(
      'validation_failed',
      'factor_type needs to be totp, phone, or webauthn',
    )
  }
  const factorType: FactorType = params.factorType
  const secret = factorType === 'totp' ? generateTotpSecret(ctx.random) : ''
  const issuer = params.issuer !== '' ? params.issuer : factorType === 'totp' ? siteHost(ctx) : ''
  const totp = factorType === 'totp' ? await totpOffer(secret, issuer, user.email) : undefined
  const factor = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    // Serialises enrolments of one user, so that the limits hold under concurrent requests.
    await getUserById(tx, user.id, true)
    await deleteExpiredFactors(tx, mfa.factorExpiryMs, now)
    let lastChallengedAt: Date | null = null
    if (factorType === 'phone') {
      const phones = (await listFactorsOfUser(tx, user.id)).filter((f) => f.factorType === 'phone')
      if (phones.some((f) => f.phone === phone && f.status === 'verified')) {
        throw new UnprocessableEntityError(
          'mfa_verified_factor_exists',
          'A verified phone factor already exists, unenroll the existing factor to continue',
        )
      }
      // The new factor replaces the unverified ones of its number and keeps their last
      // challenge, so that enrolling again does not restart MFA_PHONE_MAX_FREQUENCY.
      for (const replaced of phones.filter((f) => f.phone === phone)) {
        const at = replaced.lastChallengedAt
        if (at !== null && (lastChallengedAt === null || at > lastChallengedAt)) {
          lastChallengedAt = at
        }
      }
      await deleteUnverifiedFactors(tx, user.id, 'phone', phone)
    }
    const factors = await listFactorsOfUser(tx, user.id)
    checkEnrolment(ctx, factors, params.friendlyName, session)
    if (
      factorType === 'phone' &&
      factors.filter((f) => f.factorType === 'phone' && f.status === 'unverified').length >=
        mfa.phoneMaxUnverifiedFactors
    ) {
      throw new UnprocessableEntityError(
        'too_many_enrolled_mfa_factors',
        'Maximum number of unverified phone factors reached, verify or unenroll one to continue',
      )
    }
    const created = await insertFactor(
      tx,
      {
        id: ctx.random.uuid(),
        userId: user.id,
        friendlyName: params.friendlyName,
        factorType,
        secret,
        phone,
        lastChallengedAt,
      },
      now,
    )
    await ctx.audit.record(
      tx,
      {
        id: ctx.random.uuid(),
        actor: auditActor(user),
        action: 'factor_in_progress',
        traits: { factor_id: created.id, factor_type: factorType },
        ip,
      },
      now,
    )
    return created
  })
  if (totp) return { factor, totp }
  return factorType === 'phone' ? { factor, phone: params.phone } : { factor }
}

/**
 * The key URI and its QR code (SVG, error-correction level H as upstream), made before anything
 * is stored.
 *
 * @throws {@link BadRequestError} `validation_failed` when the URI is too long for a QR code
 *   (an issuer of about a thousand bytes).
 */
async function totpOffer(
  secret: string,
  issuer: string,
  account: string,
): Promise<NonNullable<Enrolled['totp']>> {
  const uri = totpUri(secret, issuer, account)
  try {
    const qrCode = await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'H', margin: 1 })
    return { qrCode, secret, uri }
  } catch (error) {
    throw new BadRequestError(
      'validation_failed',
      'Error generating QR Code: the issuer is too long to fit in one',
      { cause: error },
    )
  }
}

/**
 * The caller's factor `factorId` (upstream `loadFactor`).
 *
 * @throws {@link NotFoundError} `mfa_factor_not_found` "Factor not found".
 */
export async function loadOwnFactor(
  q: Queryable,
  userId: string,
  factorId: string,
): Promise<Factor> {
  const factor = await findFactorOfUser(q, userId, factorId)
  if (!factor) throw factorNotFound()
  return factor
}

/** `MFA_<TYPE>_VERIFY_ENABLED`, which governs both challenge and verify. */
function requireVerifyEnabled(ctx: AppContext, factor: Factor): void {
  const { mfa } = ctx.settings
  if (factor.factorType === 'phone' && !mfa.phoneVerifyEnabled) {
    throw new UnprocessableEntityError(
      'mfa_phone_verify_not_enabled',
      'MFA verification is disabled for Phone',
    )
  }
  if (factor.factorType === 'totp' && !mfa.totpVerifyEnabled) {
    throw new UnprocessableEntityError(
      'mfa_totp_verify_not_enabled',
      'MFA verification is disabled for TOTP',
    )
  }
  if (factor.factorType === 'webauthn' && !mfa.webAuthnVerifyEnabled) {
    throw new UnprocessableEntityError(
      'mfa_webauthn_verify_not_enabled',
      'MFA verification is disabled for WebAuthn',
    )
  }
}

/** 429 `over_sms_send_rate_limit` with upstream's text, for a wait of `waitMs`. */
function smsTooSoon(waitMs: number): TooManyRequestsError {
  return new TooManyRequestsError(
    'over_sms_send_rate_limit',
    `For security purposes, you can only request this after ${String(Math.floor(waitMs / 1000))} seconds.`,
  )
}

/**
 * Creates a challenge (`POST /factors/<id>/challenge`). Phone factors: a code of
 * `MFA_PHONE_OTP_LENGTH` digits is sent by SMS with `MFA_PHONE_TEMPLATE`, not more often than
 * `MFA_PHONE_MAX_FREQUENCY` per factor, from the `RATE_LIMIT_SMS_SENT` budget every SMS spends.
 * One transaction holds the factor's row from the interval check to the send (stricter than
 * upstream, which checks, sends, then writes): a challenge that finds the row taken by another
 * being sent is told to wait, so concurrent requests send one SMS and never fail with a 500. A
 * failed send stores nothing.
 *
 * @param channel Phone factors: `sms` (default) or `whatsapp` (Twilio and Twilio Verify only).
 * @returns The challenge, valid for `MFA_CHALLENGE_EXPIRY_DURATION` seconds.
 * @throws {@link UnprocessableEntityError} `mfa_*_verify_not_enabled`; {@link BadRequestError}
 *   `validation_failed` (channel); {@link ForbiddenError} `insufficient_aal` (an unverified
 *   factor, a verified one exists, and the session is `aal1`); {@link TooManyRequestsError}
 *   `over_sms_send_rate_limit` (too soon, or the SMS budget is spent);
 *   {@link InternalServerError} when the SMS cannot be sent.
 */
export async function challengeFactor(
  ctx: AppContext,
  caller: MfaCaller,
  factor: Factor,
  channel: string,
  ip: string,
): Promise<ChallengeIssued> {
  const session = sessionOf(caller, 'challenge a factor')
  requireVerifyEnabled(ctx, factor)
  const { mfa } = ctx.settings
  const chosen = factor.factorType === 'phone' ? validateChannel(ctx.settings, channel) : 'sms'
  await requireAal2ToCompleteEnrolment(ctx.db, factor, session)
  const webauthn =
    factor.factorType === 'webauthn'
      ? await webauthnFactorOptions(
          ctx,
          caller.user,
          factor,
          (await listFactorsOfUser(ctx.db, factor.userId)).filter((f) => f.id !== factor.id),
        )
      : undefined
  const challenge = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    let otpCode = ''
    if (factor.factorType === 'phone') {
      const current = await findFactorOfUser(tx, factor.userId, factor.id, 'skip-locked')
      if (!current) throw smsTooSoon(mfa.phoneMaxFrequencyMs)
      const last = current.lastChallengedAt?.getTime()
      if (last !== undefined && last + mfa.phoneMaxFrequencyMs > now) {
        throw smsTooSoon(last + mfa.phoneMaxFrequencyMs - now)
      }
      await takeSmsBudget(ctx, now)
      otpCode = generateOtp(ctx.random, mfa.phoneOtpLength)
    }
    // The factor's row before the challenge's (whose foreign key reads it): one lock order.
    await touchFactorChallenged(tx, factor.id, now)
    const created = await insertChallenge(
      tx,
      { id: ctx.random.uuid(), factorId: factor.id, ip, otpCode, webauthn: webauthn?.data },
      now,
    )
    await ctx.audit.record(
      tx,
      {
        id: ctx.random.uuid(),
        actor: auditActor(caller.user),
        action: 'challenge_created',
        traits: { factor_id: factor.id, factor_status: factor.status },
        ip,
      },
      now,
    )
    if (factor.factorType === 'phone' && ctx.hooks.enabled('sendSms')) {
      try {
        await sendSmsByHook(ctx, tx, caller.user, {
          otp: otpCode,
          sms_type: 'mfa',
          phone: factor.phone,
        })
      } catch (error) {
        // Upstream hides the hook's answer behind one message here.
        throw new InternalServerError('unexpected_failure', 'error invoking hook', {
          cause: error,
        })
      }
    } else if (factor.factorType === 'phone') {
      try {
        await ctx.sms.sendMessage(
          factor.phone,
          smsText(mfa.phoneTemplate, otpCode),
          chosen,
          otpCode,
        )
      } catch (error) {
        throw new InternalServerError('unexpected_failure', 'error sending message', {
          cause: error,
        })
      }
    }
    return created
  })
  return {
    id: challenge.id,
    type: factor.factorType,
    expiresAt: Math.floor((challenge.createdAt.getTime() + mfa.challengeExpiryMs) / 1000),
    ...(webauthn ? { webauthn: webauthn.options } : {}),
  }
}

/** Why a verification was refused: decided in the transaction, thrown after it (see below). */
type Refusal = {
  readonly refused: UnprocessableEntityError | ForbiddenError
  readonly counted: boolean
}

function isRefusal(value: unknown): value is Refusal {
  return typeof value === 'object' && value !== null && 'refused' in value
}

/** The `amr` method a factor type records (upstream `amrMethodForFactorType`). */
function amrMethodOf(factorType: FactorType): 'totp' | 'mfa/phone' | 'webauthn' {
  if (factorType === 'webauthn') return 'webauthn'
  return factorType === 'totp' ? 'totp' : 'mfa/phone'
}

/** The refusal of a wrong code or WebAuthn answer, with upstream's texts for codes. */
function wrongAnswer(factorType: FactorType): UnprocessableEntityError {
  const what =
    factorType === 'totp'
      ? 'Invalid TOTP code entered'
      : factorType === 'phone'
        ? 'Invalid MFA Phone code entered'
        : 'Invalid WebAuthn credential_response'
  return new UnprocessableEntityError('mfa_verification_failed', what)
}

/** Compares two codes in constant time. */
function sameCode(expected: string, given: string): boolean {
  const a = Buffer.from(expected)
  const b = Buffer.from(given)
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * Verifies a challenge (`POST /factors/<id>/verify`). On success, in one transaction: the
 * challenge and factor are marked verified, the `amr` entry (`totp` or `mfa/phone`) is recorded,
 * the session is raised to `aal2`, its refresh token is rotated (the `aal1` one stops working),
 * the user's other sessions below `aal2` end, and other unverified factors of the type are
 * removed. A TOTP code is accepted for the current 30-second step or one step either side, and
 * never twice (steps at or before the last accepted one are refused). A phone code must be the
 * challenge's, or, with Twilio Verify, one Twilio approves. The factor's first verification sends
 * `mfa_factor_enrolled_notification`.
 *
 * @param code The 6-digit TOTP code or the SMS code.
 * @returns The new session (access token with `aal: "aal2"`).
 * @throws {@link UnprocessableEntityError} `mfa_factor_not_found` (unknown challenge),
 *   `mfa_ip_address_mismatch` (other IP, or already verified), `mfa_challenge_expired` (it is
 *   deleted), `mfa_verification_failed` (wrong or reused code), `mfa_*_verify_not_enabled`;
 *   {@link BadRequestError} `validation_failed` (empty code).
 */
export async function verifyFactor(
  ctx: AppContext,
  caller: MfaCaller,
  factor: Factor,
  params: {
    readonly challengeId: string
    readonly code: string
    /** WebAuthn factors: `{type, credential_response}`. */
    readonly webauthn?: JsonObject | null | undefined
  },
  client: RequestContext,
  log?: NotificationLog,
): Promise<IssuedSession> {
  const session = sessionOf(caller, 'verify a factor')
  if (params.code === '' && factor.factorType !== 'webauthn') {
    throw new BadRequestError('validation_failed', 'Code needs to be non-empty')
  }
  const answer = factor.factorType === 'webauthn' ? readWebauthnAnswer(params.webauthn) : undefined
  if (!isUuid(params.challengeId)) {
    throw new BadRequestError('validation_failed', 'challenge_id must be an UUID')
  }
  requireVerifyEnabled(ctx, factor)
  const { mfa } = ctx.settings
  const backoff = factorBackoff(ctx.settings)
  const outcome = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    // The user's lock serialises verifications of one user (the first verified factor below is
    // decided once); the factor's, those of one factor: a code is used, and counted, once.
    await getUserById(tx, caller.user.id, true)
    const current = await findFactorOfUser(tx, caller.user.id, factor.id, true)
    if (!current) throw factorNotFound()
    await requireAal2ToCompleteEnrolment(tx, current, session)
    const firstVerified = !(await hasVerifiedFactor(tx, caller.user.id))
    const wait = await backoff.wait(tx, factorTarget(current.id), now)
    if (wait > 0) throw new RequestRateLimitError(wait / 1000)
    const challenge = await lockChallengeOfFactor(tx, current.id, params.challengeId)
    if (!challenge) {
      throw new UnprocessableEntityError(
        'mfa_factor_not_found',
        'MFA factor with the provided challenge ID not found',
      )
    }
    if (challenge.verifiedAt !== null || challenge.ipAddress !== client.ip) {
      throw new UnprocessableEntityError(
        'mfa_ip_address_mismatch',
        'Challenge and verify IP addresses mismatch.',
      )
    }
    const expiresAt = challenge.createdAt.getTime() + mfa.challengeExpiryMs
    if (now > expiresAt) {
      await deleteChallenge(tx, challenge.id)
      return {
        refused: new UnprocessableEntityError(
          'mfa_challenge_expired',
          `MFA challenge ${challenge.id} has expired, verify against another challenge or create a new challenge.`,
        ),
        counted: false,
      }
    }
    let step: number | null = null
    let valid: boolean
    let webauthn: Awaited<ReturnType<typeof checkWebauthnAnswer>> = undefined
    if (current.factorType === 'webauthn') {
      webauthn =
        answer && challenge.webauthn
          ? await checkWebauthnAnswer(ctx, current, challenge.webauthn, answer)
          : undefined
      valid = webauthn !== undefined
    } else if (current.factorType === 'totp') {
      const matched = matchTotpStep(current.secret, params.code, now)
      valid =
        matched !== undefined && (current.lastTotpStep === null || matched > current.lastTotpStep)
      step = matched ?? null
    } else {
      valid = ctx.sms.checkOtp
        ? // Twilio Verify sent the code and checks it (upstream `verifyPhoneFactor`).
          await ctx.sms.checkOtp(current.phone, params.code).catch(() => false)
        : sameCode(challenge.otpCode, params.code)
    }
    if (!valid) {
      // Counted and committed before the answer: the challenge takes SECURITY_OTP_MAX_ATTEMPTS
      // wrong codes, and the factor backs off after as many over all its challenges, whatever
      // the MFA verification attempt hook decides.
      if (await countWrongAnswer(ctx, tx, `mfa_challenge:${challenge.id}`, expiresAt, now)) {
        await deleteChallenge(tx, challenge.id)
      }
      await backoff.failed(tx, factorTarget(current.id), now)
    }
    const rejected = await mfaAttemptHook(ctx, tx, caller.user, current, valid, client)
    if (rejected) {
      const refusal: Refusal = { refused: rejected, counted: !valid }
      return refusal
    }
    if (!valid) {
      return { refused: wrongAnswer(current.factorType), counted: true }
    }
    await backoff.succeeded(tx, factorTarget(current.id))
    await ctx.audit.record(
      tx,
      {
        id: ctx.random.uuid(),
        actor: auditActor(caller.user),
        action: 'verification_attempted',
        traits: {
          factor_id: current.id,
          challenge_id: challenge.id,
          factor_type: current.factorType,
        },
        ip: client.ip,
      },
      now,
    )
    await markChallengeVerified(tx, challenge.id, now)
    await markFactorVerified(tx, current.id, step, now)
    if (webauthn) {
      await saveFactorWebauthnCredential(tx, current.id, webauthn.credential, webauthn.aaguid)
    }
    const pending = await ctx.tokens.raiseSession(
      tx,
      caller.user,
      session,
      { factorId: current.id, method: amrMethodOf(current.factorType) },
      client,
      now,
    )
    await deleteSessionsBelowAal2(tx, caller.user.id)
    // The first verified factor ends every pending enrolment (beyond upstream, which removes those
    // of its type only): a factor enrolled by someone with the password alone cannot outlive it.
    await deleteUnverifiedFactors(
      tx,
      caller.user.id,
      firstVerified ? undefined : current.factorType,
    )
    return {
      pending: { ...pending, factors: await listFactorsOfUser(tx, caller.user.id) },
      newlyVerified: current.status === 'unverified',
    }
  })
  if (isRefusal(outcome)) {
    if (outcome.counted) await purgeExpiredAttempts(ctx)
    throw outcome.refused
  }
  if (outcome.newlyVerified) {
    await sendNotification(
      ctx,
      'mfa_factor_enrolled_notification',
      outcome.pending.user,
      { factorType: factor.factorType, acceptLanguage: client.acceptLanguage ?? '' },
      log,
    )
  }
  return ctx.tokens.finish(outcome.pending)
}

/**
 * `HOOK_MFA_VERIFICATION_ATTEMPT` (upstream, after every code check): `{ user_id, factor_id,
 * factor_type, valid }`, inside the verification's transaction. `decision: "reject"` ends every
 * session of the user (committed with the transaction) and refuses the verification.
 *
 * @returns 403 `mfa_verification_rejected` with the hook's message on a rejection, else
 *   `undefined`.
 * @throws `AuthError` The hook's failure.
 */
async function mfaAttemptHook(
  ctx: AppContext,
  tx: Queryable,
  user: User,
  factor: Factor,
  valid: boolean,
  client: RequestContext,
): Promise<ForbiddenError | undefined> {
  if (!ctx.hooks.enabled('mfaVerificationAttempt')) return undefined
  const output = await ctx.hooks.invoke(
    'mfaVerificationAttempt',
    { user_id: user.id, factor_id: factor.id, factor_type: factor.factorType, valid },
    client,
    tx,
  )
  const decision = readDecision(output, MFA_REJECTION_MESSAGE)
  if (!decision.reject) return undefined
  await deleteSessions(tx, user.id, 'all')
  return new ForbiddenError('mfa_verification_rejected', decision.message)
}

/** Deletes a factor and lowers the sessions it raised (both unenrol paths). */
async function removeFactor(
  ctx: Pick<AppContext, 'audit'>,
  tx: Queryable,
  factor: Factor,
  audit: { id: string; actor: AuditActor; action: 'factor_unenrolled' | 'factor_deleted' },
  traits: Record<string, unknown>,
  ip: string,
  now: number,
): Promise<void> {
  await deleteFactor(tx, factor.id)
  await ctx.audit.record(tx, { ...audit, traits, ip }, now)
  await downgradeSessionsOfFactor(tx, factor.userId, factor.id, amrMethodOf(factor.factorType))
}

/**
 * Unenrolls one of the caller's factors (`DELETE /factors/<id>`): deletes it, lowers the sessions
 * it raised to `aal1` and sends `mfa_factor_unenrolled_notification`.
 *
 * @throws {@link UnprocessableEntityError} `insufficient_aal` "AAL2 required to unenroll verified
 *   factor" (a verified factor, from an `aal1` session).
 */
export async function unenrollFactor(
  ctx: AppContext,
  caller: MfaCaller,
  factor: Factor,
  client: Pick<RequestContext, 'ip' | 'acceptLanguage'>,
  log?: NotificationLog,
): Promise<void> {
  const session = sessionOf(caller, 'unenroll a factor')
  if (factor.status === 'verified' && session.aal !== 'aal2') {
    throw new UnprocessableEntityError(
      'insufficient_aal',
      'AAL2 required to unenroll verified factor',
    )
  }
  await ctx.db.transaction(async (tx) => {
    await removeFactor(
      ctx,
      tx,
      factor,
      { id: ctx.random.uuid(), actor: auditActor(caller.user), action: 'factor_unenrolled' },
      { factor_id: factor.id, factor_status: factor.status, session_id: session.id },
      client.ip,
      ctx.clock.now(),
    )
  })
  await sendNotification(
    ctx,
    'mfa_factor_unenrolled_notification',
    caller.user,
    { factorType: factor.factorType, acceptLanguage: client.acceptLanguage ?? '' },
    log,
  )
}

/**
 * A user's factors, for the admin API (`GET /admin/users/<id>/factors`).
 *
 * @throws {@link UserNotFoundError} When the user does not exist.
 */
export async function listFactorsAsAdmin(ctx: AppContext, userId: string): Promise<Factor[]> {
  await getUserById(ctx.db, userId)
  return listFactorsOfUser(ctx.db, userId)
}

/**
 * A user's factor for an admin route, locked (upstream `loadUser`, then `loadFactor`).
 *
 * @throws {@link UserNotFoundError}; {@link NotFoundError} `mfa_factor_not_found`.
 */
async function lockFactorOfUser(tx: Queryable, userId: string, factorId: string): Promise<Factor> {
  await getUserById(tx, userId)
  const factor = await findFactorOfUser(tx, userId, factorId, true)
  if (!factor) throw factorNotFound()
  return factor
}

/**
 * Deletes a user's factor as an admin (`DELETE /admin/users/<id>/factors/<factor_id>`), with a
 * `factor_deleted` audit entry; the sessions it raised are lowered to `aal1`.
 *
 * @returns The deleted factor.
 * @throws {@link UserNotFoundError}; {@link NotFoundError} `mfa_factor_not_found`.
 */
export async function deleteFactorAsAdmin(
  ctx: AppContext,
  userId: string,
  factorId: string,
  actor: AuditActor,
  ip: string,
): Promise<Factor> {
  return ctx.db.transaction(async (tx) => {
    const factor = await lockFactorOfUser(tx, userId, factorId)
    await removeFactor(
      ctx,
      tx,
      factor,
      { id: ctx.random.uuid(), actor, action: 'factor_deleted' },
      { user_id: userId, factor_id: factor.id },
      ip,
      ctx.clock.now(),
    )
    return factor
  })
}

/** What an admin may change of a factor (`PUT /admin/users/<id>/factors/<factor_id>`). */
export interface AdminFactorChanges {
  /** A new friendly name; `''` leaves it. */
  readonly friendlyName: string
  /** A new number for a phone factor (E.164); `''` leaves it, and other factors ignore it. */
  readonly phone: string
}

/**
 * Changes a user's factor as an admin (upstream `adminUserUpdateFactor`): its friendly name, and
 * a phone factor's number, with a `factor_updated` audit entry (traits `user_id`, `factor_id`,
 * `factor_type`).
 *
 * @returns The updated factor.
 * @throws {@link UserNotFoundError}; {@link NotFoundError} `mfa_factor_not_found`;
 *   {@link BadRequestError} 400 `validation_failed` "Invalid phone number format (E.164
 *   required)"; {@link UnprocessableEntityError} 422 `mfa_factor_name_conflict` when another of
 *   the user's factors has the name (upstream answers a database error).
 */
export async function updateFactorAsAdmin(
  ctx: AppContext,
  userId: string,
  factorId: string,
  changes: AdminFactorChanges,
  actor: AuditActor,
  ip: string,
): Promise<Factor> {
  return ctx.db.transaction(async (tx) => {
    const factor = await lockFactorOfUser(tx, userId, factorId)
    const phone =
      changes.phone !== '' && factor.factorType === 'phone' ? validatePhone(changes.phone) : ''
    const { friendlyName } = changes
    if (friendlyName !== '') {
      const others = (await listFactorsOfUser(tx, userId)).filter((f) => f.id !== factor.id)
      if (others.some((f) => f.friendlyName === friendlyName)) throw nameConflict(friendlyName)
    }
    const now = ctx.clock.now()
    const updated = await updateFactor(
      tx,
      factor.id,
      {
        ...(friendlyName === '' ? {} : { friendlyName }),
        ...(phone === '' ? {} : { phone }),
      },
      now,
    )
    await ctx.audit.record(
      tx,
      {
        id: ctx.random.uuid(),
        actor,
        action: 'factor_updated',
        traits: { user_id: userId, factor_id: factor.id, factor_type: factor.factorType },
        ip,
      },
      now,
    )
    return updated
  })
}
