/**
 * Password recovery and magic links: both record their token in `users.recovery_token` (so a
 * magic link shares recovery's `SMTP_MAX_FREQUENCY` clock, `recovery_sent_at`) and
 * `one_time_tokens`, and sign the user in at `/verify`. `POST /recover` lives here.
 *
 * `POST /recover` answers the same for every address, at once: the request only queues a
 * `recover` job (see `services/shared/mail-queue.ts`), and the worker looks the address up, applies
 * `SMTP_MAX_FREQUENCY` silently, records the token and queues the mail. Stricter than upstream,
 * whose answer and timing differ for known addresses (429 when too soon, the SMTP round trip).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/recover.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/mail.go
 * @module
 */
import type { AppContext, RequestContext } from '../context.js'
import { BadRequestError } from '../errors.js'
import { auditActor } from '../models/audit-log.js'
import { findUserByEmail, getUserById, type User } from '../models/user.js'
import type { Queryable } from '../storage/db.js'
import {
  flowMail,
  issueOtp,
  maxFrequencyWait,
  queueMail,
  recordTokens,
  type PreparedMail,
} from './shared/mail.js'
import { parsePkceChallenge, startFlowState, type PkceChallenge } from './shared/pkce.js'
import { validateEmail } from './shared/validation.js'

/**
 * Records a new recovery or magic-link token for a user inside `tx` and builds its mail, without
 * sending it. In a PKCE flow the hash gets the `pkce_` prefix and a flow state (`recovery` or
 * `magiclink`) is started.
 *
 * @param now Epoch milliseconds of the transaction.
 */
export async function prepareRecovery(
  ctx: AppContext,
  tx: Queryable,
  user: User,
  kind: 'recovery' | 'magic_link',
  redirectTo: string,
  now: number,
  pkce?: PkceChallenge,
): Promise<PreparedMail> {
  const issued = issueOtp(ctx, user.email, pkce !== undefined)
  const type = kind === 'recovery' ? 'recovery' : 'magiclink'
  if (pkce) await startFlowState(ctx, tx, user.id, pkce, type, now)
  const updated = await recordTokens(
    ctx,
    tx,
    user.id,
    { recoveryToken: issued.hash, recoverySentAt: new Date(now) },
    [{ tokenType: 'recovery_token', hash: issued.hash, relatesTo: user.email }],
    now,
  )
  return flowMail(ctx.settings, updated, kind, type, issued, user.email, redirectTo)
}

/**
 * Queues a recovery or magic-link mail inside `tx` (see `queueMail`), at most once per
 * `SMTP_MAX_FREQUENCY` (both kinds share `recovery_sent_at`): a request within it is dropped
 * silently, so that the caller's answer does not tell it. Records `user_recovery_requested` (as
 * upstream, for both).
 *
 * @param user The user, locked in `tx`.
 * @param now Epoch milliseconds of the transaction.
 * @returns Whether a mail was queued.
 */
export async function queueRecoveryMail(
  ctx: AppContext,
  tx: Queryable,
  user: User,
  kind: 'recovery' | 'magic_link',
  redirectTo: string,
  client: RequestContext,
  now: number,
  pkce?: PkceChallenge,
): Promise<boolean> {
  if (maxFrequencyWait(ctx.settings, user.recoverySentAt, now) > 0) return false
  const prepared = await prepareRecovery(ctx, tx, user, kind, redirectTo, now, pkce)
  await ctx.audit.record(
    tx,
    {
      id: ctx.random.uuid(),
      actor: auditActor(user),
      action: 'user_recovery_requested',
      ip: client.ip,
    },
    now,
  )
  await queueMail(
    ctx,
    tx,
    { ...prepared.message, acceptLanguage: client.acceptLanguage ?? '' },
    now,
    prepared.user,
  )
  return true
}

/** A `POST /recover` request; absent fields are `''`. */
export interface RecoverParams {
  readonly email: string
  readonly codeChallenge: string
  readonly codeChallengeMethod: string
  /** Where the user lands: the request's validated `redirect_to`, else `SITE_URL`. */
  readonly redirectTo: string
}

/** What every queued email request holds: the checked address, redirect, PKCE and client. */
export interface QueuedEmailRequest {
  /** The validated, lower-cased address. */
  readonly email: string
  readonly redirectTo: string
  readonly pkce: PkceChallenge | null
  readonly client: RequestContext
}

/** The {@link QueuedEmailRequest} of a checked request (plain JSON, for the queue). */
export function queuedEmailRequest(
  email: string,
  redirectTo: string,
  pkce: PkceChallenge | undefined,
  client: RequestContext,
): QueuedEmailRequest {
  return {
    email,
    redirectTo,
    pkce: pkce ?? null,
    client: {
      aud: client.aud,
      ip: client.ip,
      userAgent: client.userAgent,
      acceptLanguage: client.acceptLanguage ?? '',
    },
  }
}

/** The `recover` job of the mail queue: a checked `POST /recover` request. */
export type RecoverJob = QueuedEmailRequest

/**
 * `POST /recover`: checks the request and queues it (see the module comment); the recovery link
 * and code go to a known address. Every address gets the same answer.
 *
 * @throws {@link BadRequestError} 400 `validation_failed` "Password recovery requires an email"
 *   and the email and PKCE texts; the database's error when the job cannot be stored.
 */
export async function recoverPassword(
  ctx: AppContext,
  params: RecoverParams,
  client: RequestContext,
): Promise<void> {
  if (params.email === '') {
    throw new BadRequestError('validation_failed', 'Password recovery requires an email')
  }
  const email = validateEmail(params.email)
  const pkce = parsePkceChallenge(params.codeChallenge, params.codeChallengeMethod)
  const job: RecoverJob = queuedEmailRequest(email, params.redirectTo, pkce, client)
  await ctx.mailQueue.submit(ctx.db, 'recover', job)
}

/**
 * Runs a `recover` job inside `tx`: a known address of the request's audience gets a recovery
 * mail queued (see {@link queueRecoveryMail}); anything else, nothing.
 *
 * @param now Epoch milliseconds of the transaction.
 */
export async function runRecoverJob(
  ctx: AppContext,
  tx: Queryable,
  job: RecoverJob,
  now: number,
): Promise<void> {
  const found = await findUserByEmail(tx, job.email, job.client.aud)
  if (!found) return
  const locked = await getUserById(tx, found.id, true)
  await queueRecoveryMail(
    ctx,
    tx,
    locked,
    'recovery',
    job.redirectTo,
    job.client,
    now,
    job.pkce ?? undefined,
  )
}
