/**
 * MFA recovery codes (upstream's recovery-code factor, `internal/api/recovery_codes.go`, 2026):
 * a user with an `aal2` session generates a set of single-use codes, shown once; a code then
 * stands in for any factor and raises an `aal1` session to `aal2` (`amr` method
 * `mfa/recovery_code`), once. The set can be regenerated (the old codes stop working) or deleted,
 * by the user or by an admin.
 *
 * A code is 16 characters of Crockford's base32 (80 random bits); only the SHA-256 of its
 * normalised text is stored, and a guess is compared with every unused code in constant time.
 * Wrong codes count against the user's back-off (`SECURITY_OTP_MAX_ATTEMPTS` free failures,
 * then exponentially longer waits), inside the transaction that holds the user's row, so
 * concurrent guesses are all counted and a code is used at most once.
 *
 * @module
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { AppContext, RequestContext } from '../context.js'
import {
  BadRequestError,
  ForbiddenError,
  InternalServerError,
  NotFoundError,
  TooManyRequestsError,
  UnprocessableEntityError,
} from '../errors.js'
import { auditActor, type AuditActor } from '../models/audit-log.js'
import { downgradeSessionsOfFactor } from '../models/amr-claim.js'
import { hasVerifiedFactor } from '../models/factor.js'
import {
  deleteRecoveryCodeSet,
  findRecoveryCodeSet,
  insertRecoveryCodeSet,
  listUnusedRecoveryCodes,
  replaceRecoveryCodes,
  useRecoveryCode,
  type RecoveryCodeSet,
  type UnusedRecoveryCode,
} from '../models/recovery-code.js'
import { deleteSessionsBelowAal2, type Session } from '../models/session.js'
import { getUserById } from '../models/user.js'
import type { Random } from '../random.js'
import type { IssuedSession } from '../sessions/token-service.js'
import type { Queryable } from '../storage/db.js'
import type { MfaCaller } from './mfa.js'
import { factorBackoff, purgeExpiredAttempts } from './shared/attempts.js'
import { sendNotification, type NotificationLog } from './shared/notifications.js'

/** The factor type recovery codes answer as (upstream's wire name). */
export const RECOVERY_CODE_FACTOR_TYPE = 'recovery_code'

/** The friendly name of a set generated without one (upstream's default). */
export const DEFAULT_RECOVERY_CODES_NAME = 'Recovery codes'

/** Crockford's base32 alphabet: no `i`, `l`, `o` or `u`. */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'
const CODE_LENGTH = 16
/** Longest text read as a code (separators and spaces included); longer is wrong at once. */
const MAX_INPUT_LENGTH = 64

/** A newly generated set: the codes are in the clear here and nowhere else. */
export interface GeneratedRecoveryCodes {
  readonly set: RecoveryCodeSet
  /** The codes, shown once. */
  readonly codes: readonly string[]
}

/**
 * A code as typed, normalised: lowercase, without `-` and white space, with Crockford's look-alikes
 * (`i`, `l` → `1`, `o` → `0`).
 */
export function normaliseRecoveryCode(text: string): string {
  return text.toLowerCase().replace(/[\s-]/g, '').replace(/[il]/g, '1').replace(/o/g, '0')
}

/** The stored form of a normalised code. */
function hashCode(normalised: string): Uint8Array {
  return createHash('sha256').update(normalised, 'utf8').digest()
}

/** One new random code (80 bits). */
function newCode(random: Random): string {
  let code = ''
  for (let i = 0; i < CODE_LENGTH; i++) code += ALPHABET.charAt(random.int(ALPHABET.length))
  return code
}

/** `count` new codes, and their rows. */
function newCodes(random: Random, count: number): { codes: string[]; rows: UnusedRecoveryCode[] } {
  const codes = Array.from({ length: count }, () => newCode(random))
  return {
    codes,
    rows: codes.map((code) => ({ id: random.uuid(), codeHash: hashCode(code) })),
  }
}

/**
 * The unused code that `normalised` is, compared with every one in constant time (no early exit,
 * so the time says nothing about which or how many codes matched).
 */
