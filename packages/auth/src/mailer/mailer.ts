/** Kinds of transactional email (upstream's templates). */
export type MailKind =
  'confirmation' | 'invite' | 'recovery' | 'magic_link' | 'email_change' | 'reauthentication'

/** One email to send: its kind, recipient and the values its template uses. */
export interface MailMessage {
  readonly kind: MailKind
  /** Recipient address. */
  readonly to: string
  /** The link the user follows (`<API_EXTERNAL_URL>/verify?token=…&type=…&redirect_to=…`). */
  readonly confirmationUrl: string
  /** The one-time code, for templates that show it. */
  readonly token: string
  /** `hex(sha224(email + otp))`, the value carried by links. */
  readonly tokenHash: string
  /** Where the user lands after verification. */
  readonly redirectTo: string
  /** The user's `user_metadata`. */
  readonly data: Readonly<Record<string, unknown>>
}

/**
 * Sends transactional email. The email issue adds an SMTP implementation; until then
 * {@link NoopMailer} is wired in.
 */
export interface Mailer {
  /**
   * Sends one message.
   *
   * @throws {Error} When delivery fails; callers map it to an API error.
   */
  send(message: MailMessage): Promise<void>
}

/** A {@link Mailer} that sends nothing (upstream's noop mailer when `SMTP_HOST` is empty). */
export class NoopMailer implements Mailer {
  async send(_message: MailMessage): Promise<void> {
    // Nothing to do: no SMTP server is configured.
  }
}
