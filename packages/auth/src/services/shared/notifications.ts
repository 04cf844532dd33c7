/**
 * Notification mails: told to a user after a change to their account (password, email, phone,
 * identities, MFA factors), each sent only when its `MAILER_NOTIFICATIONS_<KIND>_ENABLED` is on.
 *
 * A notification reports something that has already happened: its failure is logged as a
 * warning and never fails the request or undoes the change (upstream logs "Unable to send …
 * notification email" and carries on).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/mail.go
 * @module
 */
import { notificationSwitch } from '../../mailer/mailer.js'
import type { AppContext } from '../../context.js'
import type { MailMessage, NotificationKind } from '../../mailer/mailer.js'
import { emailDataOf } from '../../hooks/email-data.js'
import { UNKNOWN_CALLER } from '../../hooks/hooks.js'
import type { User } from '../../models/user.js'

/** The values a notification needs beyond the user's own (see the spec's table per kind). */
export interface NotificationValues {
  /** `{{ .OldEmail }}`, for `email_changed_notification`. */
  readonly oldEmail?: string
  /** `{{ .OldPhone }}`, for `phone_changed_notification` (`{{ .Phone }}` is the user's). */
  readonly oldPhone?: string
  /** `{{ .Provider }}`, for identity linked/unlinked. */
  readonly provider?: string
  /** `{{ .FactorType }}` (`totp`, `phone`, …), for MFA factor enrolled/unenrolled. */
  readonly factorType?: string
  /** `{{ .UserAgent }}` and `{{ .IP }}`, for a new sign-in. */
  readonly userAgent?: string
  readonly ip?: string
  /** The `Accept-Language` of the request that made the change: picks the mail's language. */
  readonly acceptLanguage?: string
}

/** Where a failed notification is reported: a pino logger such as Fastify's `request.log`. */
export interface NotificationLog {
  warn(details: Record<string, unknown>, message: string): void
}

/** A {@link NotificationLog} that drops what it is told, for callers without a logger. */
const unlogged: NotificationLog = { warn: () => undefined }

/** What {@link sendNotification} did. */
export type NotificationOutcome = 'sent' | 'disabled' | 'no_email' | 'failed'

/**
 * Sends the `kind` notification if its `MAILER_NOTIFICATIONS_<KIND>_ENABLED` is on. Call it after
 * the change is committed, with the user as it is now (`{{ .Email }}` and `{{ .Phone }}` are the
 * current ones). It goes to the user's email, except `email_changed_notification`, which goes to
 * the previous address (`values.oldEmail`), whose owner is the one to warn.
 *
 * @param ctx The app context (its settings, mailer and hooks: with `HOOK_SEND_EMAIL` on, the
 *   send-email hook gets the notification instead of the mailer).
 * @param kind Which notification.
 * @param user The changed user.
 * @param values The kind's extra values (old email or phone, provider, factor type).
 * @param log Where a failed send is reported, as a warning with the kind, the user's id and the
 *   error. @default nowhere
 * @returns `'sent'`, `'disabled'` (switch off), `'no_email'` (no address to send to), or
 *   `'failed'` (logged). Never throws: a notification never fails the request.
 */
export async function sendNotification(
  ctx: Pick<AppContext, 'settings' | 'mailer'> & {
    readonly hooks?: AppContext['hooks']
    /** The request's database, for a `pg-functions://` hook (default: the server's). */
    readonly db?: AppContext['db']
  },
  kind: NotificationKind,
  user: User,
  values: NotificationValues = {},
  log: NotificationLog = unlogged,
): Promise<NotificationOutcome> {
  if (!ctx.settings.mailer.notifications[notificationSwitch(kind)]) return 'disabled'
  const to = kind === 'email_changed_notification' ? (values.oldEmail ?? '') : user.email
  if (to === '') return 'no_email'
  const message: MailMessage = {
    kind,
    to,
    email: user.email,
    phone: user.phone,
    confirmationUrl: '',
    token: '',
    tokenHash: '',
    redirectTo: '',
    data: user.userMetadata,
    ...values,
  }
  try {
    const { hooks } = ctx
    if (hooks?.enabled('sendEmail')) {
      const data = emailDataOf(message, ctx.settings.apiExternalUrl)
      const payload = { user: await hooks.user(undefined, user), email_data: data }
      await hooks.invoke('sendEmail', payload, UNKNOWN_CALLER, ctx.db)
    } else {
      await ctx.mailer.send(message)
    }
    return 'sent'
  } catch (error) {
    log.warn(
      { kind, user_id: user.id, error: error instanceof Error ? error.message : String(error) },
      `Unable to send ${kind.replaceAll('_', ' ')} email`,
    )
    return 'failed'
  }
}

/**
 * `password_changed_notification` to the user (see {@link sendNotification}).
 *
 * @returns Whether it was sent.
 */
export async function notifyPasswordChanged(
  ctx: Pick<AppContext, 'settings' | 'mailer'>,
  user: User,
  log?: NotificationLog,
  acceptLanguage = '',
): Promise<boolean> {
  const outcome = await sendNotification(
    ctx,
    'password_changed_notification',
    user,
    { acceptLanguage },
    log,
  )
  return outcome === 'sent'
}

/**
 * `email_changed_notification` to the previous address, `{{ .Email }}` being the new one (see
 * {@link sendNotification}).
 *
 * @param user The user with its new email.
 * @param oldEmail The address before the change.
 * @returns Whether it was sent.
 */
export async function notifyEmailChanged(
  ctx: Pick<AppContext, 'settings' | 'mailer'>,
  user: User,
  oldEmail: string,
  log?: NotificationLog,
  acceptLanguage = '',
): Promise<boolean> {
  const values = { oldEmail, acceptLanguage }
  const outcome = await sendNotification(ctx, 'email_changed_notification', user, values, log)
  return outcome === 'sent'
}

/**
 * `phone_changed_notification` to the user's email, `{{ .Phone }}` being the new number and
 * `{{ .OldPhone }}` the previous one (see {@link sendNotification}); a user without an email
 * gets none.
 *
 * @param user The user with its new phone.
 * @param oldPhone The number before the change (`''` when it had none).
 * @returns Whether it was sent.
 */
export async function notifyPhoneChanged(
  ctx: Pick<AppContext, 'settings' | 'mailer'>,
  user: User,
  oldPhone: string,
  log?: NotificationLog,
  acceptLanguage = '',
): Promise<boolean> {
  const values = { oldPhone, acceptLanguage }
  const outcome = await sendNotification(ctx, 'phone_changed_notification', user, values, log)
  return outcome === 'sent'
}