function matchCode(
  unused: readonly UnusedRecoveryCode[],
  normalised: string,
): UnusedRecoveryCode | undefined {
  const given = hashCode(normalised)
  let found: UnusedRecoveryCode | undefined
  for (const code of unused) {
    if (code.codeHash.length === given.length && timingSafeEqual(code.codeHash, given)) {
      found ??= code
    }
  }
  return found
}

function sessionOf(caller: MfaCaller, what: string): Session {
  if (!caller.session) {
    throw new InternalServerError(
      'unexpected_failure',
      `A valid session and a registered user are required to ${what}`,
    )
  }
  return caller.session
}

function requireEnrollEnabled(ctx: AppContext): void {
  if (!ctx.settings.mfa.recoveryCodesEnrollEnabled) {
    throw new UnprocessableEntityError(
      'mfa_recovery_codes_enroll_disabled',
      'MFA enroll is disabled for recovery codes',
    )
  }
}

function requireAal2(session: Session, what: string): void {
  if (session.aal !== 'aal2') {
    throw new ForbiddenError('insufficient_aal', `AAL2 required to ${what} recovery codes`)
  }
}

function noRecoveryCodes(): NotFoundError {
  return new NotFoundError('mfa_factor_not_found', 'No recovery codes found')
}

/** The back-off target of a user's recovery codes (`failed_attempts.target`). */
function recoveryTarget(userId: string): string {
  return `mfa_recovery_codes:${userId}`
}

/**
 * The caller's set of recovery codes and its counts (`GET /factors/recovery-codes`), never the
 * codes.
 *
 * @throws {@link NotFoundError} 404 `mfa_factor_not_found` when the caller has none.
 */
export async function recoveryCodesStatus(
  ctx: AppContext,
  caller: MfaCaller,
): Promise<RecoveryCodeSet> {
  const set = await findRecoveryCodeSet(ctx.db, caller.user.id)
  if (!set) throw noRecoveryCodes()
  return set
}

/**
 * Generates the caller's set of recovery codes (`POST /factors/recovery-codes`): an `aal2`
 * session, `MFA_RECOVERY_CODES_ENROLL_ENABLED`, and no set yet.
 *
 * @param friendlyName `''`: {@link DEFAULT_RECOVERY_CODES_NAME}.
 * @throws {@link UnprocessableEntityError} `mfa_recovery_codes_enroll_disabled`,
 *   `mfa_verified_factor_exists` (a set exists: regenerate it); {@link ForbiddenError}
 *   `insufficient_aal`.
 */
export async function generateRecoveryCodes(
  ctx: AppContext,
  caller: MfaCaller,
  friendlyName: string,
  ip: string,
): Promise<GeneratedRecoveryCodes> {
  const session = sessionOf(caller, 'generate recovery codes')
  requireEnrollEnabled(ctx)
  requireAal2(session, 'generate')
  const { codes, rows } = newCodes(ctx.random, ctx.settings.mfa.recoveryCodesCount)
  const set = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    await getUserById(tx, caller.user.id, true)
    if (await findRecoveryCodeSet(tx, caller.user.id)) {
      throw new UnprocessableEntityError(
        'mfa_verified_factor_exists',
        'Recovery codes already exist, regenerate them to get new ones',
      )
    }
    await insertRecoveryCodeSet(
      tx,
      {
        id: ctx.random.uuid(),
        userId: caller.user.id,
        friendlyName: friendlyName === '' ? DEFAULT_RECOVERY_CODES_NAME : friendlyName,
      },
      rows,
      now,
    )
    await recordAudit(ctx, tx, auditActor(caller.user), ip, now)
    return mustFind(tx, caller.user.id)
  })
  return { set, codes }
}

/**
 * Replaces the caller's codes with new ones (`POST /factors/recovery-codes/regenerate`): the old
 * ones, used or not, stop working, and the back-off of wrong codes starts afresh.
 *
 * @throws {@link UnprocessableEntityError} `mfa_recovery_codes_enroll_disabled`;
 *   {@link ForbiddenError} `insufficient_aal`; {@link NotFoundError} `mfa_factor_not_found`.
 */
