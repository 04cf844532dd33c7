import { createHash, randomInt, randomUUID } from 'node:crypto'
import type { AppContext } from './context.js'
import type { MailKind } from '../mailer/mailer.js'
import { updateUser, type User } from '../models/user.js'
import type { Queryable } from '../storage/db.js'
import { InternalServerError, UnprocessableEntityError } from '../errors.js'

/** A uniformly random numeric one-time code of `length` digits. */
export function generateOtp(length = 6): string {
  let out = ''
  for (let i = 0; i < length; i++) out += String(randomInt(10))
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
 * @returns The updated user.
 * @throws {@link AuthError} 422 `sms_send_failed` when the SMS provider refuses; 500 when the
 *   mailer fails.
 */
export async function sendConfirmation(
  ctx: AppContext,
  tx: Queryable,
  user: User,
  kind: Extract<MailKind, 'confirmation' | 'invite'>,
  redirectTo: string,
): Promise<User> {
  const now = ctx.clock.now()
  const otp = generateOtp()
  const viaPhone = user.email === '' && user.phone !== ''
  const hash = tokenHash(viaPhone ? user.phone : user.email, otp)
  const updated = await updateUser(
    tx,
    user.id,
    { confirmationToken: hash, confirmationSentAt: new Date(now) },
    now,
  )
  await tx.query(
    `INSERT INTO ${tx.t.oneTimeTokens} (id, user_id, token_type, token_hash, relates_to, created_at, updated_at)
     VALUES ($1, $2, 'confirmation_token', $3, $4, $5::timestamptz AT TIME ZONE 'UTC', $5::timestamptz AT TIME ZONE 'UTC')
     ON CONFLICT (user_id, token_type) DO UPDATE
       SET token_hash = EXCLUDED.token_hash, relates_to = EXCLUDED.relates_to, updated_at = EXCLUDED.updated_at`,
    [randomUUID(), user.id, hash, viaPhone ? user.phone : user.email, new Date(now)],
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
