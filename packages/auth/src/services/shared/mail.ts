/**
 * What every flow mail shares: the one-time code and its hash, the link's `MAILER_URLPATHS_*`
 * (the link itself is built by `mailer/links.ts`), the per-user send interval
 * (`SMTP_MAX_FREQUENCY`) and the server-wide budget (`RATE_LIMIT_EMAIL_SENT`), and the mapping
 * of a failed send to upstream's error.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/mail.go
 * @see https://github.com/supabase/auth/blob/master/internal/crypto/crypto.go
 * @module
 */
import { createHash } from 'node:crypto'
import type { Settings } from '../../conf/settings.js'
import type { AppContext } from '../../context.js'
import { InternalServerError, TooManyRequestsError } from '../../errors.js'
import { verificationLink, type LinkPath } from '../../mailer/links.js'
import type { MailMessage } from '../../mailer/mailer.js'
import { upsertOneTimeToken, type OneTimeTokenType } from '../../models/one-time-token.js'
import { updateUser, type User, type UserChanges } from '../../models/user.js'
import type { Queryable } from '../../storage/db.js'
import type { Random } from '../../random.js'
import { emailDataOf, type EmailData } from '../../hooks/email-data.js'
import { UNKNOWN_CALLER } from '../../hooks/hooks.js'
import { DeferJob } from './mail-queue.js'

/** The `type` of a `/verify` link (upstream's verification types of email flows). */
export type EmailVerificationType = 'signup' | 'invite' | 'recovery' | 'magiclink' | 'email_change'

/** A uniformly random numeric one-time code of `length` digits (upstream `GenerateOtp`). */
export function generateOtp(random: Random, length = 6): string {
  let out = ''
  for (let i = 0; i < length; i++) out += String(random.int(10))
  return out
}

/** `hex(sha224(emailOrPhone + otp))`: upstream's `token_hash`. */
export function tokenHash(emailOrPhone: string, otp: string): string {
  return createHash('sha224')
    .update(emailOrPhone + otp)
    .digest('hex')
}

/** The prefix of token hashes issued in a PKCE flow (upstream `addFlowPrefixToToken`). */
export const PKCE_TOKEN_PREFIX = 'pkce_'

/** A fresh one-time code for an address: the code, and the hash as stored and linked. */
export interface IssuedOtp {
  /** The digits the user may type (`{{ .Token }}`). */
  readonly otp: string
  /** `hex(sha224(sentTo + otp))`, prefixed with `pkce_` in a PKCE flow: stored and linked. */
  readonly hash: string
}

/**
 * Draws a one-time code of `MAILER_OTP_LENGTH` digits for `sentTo` (a lower-cased email or a
 * phone without `+`) and hashes it.
 *
 * @param pkce Whether the flow is PKCE (the hash gets the `pkce_` prefix).
 */
export function issueOtp(
  ctx: Pick<AppContext, 'random' | 'settings'>,
  sentTo: string,
  pkce: boolean,
): IssuedOtp {
  const otp = generateOtp(ctx.random, ctx.settings.mailer.otpLength)
  const hash = tokenHash(sentTo, otp)
  return { otp, hash: pkce ? PKCE_TOKEN_PREFIX + hash : hash }
}

/** The `MAILER_URLPATHS_*` of each link type (magic links use the recovery path, as upstream). */
const LINK_PATHS: Readonly<Record<EmailVerificationType, LinkPath>> = {
  signup: 'confirmation',
  invite: 'invite',
  recovery: 'recovery',
  magiclink: 'magicLink',
  email_change: 'emailChange',
}

/**
 * Milliseconds until a mail of a kind may go out again (`SMTP_MAX_FREQUENCY` after the previous
 * one), or 0 when it may go now.
 *
 * @param sentAt When the previous mail of the kind went out, or `null`.
 * @param now Epoch milliseconds.
 */
export function maxFrequencyWait(settings: Settings, sentAt: Date | null, now: number): number {
  return sentAt === null ? 0 : Math.max(0, sentAt.getTime() + settings.mailer.maxFrequencyMs - now)
}

/**
 * Refuses a mail sent less than `SMTP_MAX_FREQUENCY` after the previous one of its kind (upstream
 * `isOtpValid`'s sibling check in `sendConfirmation`, `sendPasswordRecovery`, …).
 *
 * @param sentAt When the previous mail of the kind went out, or `null`.
 * @param now Epoch milliseconds.
 * @throws {@link TooManyRequestsError} 429 `over_email_send_rate_limit` "For security purposes,
 *   you can only request this after N seconds." (N rounded up).
 */
