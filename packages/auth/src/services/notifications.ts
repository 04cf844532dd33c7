/**
 * Change notifications of the flows (`MAILER_NOTIFICATIONS_<KIND>_ENABLED`, each off by
 * default): a mail to the user after its password or email changed. Sent after the change is
 * committed; a failed notification does not undo the change and does not fail the request (as
 * upstream, which only logs it).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/mail.go
 * @module
 */
import type { AppContext } from '../context.js'
import type { MailMessage } from '../mailer/mailer.js'
import type { User } from '../models/user.js'

/** The fields of a notification mail that no link or code fills. */
function notification(
  user: User,
  kind: MailMessage['kind'],
  to: string,
): Pick<
  MailMessage,
  'kind' | 'to' | 'confirmationUrl' | 'token' | 'tokenHash' | 'redirectTo' | 'data' | 'email'
> {
  return {
    kind,
    to,
    confirmationUrl: '',
    token: '',
    tokenHash: '',
    redirectTo: '',
    data: user.userMetadata,
    email: user.email,
  }
}

/** Sends a notification, swallowing a failure (the change it reports is already committed). */
async function sendQuietly(
  ctx: Pick<AppContext, 'mailer'>,
  message: MailMessage,
): Promise<boolean> {
  try {
    await ctx.mailer.send(message)
    return true
  } catch {
    return false
  }
}

/**
 * Sends `password_changed_notification` to the user's email when
 * `MAILER_NOTIFICATIONS_PASSWORD_CHANGED_ENABLED` is on and the user has one.
 *
 * @returns Whether a notification was sent.
 */
export async function notifyPasswordChanged(
  ctx: Pick<AppContext, 'mailer' | 'settings'>,
  user: User,
): Promise<boolean> {
  if (!ctx.settings.mailer.notifications.passwordChanged || user.email === '') return false
  return sendQuietly(ctx, notification(user, 'password_changed_notification', user.email))
}

/**
 * Sends `email_changed_notification` to the previous address when
 * `MAILER_NOTIFICATIONS_EMAIL_CHANGED_ENABLED` is on (`{{ .Email }}` is the new address,
 * `{{ .OldEmail }}` the previous one).
 *
 * @param user The user with its new email.
 * @param oldEmail The address before the change.
 * @returns Whether a notification was sent.
 */
export async function notifyEmailChanged(
  ctx: Pick<AppContext, 'mailer' | 'settings'>,
  user: User,
  oldEmail: string,
): Promise<boolean> {
  if (!ctx.settings.mailer.notifications.emailChanged || oldEmail === '') return false
  return sendQuietly(ctx, {
    ...notification(user, 'email_changed_notification', oldEmail),
    oldEmail,
  })
}
