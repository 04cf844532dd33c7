/**
 * `POST /resend`: sends a pending sign-up confirmation or email change again (subject to
 * `SMTP_MAX_FREQUENCY`). Unknown users and nothing pending are answered as a send, so that the
 * answer reveals nothing.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/resend.go
 * @module
 */
import type { AppContext, RequestContext } from '../context.js'
import { BadRequestError } from '../errors.js'
import {
  findUserByEmail,
  findUserByPhone,
  findUserByPhoneChange,
  getUserById,
} from '../models/user.js'
import { sendConfirmation } from './shared/confirmation.js'
import { sendEmailChange } from './email-change.js'
import { sendPhoneOtp } from './shared/phone.js'
import { parsePkceChallenge } from './shared/pkce.js'
import { validateEmail, validatePhone } from './shared/validation.js'

/** A `POST /resend` request; absent fields are `''`. */
export interface ResendParams {
  readonly type: string
  readonly email: string
  readonly phone: string
  readonly codeChallenge: string
  readonly codeChallengeMethod: string
  /** Where the user lands: the request's validated `redirect_to`, else `SITE_URL`. */
  readonly redirectTo: string
}

/**
 * Sends the pending confirmation (`signup`, by email; `sms`, by SMS) or email change
 * (`email_change`, to the address; `phone_change`, to the new number given as `phone`) again.
 *
 * @returns The SMS provider's message id of a code sent (`''` for a mail, or nothing sent).
 * @throws {@link BadRequestError} 400 `validation_failed` with upstream's texts, 400
 *   `email_provider_disabled` "Email logins are disabled" under `EXTERNAL_EMAIL_ENABLED=false`; 429
 *   `over_email_send_rate_limit`, `over_sms_send_rate_limit`; 422 `sms_send_failed`; 500 when the
 *   mail fails.
 */
export async function resend(
  ctx: AppContext,
  params: ResendParams,
  client: RequestContext,
): Promise<string> {
  const { type } = params
  const language = client.acceptLanguage ?? ''
  if (!['signup', 'email_change', 'sms', 'phone_change'].includes(type)) {
    throw new BadRequestError(
      'validation_failed',
      'Missing one of these types: signup, email_change, sms, phone_change',
    )
  }
  if (params.email === '' && params.phone === '') {
    throw new BadRequestError('validation_failed', 'Missing email address or phone number')
  }
  if (params.email !== '' && params.phone !== '') {
    throw new BadRequestError(
      'validation_failed',
      'Only an email address or phone number should be provided.',
    )
  }
  const byEmail = type === 'signup' || type === 'email_change'
  if (byEmail && params.email === '') {
    throw new BadRequestError('validation_failed', 'Type provided requires an email address')
  }
  if (!byEmail && params.phone === '') {
    throw new BadRequestError('validation_failed', 'Type provided requires a phone number')
  }
  if (params.email !== '' && !ctx.settings.external.emailEnabled) {
    throw new BadRequestError('email_provider_disabled', 'Email logins are disabled')
  }
  const email = byEmail ? validateEmail(params.email) : ''
  const phone = byEmail ? '' : validatePhone(params.phone)
  const pkce = parsePkceChallenge(params.codeChallenge, params.codeChallengeMethod)
  const { redirectTo } = params
  return ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const found = byEmail
      ? await findUserByEmail(tx, email, client.aud)
      : type === 'phone_change'
        ? await findUserByPhoneChange(tx, phone, client.aud)
        : await findUserByPhone(tx, phone, client.aud)
    if (!found) return ''
    const user = await getUserById(tx, found.id, true)
    switch (type) {
      case 'signup':
        if (user.emailConfirmedAt === null) {
          await sendConfirmation(ctx, tx, user, 'confirmation', redirectTo, now, language, pkce)
        }
        return ''
      case 'sms':
        if (user.phoneConfirmedAt !== null) return ''
        return (await sendPhoneOtp(ctx, tx, user, phone, 'confirmation', 'sms', now, language))
          .messageId
      case 'email_change':
        if (user.emailChange !== '') {
          await sendEmailChange(ctx, tx, user, user.emailChange, redirectTo, now, language, pkce)
        }
        return ''
      default:
        // `phone_change`: the user was found by its pending new number.
        return (await sendPhoneOtp(ctx, tx, user, phone, 'phone_change', 'sms', now, language))
          .messageId
    }
  })
}