export function enforceMaxFrequency(settings: Settings, sentAt: Date | null, now: number): void {
  const wait = maxFrequencyWait(settings, sentAt, now)
  if (wait > 0) {
    throw new TooManyRequestsError(
      'over_email_send_rate_limit',
      `For security purposes, you can only request this after ${String(Math.ceil(wait / 1000))} seconds.`,
    )
  }
}

/** Where a mail's token is recorded: the send-email hook gets the user and runs in `tx`. */
export interface MailOrigin {
  readonly tx: Queryable
  /** The user as updated with the token's columns. */
  readonly user: User
}

/**
 * Takes one mail from the `RATE_LIMIT_EMAIL_SENT` budget (unless `MAILER_AUTOCONFIRM`).
 *
 * @throws {@link TooManyRequestsError} 429 `over_email_send_rate_limit` when it is used up.
 */
export async function takeEmailBudget(
  ctx: Pick<AppContext, 'settings' | 'emailLimiter'>,
  now: number,
): Promise<void> {
  if (!ctx.settings.mailer.autoconfirm && !(await ctx.emailLimiter.take(now))) {
    throw new TooManyRequestsError('over_email_send_rate_limit', 'email rate limit exceeded')
  }
}

/**
 * Hands a mail to the send-email hook (`HOOK_SEND_EMAIL`) instead of the mailer, inside the
 * transaction that records its token (as upstream): `{ user, email_data }`.
 *
 * @param data The `email_data`; {@link emailDataOf} the message by default.
 * @throws `AuthError` The hook's failure, as is (upstream does not wrap it).
 */
export async function sendByHook(
  ctx: Pick<AppContext, 'settings' | 'hooks'>,
  origin: MailOrigin,
  message: MailMessage,
  data: EmailData = emailDataOf(message, ctx.settings.apiExternalUrl),
): Promise<void> {
  const user = await ctx.hooks.user(origin.tx, origin.user)
  await ctx.hooks.invoke('sendEmail', { user, email_data: data }, UNKNOWN_CALLER, origin.tx)
}

/**
 * Sends one flow mail: takes it from the `RATE_LIMIT_EMAIL_SENT` budget (unless
 * `MAILER_AUTOCONFIRM` is on, as upstream), then hands it to the send-email hook when
 * `HOOK_SEND_EMAIL` is on, else to the mailer. Callers send inside the transaction that records
 * the token, so that a failed send leaves nothing behind and the request can be retried.
 *
 * @param failure The public text of a failed send, upstream's (`Error sending confirmation email`).
 * @param now Epoch milliseconds.
 * @param origin The transaction and user, for the send-email hook.
 * @throws {@link TooManyRequestsError} 429 `over_email_send_rate_limit` "email rate limit
 *   exceeded"; {@link InternalServerError} 500 `unexpected_failure` with `failure` when the mailer
 *   throws (its error is the private `cause`); the hook's error.
 */
export async function deliver(
  ctx: Pick<AppContext, 'settings' | 'mailer' | 'emailLimiter' | 'hooks'>,
  message: MailMessage,
  failure: string,
  now: number,
  origin: MailOrigin,
): Promise<void> {
  await takeEmailBudget(ctx, now)
  if (ctx.hooks.enabled('sendEmail')) {
    await sendByHook(ctx, origin, message)
    return
  }
  try {
    await ctx.mailer.send(message)
  } catch (error) {
    throw new InternalServerError('unexpected_failure', failure, { cause: error })
  }
}

/** The `mail` job of the mail queue: a message to send. */
export interface MailJob {
  readonly message: MailMessage
}

/** How long a queued mail waits when `RATE_LIMIT_EMAIL_SENT` is used up, in milliseconds. */
export const EMAIL_CAP_RETRY_MS = 60_000

/**
 * Queues a flow mail inside `tx` (the transaction that records its token): it is sent after the
 * commit, off the request's path, by {@link sendQueuedMail}. With `HOOK_SEND_EMAIL` on, the hook
 * gets it at once instead, inside `tx` (as upstream), after taking it from the budget.
 *
 * @param user The user as updated with the token's columns (the hook's `user`).
 * @param now Epoch milliseconds of the transaction.
 * @throws 429 `over_email_send_rate_limit` and the hook's error, with the hook on.
 */
