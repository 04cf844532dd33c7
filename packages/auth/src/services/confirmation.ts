/**
 * Confirmation messages: the one-time code and link of a sign-up or invite, sent by email or SMS
 * and recorded as a token hash.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/mail.go
 * @see https://github.com/supabase/auth/blob/master/internal/crypto/crypto.go
 * @module
 */
import { createHash } from 'node:crypto'
import type { AppContext } from '../context.js'
import { InternalServerError, UnprocessableEntityError } from '../errors.js'
import type { MailKind } from '../mailer/mailer.js'
import { upsertOneTimeToken } from '../models/one-time-token.js'
import { updateUser, type User } from '../models/user.js'
import type { Random } from '../random.js'
import type { Queryable } from '../storage/db.js'

/** A uniformly random numeric one-time code of `length` digits. */
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

/**
 * Sends a sign-up confirmation (email link and code, or SMS code) or an invite, recording the
 * token hash in `users.confirmation_token` and `one_time_tokens` inside `tx`.
 *
 * @param kind `confirmation` or `invite` for email; phone users get an SMS.
 * @param redirectTo Validated redirect target.
 * @param now Epoch milliseconds of the transaction.
 * @returns The updated user.
 * @throws {@link UnprocessableEntityError} `sms_send_failed` when the SMS provider refuses;
 *   {@link InternalServerError} when the mailer fails.
 */
export async function sendConfirmation(
  ctx: AppContext,
  tx: Queryable,
  user: User,
  kind: Extract<MailKind, 'confirmation' | 'invite'>,
  redirectTo: string,
  now: number,
): Promise<User> {
  const otp = generateOtp(ctx.random)
  const viaPhone = user.email === '' && user.phone !== ''
  const sentTo = viaPhone ? user.phone : user.email
  const hash = tokenHash(sentTo, otp)
  const updated = await updateUser(
    tx,
    user.id,
    { confirmationToken: hash, confirmationSentAt: new Date(now) },
    now,
  )
  await upsertOneTimeToken(
    tx,
    {
      id: ctx.random.uuid(),
      userId: user.id,
      tokenType: 'confirmation_token',
      tokenHash: hash,
      relatesTo: sentTo,
    },
    now,
  )
  if (viaPhone) {
    try {
      await ctx.sms.sendMessage(user.phone, `Your code is ${otp}`, 'sms', otp)
    } catch (error) {
      throw new UnprocessableEntityError(
        'sms_send_failed',
        `Error sending confirmation OTP to provider: ${error instanceof Error ? error.message : 'failed'}`,
        { cause: error },
      )
    }
    return updated
  }
  const link = new URL('verify', ctx.settings.apiExternalUrl.replace(/\/?$/, '/'))
  link.searchParams.set('token', hash)
  link.searchParams.set('type', kind === 'invite' ? 'invite' : 'signup')
  link.searchParams.set('redirect_to', redirectTo)
  try {
    await ctx.mailer.send({
      kind,
      to: user.email,
      confirmationUrl: link.toString(),
      token: otp,
      tokenHash: hash,
      redirectTo,
      data: user.userMetadata,
    })
  } catch (error) {
    throw new InternalServerError('unexpected_failure', 'Error sending confirmation email', {
      cause: error,
    })
  }
  return updated
}