export async function regenerateRecoveryCodes(
  ctx: AppContext,
  caller: MfaCaller,
  ip: string,
): Promise<GeneratedRecoveryCodes> {
  const session = sessionOf(caller, 'regenerate recovery codes')
  requireEnrollEnabled(ctx)
  requireAal2(session, 'regenerate')
  const { codes, rows } = newCodes(ctx.random, ctx.settings.mfa.recoveryCodesCount)
  const set = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    await getUserById(tx, caller.user.id, true)
    const current = await findRecoveryCodeSet(tx, caller.user.id, true)
    if (!current) throw noRecoveryCodes()
    await replaceRecoveryCodes(tx, current.id, rows, now)
    await factorBackoff(ctx.settings).succeeded(tx, recoveryTarget(caller.user.id))
    await recordAudit(ctx, tx, auditActor(caller.user), ip, now)
    return mustFind(tx, caller.user.id)
  })
  return { set, codes }
}

/**
 * Deletes the caller's recovery codes (`DELETE /factors/recovery-codes`, an `aal2` session);
 * the sessions a code raised are lowered to `aal1`.
 *
 * @returns The deleted set's id.
 * @throws {@link UnprocessableEntityError} `mfa_recovery_codes_enroll_disabled`;
 *   {@link ForbiddenError} `insufficient_aal`; {@link NotFoundError} `mfa_factor_not_found`.
 */
export async function deleteRecoveryCodes(
  ctx: AppContext,
  caller: MfaCaller,
  ip: string,
): Promise<string> {
  const session = sessionOf(caller, 'delete recovery codes')
  requireEnrollEnabled(ctx)
  requireAal2(session, 'delete')
  return removeSet(ctx, caller.user.id, auditActor(caller.user), 'factor_unenrolled', ip)
}

/**
 * Resets a user's recovery codes as an admin (`DELETE /admin/users/<id>/factors/recovery-codes`):
 * deletes the set; the user generates a new one from an `aal2` session.
 *
 * @returns The deleted set's id.
 * @throws {@link UserNotFoundError}; {@link NotFoundError} `mfa_factor_not_found`.
 */
export async function resetRecoveryCodesAsAdmin(
  ctx: AppContext,
  userId: string,
  actor: AuditActor,
  ip: string,
): Promise<string> {
  return removeSet(ctx, userId, actor, 'factor_deleted', ip)
}

async function removeSet(
  ctx: AppContext,
  userId: string,
  actor: AuditActor,
  action: 'factor_unenrolled' | 'factor_deleted',
  ip: string,
): Promise<string> {
  return ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    await getUserById(tx, userId, true)
    const id = await deleteRecoveryCodeSet(tx, userId)
    if (id === undefined) throw noRecoveryCodes()
    await factorBackoff(ctx.settings).succeeded(tx, recoveryTarget(userId))
    await ctx.audit.record(
      tx,
      {
        id: ctx.random.uuid(),
        actor,
        action,
        traits: { user_id: userId, factor_id: id, factor_type: RECOVERY_CODE_FACTOR_TYPE },
        ip,
      },
      now,
    )
    await downgradeSessionsOfFactor(tx, userId, id, 'mfa/recovery_code')
    return id
  })
}

/**
 * Uses one of the caller's recovery codes (`POST /factors/recovery-codes/verify`): in one
 * transaction the code is marked used, the session is raised to `aal2` with the `amr` method
 * `mfa/recovery_code`, its refresh token is rotated and the user's other sessions below `aal2`
 * end. Then `mfa_recovery_code_used_notification` is sent. The user must still have a verified
 * factor: recovery codes stand in for one, never alone.
 *
 * @param code The code as typed (case, `-` and spaces do not matter).
 * @returns The raised session.
 * @throws {@link BadRequestError} `validation_failed` (empty code); {@link UnprocessableEntityError}
 *   `mfa_recovery_codes_verify_disabled`, `mfa_recovery_codes_sole_factor` (no verified factor),
 *   `mfa_verification_failed` (wrong or used code); {@link NotFoundError} `mfa_factor_not_found`
 *   (no codes); {@link TooManyRequestsError} `mfa_recovery_codes_locked` (back-off after wrong
 *   codes).
 */
