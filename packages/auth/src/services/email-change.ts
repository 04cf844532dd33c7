/**
 * Email changes (`PUT /user` with `email`, `POST /resend` of type `email_change`): a link and code
 * to the new address, and with `MAILER_SECURE_EMAIL_CHANGE_ENABLED` a second to the current one;
 * the change happens at `/verify` once every link sent was followed.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/mail.go
 * @module
 */
import type { AppContext } from '../context.js'
import type { OneTimeTokenType } from '../models/one-time-token.js'
import { mergeMetadata, type User, type UserChanges } from '../models/user.js'
import type { Queryable } from '../storage/db.js'
import { emailDataOf } from '../hooks/email-data.js'
import {
  deliver,
  enforceMaxFrequency,
  flowMail,
  issueOtp,
  recordTokens,
  sendByHook,
  takeEmailBudget,
  type IssuedOtp,
  type PreparedMail,
} from './shared/mail.js'
import { setOwnIdentity } from './shared/own-identity.js'
import { startFlowState, type PkceChallenge } from './shared/pkce.js'

/** Which addresses get an email-change link: both (secure change) or one of them. */
export type EmailChangeRecipients = 'both' | 'new' | 'current'

/**
 * Records a pending email change inside `tx` (`email_change`, a token for each recipient, confirm
 * status 0) and builds its mails, without sending them: the new address's first.
 *
 * @param newEmail The validated, lower-cased new address.
 * @param now Epoch milliseconds of the transaction.
 */
export async function prepareEmailChange(
  ctx: AppContext,
  tx: Queryable,
  user: User,
  newEmail: string,
  recipients: EmailChangeRecipients,
  redirectTo: string,
  now: number,
  pkce?: PkceChallenge,
): Promise<PreparedMail[]> {
  const pkceFlow = pkce !== undefined
  if (pkce) await startFlowState(ctx, tx, user.id, pkce, 'email_change', now)
  const toNew = recipients !== 'current' ? issueOtp(ctx, newEmail, pkceFlow) : undefined
  const toCurrent = recipients !== 'new' ? issueOtp(ctx, user.email, pkceFlow) : undefined
  const sent: { issued: IssuedOtp; to: string; tokenType: OneTimeTokenType }[] = []
  if (toNew) sent.push({ issued: toNew, to: newEmail, tokenType: 'email_change_token_new' })
  if (toCurrent) {
    sent.push({ issued: toCurrent, to: user.email, tokenType: 'email_change_token_current' })
  }
  const updated = await recordTokens(
    ctx,
    tx,
    user.id,
    {
      emailChange: newEmail,
      emailChangeTokenNew: toNew?.hash ?? '',
      emailChangeTokenCurrent: toCurrent?.hash ?? '',
      emailChangeConfirmStatus: 0,
      emailChangeSentAt: new Date(now),
    },
    sent.map(({ issued, to, tokenType }) => ({ tokenType, hash: issued.hash, relatesTo: to })),
    now,
  )
  const mails = sent.map(({ issued, to }) =>
    flowMail(ctx.settings, updated, 'email_change', 'email_change', issued, to, redirectTo, {
      newEmail,
    }),
  )
  return mails
}

/**
 * Sends the mails of an email change inside `tx`, at most once per `SMTP_MAX_FREQUENCY`
 * (`email_change_sent_at`): to the new address, and with secure email change on (and a current
 * address) to the current one too. A failed send throws, rolling the change back.
 *
 * @param newEmail The validated, lower-cased new address.
 * @param now Epoch milliseconds of the transaction.
 * @param acceptLanguage The request's `Accept-Language`, which picks the mails' language after
 *   `user_metadata.locale`.
 * @returns The updated user.
 * @throws 429 `over_email_send_rate_limit`; 500 "Error sending email change email".
 */
export async function sendEmailChange(
  ctx: AppContext,
  tx: Queryable,
  user: User,
  newEmail: string,
  redirectTo: string,
  now: number,
  acceptLanguage: string,
  pkce?: PkceChallenge,
): Promise<User> {
  enforceMaxFrequency(ctx.settings, user.emailChangeSentAt, now)
  const secure = ctx.settings.mailer.secureEmailChangeEnabled && user.email !== ''
  const mails = await prepareEmailChange(
    ctx,
    tx,
    user,
    newEmail,
    secure ? 'both' : 'new',
    redirectTo,
    now,
    pkce,
  )
  const updated = mails[0]?.user ?? user
  if (ctx.hooks.enabled('sendEmail')) {
    await sendEmailChangeByHook(ctx, tx, updated, mails, now)
    return updated
  }
  for (const mail of mails) {
    const message = { ...mail.message, acceptLanguage }
    await deliver(ctx, message, 'Error sending email change email', now, { tx, user: mail.user })
  }
  return updated
}

/**
 * Completes a pending email change inside `tx` (upstream `emailChangeVerify` once every link was
 * followed): `email_change` becomes the email (confirmed), the tokens are cleared, the `email`
 * identity follows (or is created), and an anonymous user becomes permanent. Adds the column
 * changes to `update`, for the caller to write; the caller checks that the address is free.
 *
 * @param user The locked user, with `emailChange` set.
 * @param now Epoch milliseconds of the transaction.
 */
export async function applyEmailChange(
  ctx: AppContext,
  tx: Queryable,
  user: User,
  update: UserChanges,
  now: number,
): Promise<void> {
  Object.assign(update, {
    email: user.emailChange,
    emailChange: '',
    emailChangeTokenNew: '',
    emailChangeTokenCurrent: '',
    emailChangeConfirmStatus: 0,
  } satisfies UserChanges)
  if (user.userMetadata.email !== undefined) {
    update.userMetadata = mergeMetadata(user.userMetadata, { email: user.emailChange })
  }
  await setOwnIdentity(ctx, tx, user, 'email', user.emailChange, update, now)
  if (user.emailConfirmedAt === null) update.emailConfirmedAt = new Date(now)
  if (user.isAnonymous) update.isAnonymous = false
}

/**
 * An email change's one call of the send-email hook (upstream sends one, not one per address):
 * with a secure change, `token` is the current address's code and `token_new` the new one's,
 * and the two hashes are crossed as upstream crosses them (`token_hash` is the new address's,
 * `token_hash_new` the current one's); otherwise `token` and `token_hash` are the new address's.
 *
 * @param mails From {@link prepareEmailChange}: the new address's first.
 */
async function sendEmailChangeByHook(
  ctx: AppContext,
  tx: Queryable,
  user: User,
  mails: readonly PreparedMail[],
  now: number,
): Promise<void> {
  const [toNew, toCurrent] = mails
  if (!toNew) return
  const data = emailDataOf(toNew.message, ctx.settings.apiExternalUrl)
  if (toCurrent) {
    data.token = toCurrent.otp
    data.token_new = toNew.otp
    data.token_hash_new = toCurrent.hash
  }
  await takeEmailBudget(ctx, now)
  await sendByHook(ctx, { tx, user }, toNew.message, data)
}
