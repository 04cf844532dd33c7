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
import type { AppContext } from '../context.js'
import type { NotificationKind } from '../mailer/mailer.js'
import type { User } from '../models/user.js'

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
}

/** Where a failed notification is reported: a pino logger such as Fastify's `request.log`. */
export interface NotificationLog {
  warn(details: Record<string, unknown>, message: string): void
}

/** What {@link sendNotification} did. */
export type NotificationOutcome = 'sent' | 'disabled' | 'no_email' | 'failed'

/**
 * Sends the `kind` notification to `user` if `MAILER_NOTIFICATIONS_<KIND>_ENABLED` is on. Call
 * it after the change is committed, with the user as it is now (`{{ .Email }}` and
 * `{{ .Phone }}` are the current ones).
 *
 * @param ctx The app context (its settings and mailer).
 * @param kind Which notification.
 * @param user The changed user; a user without an email address gets nothing.
 * @param values The kind's extra values (old email or phone, provider, factor type).
 * @param log Where a failed send is reported, as a warning with the kind, the user's id and the
 *   error (never the address).
 * @returns `'sent'`, `'disabled'` (switch off), `'no_email'`, or `'failed'` (logged). Never
 *   throws: a notification never fails the request.
 */
export async function sendNotification(
  ctx: Pick<AppContext, 'settings' | 'mailer'>,
  kind: NotificationKind,
  user: User,
  values: NotificationValues,
  log: NotificationLog,
): Promise<NotificationOutcome> {
  if (!ctx.settings.mailer.notifications[kind]) return 'disabled'
  if (user.email === '') return 'no_email'
  try {
    await ctx.mailer.send({
      kind,
      to: user.email,
      email: user.email,
      phone: user.phone,
      confirmationUrl: '',
      token: '',
      tokenHash: '',
      redirectTo: '',
      data: user.userMetadata,
      ...values,
    })
    return 'sent'
  } catch (error) {
    log.warn(
      { kind, user_id: user.id, error: error instanceof Error ? error.message : String(error) },
      `Unable to send ${kind.replaceAll('_', ' ')} email`,
    )
    return 'failed'
  }
}