export async function verifyRecoveryCode(
  ctx: AppContext,
  caller: MfaCaller,
  code: string,
  client: RequestContext,
  log?: NotificationLog,
): Promise<IssuedSession> {
  const session = sessionOf(caller, 'verify a recovery code')
  if (!ctx.settings.mfa.recoveryCodesVerifyEnabled) {
    throw new UnprocessableEntityError(
      'mfa_recovery_codes_verify_disabled',
      'MFA verification is disabled for recovery codes',
    )
  }
  if (code.trim() === '')
    throw new BadRequestError('validation_failed', 'Code needs to be non-empty')
  const normalised = code.length > MAX_INPUT_LENGTH ? '' : normaliseRecoveryCode(code)
  const backoff = factorBackoff(ctx.settings)
  const target = recoveryTarget(caller.user.id)
  const outcome = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    // The user's lock serialises every use of the user's codes: each is counted, and used, once.
    const user = await getUserById(tx, caller.user.id, true)
    const set = await findRecoveryCodeSet(tx, user.id)
    if (!set) throw noRecoveryCodes()
    if (!(await hasVerifiedFactor(tx, user.id))) {
      throw new UnprocessableEntityError(
        'mfa_recovery_codes_sole_factor',
        'Recovery codes can only be used with another verified factor',
      )
    }
    const wait = await backoff.wait(tx, target, now)
    if (wait > 0) {
      throw new TooManyRequestsError(
        'mfa_recovery_codes_locked',
        `Too many wrong recovery codes, try again in ${String(Math.ceil(wait / 1000))} seconds`,
      )
    }
    const match =
      normalised === ''
        ? undefined
        : matchCode(await listUnusedRecoveryCodes(tx, set.id), normalised)
    if (!match || !(await useRecoveryCode(tx, match.id, now))) {
      // Committed before the answer, so that concurrent guesses are all counted.
      await backoff.failed(tx, target, now)
      return { refused: true as const }
    }
    await backoff.succeeded(tx, target)
    await ctx.audit.record(
      tx,
      {
        id: ctx.random.uuid(),
        actor: auditActor(user),
        action: 'verification_attempted',
        traits: { factor_id: set.id, factor_type: RECOVERY_CODE_FACTOR_TYPE },
        ip: client.ip,
      },
      now,
    )
    const pending = await ctx.tokens.raiseSession(
      tx,
      user,
      session,
      { factorId: set.id, method: 'mfa/recovery_code' },
      client,
      now,
    )
    await deleteSessionsBelowAal2(tx, user.id)
    return { pending }
  })
  if ('refused' in outcome) {
    await purgeExpiredAttempts(ctx)
    throw new UnprocessableEntityError('mfa_verification_failed', 'Invalid recovery code entered')
  }
  await sendNotification(
    ctx,
    'mfa_recovery_code_used_notification',
    outcome.pending.user,
    { factorType: RECOVERY_CODE_FACTOR_TYPE, acceptLanguage: client.acceptLanguage ?? '' },
    log,
  )
  return ctx.tokens.finish(outcome.pending)
}

async function mustFind(tx: Queryable, userId: string): Promise<RecoveryCodeSet> {
  const set = await findRecoveryCodeSet(tx, userId)
  if (!set) throw noRecoveryCodes()
  return set
}

async function recordAudit(
  ctx: AppContext,
  tx: Queryable,
  actor: AuditActor,
  ip: string,
  now: number,
): Promise<void> {
  await ctx.audit.record(
    tx,
    {
      id: ctx.random.uuid(),
      actor,
      action: 'factor_in_progress',
      traits: { factor_type: RECOVERY_CODE_FACTOR_TYPE },
      ip,
    },
    now,
  )
}