export async function queueMail(
  ctx: Pick<AppContext, 'mailQueue' | 'settings' | 'emailLimiter' | 'hooks'>,
  tx: Queryable,
  message: MailMessage,
  now: number,
  user: User,
): Promise<void> {
  if (ctx.hooks.enabled('sendEmail')) {
    await takeEmailBudget(ctx, now)
    await sendByHook(ctx, { tx, user }, message)
    return
  }
  const job: MailJob = { message }
  await ctx.mailQueue.enqueue(tx, 'mail', job, now)
}

/**
 * Runs a `mail` job: takes it from the `RATE_LIMIT_EMAIL_SENT` budget (unless
 * `MAILER_AUTOCONFIRM` is on, as upstream), then hands it to the mailer.
 *
 * @param now Epoch milliseconds.
 * @throws {@link DeferJob} When the budget is used up (the mail waits {@link EMAIL_CAP_RETRY_MS});
 *   the mailer's error when the send fails (the queue retries it).
 */
export async function sendQueuedMail(
  ctx: Pick<AppContext, 'settings' | 'mailer' | 'emailLimiter'>,
  job: MailJob,
  now: number,
): Promise<void> {
  if (!ctx.settings.mailer.autoconfirm && !(await ctx.emailLimiter.take(now))) {
    throw new DeferJob(EMAIL_CAP_RETRY_MS, 'RATE_LIMIT_EMAIL_SENT is used up')
  }
  await ctx.mailer.send(job.message)
}

/**
 * A flow mail whose token is recorded but not yet sent: what `/admin/generate_link` answers, and
 * what the flows then {@link deliver}.
 */
export interface PreparedMail {
  /** The user as updated with the token's columns. */
  readonly user: User
  readonly message: MailMessage
  /** The one-time code (`email_otp`). */
  readonly otp: string
  /** The token hash as stored and linked (`hashed_token`; `pkce_`-prefixed in a PKCE flow). */
  readonly hash: string
  /** The link's `type` (`verification_type`). */
  readonly type: EmailVerificationType
  /** The `/verify` link (`action_link`). */
  readonly link: string
  /** Where the user lands (`redirect_to`). */
  readonly redirectTo: string
}

/** A token to record: its `one_time_tokens` type, hash and address. */
export interface TokenRecord {
  readonly tokenType: OneTimeTokenType
  readonly hash: string
  /** The lower-cased email or the phone the token is sent to. */
  readonly relatesTo: string
}

/**
 * Records tokens as upstream does, inside `tx`: the user's columns (`changes`, such as
 * `confirmation_token` and `confirmation_sent_at`) and one `one_time_tokens` row per token (each
 * replacing the user's previous token of its type).
 *
 * @param now Epoch milliseconds of the transaction.
 * @returns The updated user.
 */
export async function recordTokens(
  ctx: Pick<AppContext, 'random'>,
  tx: Queryable,
  userId: string,
  changes: UserChanges,
  tokens: readonly TokenRecord[],
  now: number,
): Promise<User> {
  const updated = await updateUser(tx, userId, changes, now)
  for (const token of tokens) {
    await upsertOneTimeToken(
      tx,
      {
        id: ctx.random.uuid(),
        userId,
        tokenType: token.tokenType,
        tokenHash: token.hash,
        relatesTo: token.relatesTo,
      },
      now,
    )
  }
  return updated
}

/**
 * Builds the mail of a recorded token: its link (`API_EXTERNAL_URL` resolved with the type's
 * `MAILER_URLPATHS_*`, see `verificationLink`) and the message for the mailer.
 *
 * @param redirectTo The validated redirect target (`''`: none in the link).
 * @param user The user as updated (`{{ .Email }}` and `{{ .Data }}` come from it).
 * @param extra Further message fields, such as `newEmail`.
 */
export function flowMail(
  settings: Settings,
  user: User,
  kind: Exclude<MailMessage['kind'], 'reauthentication'>,
  type: EmailVerificationType,
  issued: IssuedOtp,
  to: string,
  redirectTo: string,
  extra: Partial<MailMessage> = {},
): PreparedMail {
  const link = verificationLink(settings, LINK_PATHS[type], {
    token: issued.hash,
    type,
    redirectTo,
  })
  return {
    user,
    otp: issued.otp,
    hash: issued.hash,
    type,
    link,
    redirectTo,
    message: {
      kind,
      to,
      confirmationUrl: link,
      token: issued.otp,
      tokenHash: issued.hash,
      redirectTo,
      data: user.userMetadata,
      email: user.email,
      ...extra,
    },
  }
}
