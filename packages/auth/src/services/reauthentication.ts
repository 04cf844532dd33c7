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

/**
 * Mails a reauthentication nonce (`{{ .Token }}`) to the user's email, at most once per
 * `SMTP_MAX_FREQUENCY`, recording its hash in `reauthentication_token` and `one_time_tokens`.
 *
 * @throws {@link BadRequestError} 400 `validation_failed` for a user without an email (phone
 *   reauthentication comes with the SMS issue); {@link UnprocessableEntityError} 422
 *   `email_not_confirmed` "Please verify your email first."; 429 `over_email_send_rate_limit`;
 *   500 "Error sending reauthentication email".
 */
export async function reauthenticate(
  ctx: AppContext,
  userId: string,
  client: RequestContext,
): Promise<void> {
  await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const user = await getUserById(tx, userId, true)
    if (user.email === '') {
      throw new BadRequestError(
        'validation_failed',
        'Reauthentication requires the user to have an email address',
      )
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
    await addAuditLogEntry(
      tx,
      {
        id: ctx.random.uuid(),
        actor: auditActor(user),
        action: 'user_reauthenticate_requested',
        ip: client.ip,
      },
      now,
    )
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
  })
}

/**
 * Checks and consumes a reauthentication nonce inside `tx` (upstream `verifyReauthentication`):
 * `hex(sha224(email + nonce))` must equal `reauthentication_token`, sent less than
 * `MAILER_OTP_EXP` ago. The token is cleared, so a nonce works once.
 *
 * @param user The user, locked in `tx`.
 * @param now Epoch milliseconds.
 * @throws {@link UnprocessableEntityError} 422 `reauthentication_not_valid` "Nonce has expired or
 *   is invalid".
 */
export async function consumeReauthenticationNonce(
  ctx: Pick<AppContext, 'settings'>,
  tx: Queryable,
  user: User,
  nonce: string,
  now: number,
): Promise<void> {
  const sentAt = user.reauthenticationSentAt
  const valid =
    user.reauthenticationToken !== '' &&
    sentAt !== null &&
    now <= sentAt.getTime() + ctx.settings.mailer.otpExp * 1000 &&
    tokenHash(user.email !== '' ? user.email : user.phone, nonce) === user.reauthenticationToken
  if (!valid) {
    throw new UnprocessableEntityError(
      'reauthentication_not_valid',
      'Nonce has expired or is invalid',
    )
  }
  await updateUser(tx, user.id, { reauthenticationToken: '', reauthenticationSentAt: null }, now)
  await deleteOneTimeTokens(tx, user.id, ['reauthentication_token'])
}
