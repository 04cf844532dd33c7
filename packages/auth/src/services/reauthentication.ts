/**
 * Reauthentication (`GET /reauthenticate`): a nonce mailed to a signed-in user, which
 * `PUT /user` then requires for a password change under
 * `SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION`.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/reauthenticate.go
 * @module
 */
import type { AppContext, RequestContext } from '../context.js'
import { BadRequestError, UnprocessableEntityError } from '../errors.js'
import { addAuditLogEntry, auditActor } from '../models/audit-log.js'
import { deleteOneTimeTokens } from '../models/one-time-token.js'
import { getUserById, updateUser, type User } from '../models/user.js'
import type { Queryable } from '../storage/db.js'
import { deliver, enforceMaxFrequency, issueOtp, recordTokens, tokenHash } from './mail.js'
import { sendPhoneOtp } from './phone.js'
import { testOtpFor } from './sms.js'

/**
 * Sends a reauthentication nonce, recording its hash in `reauthentication_token` and
 * `one_time_tokens`: mailed (`{{ .Token }}`) to the user's email at most once per
 * `SMTP_MAX_FREQUENCY`, or, for a user without an email, sent by SMS to the phone at most once
 * per `SMS_MAX_FREQUENCY` (as upstream).
 *
 * @returns The SMS provider's message id of a nonce sent by SMS, else `''`.
 * @throws {@link BadRequestError} 400 `validation_failed` "Reauthentication requires the user to
 *   have an email or a phone number"; {@link UnprocessableEntityError} 422 `email_not_confirmed`
 *   "Please verify your email first.", `phone_not_confirmed` "Please verify your phone first.";
 *   429 `over_email_send_rate_limit`, `over_sms_send_rate_limit`; 422 `sms_send_failed`; 500
 *   "Error sending reauthentication email".
 */
export async function reauthenticate(
  ctx: AppContext,
  userId: string,
  client: RequestContext,
): Promise<string> {
  return ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const user = await getUserById(tx, userId, true)
    if (user.email === '' && user.phone === '') {
      throw new BadRequestError(
        'validation_failed',
        'Reauthentication requires the user to have an email or a phone number',
      )
    }
    const audit = (): Promise<void> =>
      addAuditLogEntry(
        tx,
        {
          id: ctx.random.uuid(),
          actor: auditActor(user),
          action: 'user_reauthenticate_requested',
          ip: client.ip,
        },
        now,
      )
    if (user.email === '') {
      if (user.phoneConfirmedAt === null) {
        throw new UnprocessableEntityError('phone_not_confirmed', 'Please verify your phone first.')
      }
      await audit()
      const sent = await sendPhoneOtp(ctx, tx, user, user.phone, 'reauthentication', 'sms', now)
      return sent.messageId
    }
    if (user.emailConfirmedAt === null) {
      throw new UnprocessableEntityError('email_not_confirmed', 'Please verify your email first.')
    }
    enforceMaxFrequency(ctx.settings, user.reauthenticationSentAt, now)
    const { otp, hash } = issueOtp(ctx, user.email, false)
    await recordTokens(
      ctx,
      tx,
      user.id,
      { reauthenticationToken: hash, reauthenticationSentAt: new Date(now) },
      [{ tokenType: 'reauthentication_token', hash, relatesTo: user.email }],
      now,
    )
    await audit()
    await deliver(
      ctx,
      {
        kind: 'reauthentication',
        to: user.email,
        confirmationUrl: '',
        token: otp,
        tokenHash: hash,
        redirectTo: '',
        data: user.userMetadata,
        email: user.email,
      },
      'Error sending reauthentication email',
      now,
    )
    return ''
  })
}

/**
 * Checks and consumes a reauthentication nonce inside `tx` (upstream `verifyReauthentication`):
 * `hex(sha224(email + nonce))` must equal `reauthentication_token`, sent less than
 * `MAILER_OTP_EXP` ago; for a user without an email, `hex(sha224(phone + nonce))` sent less than
 * `SMS_OTP_EXP` ago, or, with Twilio Verify, the code approved by Twilio. The token is cleared,
 * so a nonce works once.
 *
 * @param user The user, locked in `tx`.
 * @param now Epoch milliseconds.
 * @throws {@link UnprocessableEntityError} 422 `reauthentication_not_valid` "Nonce has expired or
 *   is invalid".
 */
export async function consumeReauthenticationNonce(
  ctx: Pick<AppContext, 'settings' | 'sms'>,
  tx: Queryable,
  user: User,
  nonce: string,
  now: number,
): Promise<void> {
  const sentAt = user.reauthenticationSentAt
  const byPhone = user.email === ''
  const lifetime = byPhone ? ctx.settings.sms.otpExp : ctx.settings.mailer.otpExp
  const pending = user.reauthenticationToken !== '' && sentAt !== null
  const valid =
    pending &&
    (byPhone && ctx.sms.checkOtp && testOtpFor(ctx.settings, user.phone, now) === undefined
      ? await ctx.sms.checkOtp(user.phone, nonce).catch(() => false)
      : now <= sentAt.getTime() + lifetime * 1000 &&
        tokenHash(byPhone ? user.phone : user.email, nonce) === user.reauthenticationToken)
  if (!valid) {
    throw new UnprocessableEntityError(
      'reauthentication_not_valid',
      'Nonce has expired or is invalid',
    )
  }
  await updateUser(tx, user.id, { reauthenticationToken: '', reauthenticationSentAt: null }, now)
  await deleteOneTimeTokens(tx, user.id, ['reauthentication_token'])
}
