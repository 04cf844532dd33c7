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
import { auditActor } from '../models/audit-log.js'
import { deleteOneTimeTokens } from '../models/one-time-token.js'
import { getUserById, updateUser } from '../models/user.js'
import { countWrongAnswer, purgeExpiredAttempts } from './shared/attempts.js'
import { deliver, enforceMaxFrequency, issueOtp, recordTokens, tokenHash } from './shared/mail.js'
import { sendPhoneOtp } from './shared/phone.js'
import { testOtpFor } from './shared/sms.js'

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
      ctx.audit.record(
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
      const sent = await sendPhoneOtp(
        ctx,
        tx,
        user,
        user.phone,
        'reauthentication',
        'sms',
        now,
        client.acceptLanguage,
      )
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
        acceptLanguage: client.acceptLanguage ?? '',
      },
      'Error sending reauthentication email',
      now,
      { tx, user },
    )
    return ''
  })
}

/**
 * Checks and consumes a reauthentication nonce in a transaction of its own (upstream
 * `verifyReauthentication`, which `PUT /user` calls before changing anything):
 * `hex(sha224(email + nonce))` must equal `reauthentication_token`, sent less than
 * `MAILER_OTP_EXP` ago; for a user without an email, `hex(sha224(phone + nonce))` sent less than
 * `SMS_OTP_EXP` ago, or, with Twilio Verify, the code approved by Twilio. The token is cleared,
 * so a nonce works once, even when the change that needed it then fails. A wrong nonce is
 * counted (committed before the answer, the user's row locked), and the
 * `SECURITY_OTP_MAX_ATTEMPTS`-th invalidates the nonce (beyond upstream); a new one can be
 * requested once `SMTP_MAX_FREQUENCY` (`SMS_MAX_FREQUENCY`) has passed since it was sent.
 *
 * @throws {@link UnprocessableEntityError} 422 `reauthentication_not_valid` "Nonce has expired or
 *   is invalid".
 */
export async function consumeReauthenticationNonce(
  ctx: AppContext,
  userId: string,
  nonce: string,
): Promise<void> {
  const valid = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const user = await getUserById(tx, userId, true)
    const sentAt = user.reauthenticationSentAt
    if (user.reauthenticationToken === '' || sentAt === null) return false
    const byPhone = user.email === ''
    const expiresAt =
      sentAt.getTime() + (byPhone ? ctx.settings.sms.otpExpMs : ctx.settings.mailer.otpExpMs)
    // With Twilio Verify, Twilio drew the nonce, checks it and decides when it expires.
    const check =
      byPhone && testOtpFor(ctx.settings, user.phone, now) === undefined
        ? ctx.sms.checkOtp
        : undefined
    if (!check && now > expiresAt) return false
    const approved = check
      ? await check(user.phone, nonce).catch(() => false)
      : tokenHash(byPhone ? user.phone : user.email, nonce) === user.reauthenticationToken
    if (approved) {
      await updateUser(
        tx,
        user.id,
        { reauthenticationToken: '', reauthenticationSentAt: null },
        now,
      )
      await deleteOneTimeTokens(tx, user.id, ['reauthentication_token'])
      return true
    }
    const target = `reauthentication:${user.id}:${String(sentAt.getTime())}`
    if (await countWrongAnswer(ctx, tx, target, expiresAt, now)) {
      // The sent-at column stays: a new nonce still waits for the send interval.
      await updateUser(tx, user.id, { reauthenticationToken: '' }, now)
      await deleteOneTimeTokens(tx, user.id, ['reauthentication_token'])
    }
    return false
  })
  if (!valid) {
    await purgeExpiredAttempts(ctx)
    throw new UnprocessableEntityError(
      'reauthentication_not_valid',
      'Nonce has expired or is invalid',
    )
  }
}
