/**
 * Confirmation messages: the one-time code and link of a sign-up or invite, sent by email or SMS
 * and recorded as a token hash in `users.confirmation_token` and `one_time_tokens`.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/mail.go
 * @module
 */
import type { AppContext } from '../../context.js'
import type { User } from '../../models/user.js'
import type { Queryable } from '../../storage/db.js'
import {
  deliver,
  enforceMaxFrequency,
  flowMail,
  issueOtp,
  recordTokens,
  type PreparedMail,
} from './mail.js'
import { startFlowState, type PkceChallenge } from './pkce.js'
import { sendPhoneOtp } from './phone.js'

/**
 * Records a new confirmation (or invite) token for an email user inside `tx` and builds its mail,
 * without sending it (what `/admin/generate_link` answers). In a PKCE flow the hash gets the
 * `pkce_` prefix and a flow state (`email/signup`) is started.
 *
 * @param redirectTo Validated redirect target.
 * @param now Epoch milliseconds of the transaction.
 */
export async function prepareConfirmation(
  ctx: AppContext,
  tx: Queryable,
  user: User,
  kind: 'confirmation' | 'invite',
  redirectTo: string,
  now: number,
  pkce?: PkceChallenge,
): Promise<PreparedMail> {
  const issued = issueOtp(ctx, user.email, pkce !== undefined)
  if (pkce) await startFlowState(ctx, tx, user.id, pkce, 'email/signup', now)
  const updated = await recordTokens(
    ctx,
    tx,
    user.id,
    { confirmationToken: issued.hash, confirmationSentAt: new Date(now) },
    [{ tokenType: 'confirmation_token', hash: issued.hash, relatesTo: user.email }],
    now,
  )
  const type = kind === 'invite' ? 'invite' : 'signup'
  return flowMail(ctx.settings, updated, kind, type, issued, user.email, redirectTo)
}

/**
 * Sends a sign-up confirmation (email link and code, or SMS code) or an invite, recording the
 * token hash in `users.confirmation_token` and `one_time_tokens` inside `tx`. A confirmation mail
 * sent less than `SMTP_MAX_FREQUENCY` ago (an SMS code, `SMS_MAX_FREQUENCY`) is not sent again.
 * A failed send throws, so that the transaction (and with it the token) is rolled back and the
 * request can be retried.
 *
 * @param kind `confirmation` or `invite` for email; phone users get an SMS.
 * @param redirectTo Validated redirect target.
 * @param now Epoch milliseconds of the transaction.
 * @param acceptLanguage The request's `Accept-Language`, which picks the language of the mail or
 *   SMS after `user_metadata.locale` (`''`: none).
 * @param pkce The request's PKCE challenge, if any.
 * @returns The updated user.
 * @throws 422 `sms_send_failed` when the SMS provider refuses; 429 `over_sms_send_rate_limit`
 *   (too soon, or over `RATE_LIMIT_SMS_SENT`); 429 `over_email_send_rate_limit` (too soon, or
 *   over `RATE_LIMIT_EMAIL_SENT`); 500
 *   "Error sending confirmation email" / "Error sending invite email" when the mailer fails.
 */
export async function sendConfirmation(
  ctx: AppContext,
  tx: Queryable,
  user: User,
  kind: 'confirmation' | 'invite',
  redirectTo: string,
  now: number,
  acceptLanguage: string,
  pkce?: PkceChallenge,
): Promise<User> {
  if (user.email === '' && user.phone !== '') {
    const sent = await sendPhoneOtp(
      ctx,
      tx,
      user,
      user.phone,
      'confirmation',
      'sms',
      now,
      acceptLanguage,
    )
    return sent.user
  }
  if (kind === 'confirmation') enforceMaxFrequency(ctx.settings, user.confirmationSentAt, now)
  const prepared = await prepareConfirmation(ctx, tx, user, kind, redirectTo, now, pkce)
  await deliver(
    ctx,
    { ...prepared.message, acceptLanguage },
    kind === 'invite' ? 'Error sending invite email' : 'Error sending confirmation email',
    now,
    { tx, user: prepared.user },
  )
  return prepared.user
}
