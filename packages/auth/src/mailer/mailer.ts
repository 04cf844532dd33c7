/**
 * Kinds of transactional email (upstream's templates): the six flow mails and the seven
 * change notifications (`MAILER_NOTIFICATIONS_<KIND>_ENABLED`, each off by default).
 */
export type MailKind =
  | 'confirmation'
  | 'invite'
  | 'recovery'
  | 'magic_link'
  | 'email_change'
  | 'reauthentication'
  | NotificationKind

/** Notification mails, sent after a change when their `MAILER_NOTIFICATIONS_<KIND>_ENABLED` is on. */
export type NotificationKind =
  | 'password_changed_notification'
  | 'email_changed_notification'
  | 'phone_changed_notification'
  | 'identity_linked_notification'
  | 'identity_unlinked_notification'
  | 'mfa_factor_enrolled_notification'
  | 'mfa_factor_unenrolled_notification'
  | 'new_sign_in_notification'
  | 'mfa_recovery_code_used_notification'

/**
 * Every kind of mail, in upstream's order: the six flow mails, then the seven notifications, then
 * ours (`new_sign_in_notification` and `mfa_recovery_code_used_notification`, beyond upstream).
 */
export const MAIL_KINDS = [
  'invite',
  'confirmation',
  'recovery',
  'magic_link',
  'email_change',
  'reauthentication',
  'password_changed_notification',
  'email_changed_notification',
  'phone_changed_notification',
  'identity_linked_notification',
  'identity_unlinked_notification',
  'mfa_factor_enrolled_notification',
  'mfa_factor_unenrolled_notification',
  'new_sign_in_notification',
  'mfa_recovery_code_used_notification',
] as const satisfies readonly MailKind[]

/** The notification kinds of {@link MAIL_KINDS}. */
export const NOTIFICATION_KINDS = MAIL_KINDS.filter((kind): kind is NotificationKind =>
  kind.endsWith('_notification'),
)

/**
 * The switch of a notification kind in `Settings.mailer.notifications`: the camelCase of its
 * `MAILER_NOTIFICATIONS_<KIND>_ENABLED` (`passwordChanged`, …, `mfaFactorUnenrolled`).
 */
export type NotificationSwitch =
  | 'passwordChanged'
  | 'emailChanged'
  | 'phoneChanged'
  | 'identityLinked'
  | 'identityUnlinked'
  | 'mfaFactorEnrolled'
  | 'mfaFactorUnenrolled'
  | 'newSignIn'
  | 'mfaRecoveryCodeUsed'

/**
 * The {@link NotificationSwitch} of a notification kind.
 *
 * @example `notificationSwitch('mfa_factor_enrolled_notification')` is `'mfaFactorEnrolled'`.
 */
export function notificationSwitch(kind: NotificationKind): NotificationSwitch {
  return kind
    .replace(/_notification$/, '')
    .replace(/_([a-z])/g, (_m, ch: string) => ch.toUpperCase()) as NotificationSwitch
}

/**
 * One email to send: its kind, recipient and the values its template and subject use (upstream's
 * Go-template names in brackets). Fields a kind does not use are empty strings.
 */
export interface MailMessage {
  readonly kind: MailKind
  /** Recipient address. */
  readonly to: string
  /** `{{ .ConfirmationURL }}`: the link the user follows (`<API_EXTERNAL_URL>/verify?token=…&type=…&redirect_to=…`). */
  readonly confirmationUrl: string
  /** `{{ .Token }}`: the one-time code, for templates that show it. */
  readonly token: string
  /** `{{ .TokenHash }}`: `hex(sha224(email + otp))`, the value carried by links. */
  readonly tokenHash: string
  /** `{{ .RedirectTo }}`: where the user lands after verification. */
  readonly redirectTo: string
  /** `{{ .Data.key }}`: the user's `user_metadata`. */
  readonly data: Readonly<Record<string, unknown>>
  /** `{{ .Email }}`: the user's (current) email address; defaults to `to`. */
  readonly email?: string
  /** `{{ .NewEmail }}`: the requested address, for `email_change`. */
  readonly newEmail?: string
  /** `{{ .OldEmail }}`: the previous address, for `email_changed_notification`. */
  readonly oldEmail?: string
  /** `{{ .Phone }}`: the user's phone number (E.164 without `+`, as stored). */
  readonly phone?: string
  /** `{{ .OldPhone }}`: the previous phone number, for `phone_changed_notification`. */
  readonly oldPhone?: string
  /** `{{ .Provider }}`: the identity provider, for identity linked/unlinked notifications. */
  readonly provider?: string
  /** `{{ .FactorType }}`: `totp` or `phone`, for MFA factor notifications. */
  readonly factorType?: string
  /** `{{ .UserAgent }}`: the signing-in device's `User-Agent`, for `new_sign_in_notification`. */
  readonly userAgent?: string
  /** `{{ .IP }}`: the signing-in device's address, for `new_sign_in_notification`. */
  readonly ip?: string
  /**
   * The `Accept-Language` of the request that caused the mail (at most 512 characters), which
   * picks its language after `data.locale` (`MAILER_SUBJECTS_<KIND>_<LOCALE>`,
   * `MAILER_TEMPLATES_<KIND>_<LOCALE>`; see `locale.ts`). @default '' (none)
   */
  readonly acceptLanguage?: string
}

/**
 * Sends transactional email ({@link NoopMailer} when `SMTP_HOST` is empty, as upstream). The
 * implementation renders the kind's subject and template with the message's values
 * (`{{ .SiteURL }}` comes from the settings).
 */
export interface Mailer {
  /**
   * Sends one message.
   *
   * @throws {Error} When delivery fails; callers map it to upstream's API error and leave the
   *   user's state so that the request can be retried.
   */
  send(message: MailMessage): Promise<void>
}

/** A {@link Mailer} that sends nothing (upstream's noop mailer when `SMTP_HOST` is empty). */
export class NoopMailer implements Mailer {
  async send(_message: MailMessage): Promise<void> {
    // Nothing to do: no SMTP server is configured.
  }
}
