/**
 * The SMTP mailer (`SMTP_HOST` set): renders a message's subject and body and sends it through
 * nodemailer, as an HTML body with a plain-text alternative.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/mailer/templatemailer/templatemailer.go
 * @module
 */
import { convert } from 'html-to-text'
import nodemailer, { type Transporter } from 'nodemailer'
import type { Clock } from '../clock.js'
import type { Settings } from '../conf/settings.js'
import type { Mailer, MailKind, MailMessage } from './mailer.js'
import { renderTemplate, templateValues } from './template.js'
import { TemplateSource } from './template-source.js'

/** A rendered mail: what goes on the wire. */
export interface RenderedMail {
  /** `Name <address>`, or the address alone when `SMTP_SENDER_NAME` is empty. */
  readonly from: string
  readonly to: string
  readonly subject: string
  readonly html: string
  /** The plain-text alternative, derived from the HTML (links kept as `text [url]`). */
  readonly text: string
}

/** Options of {@link SmtpMailer}. */
export interface SmtpMailerOptions {
  /** Time of the template cache. */
  readonly clock: Clock
  /** Where bodies come from. @default a {@link TemplateSource} over `MAILER_TEMPLATES_*` */
  readonly templates?: TemplateSource
  /**
   * Longest wait for the SMTP server at each step (connection, greeting, each command), in
   * milliseconds; then the send fails. @default 10000
   */
  readonly timeoutMs?: number
  /** Told when a template URL is unavailable and the built-in template is used. */
  readonly onTemplateFallback?: (kind: MailKind, url: string, reason: Error) => void
}

/** `"Name" <address>` (RFC 5322 display name, quoted), or the address alone. */
function fromAddress(name: string, address: string): string {
  return name === '' ? address : `"${name.replace(/["\\]/g, '\\$&')}" <${address}>`
}

/**
 * A {@link Mailer} sending through `SMTP_HOST:SMTP_PORT` (TLS from the start on port 465,
 * STARTTLS when the server offers it elsewhere; `SMTP_USER`/`SMTP_PASS` when set), From
 * `SMTP_SENDER_NAME <SMTP_ADMIN_EMAIL>`. Subjects are `MAILER_SUBJECTS_<KIND>` and bodies the
 * kind's template (see {@link TemplateSource}), both rendered with the message's values.
 */
export class SmtpMailer implements Mailer {
  readonly #settings: Settings
  readonly #templates: TemplateSource
  readonly #transport: Transporter

  /**
   * @param settings `SMTP_*`, `MAILER_SUBJECTS_*`, `MAILER_TEMPLATES_*` and `SITE_URL`.
   * @param options The clock and optional overrides.
   */
  constructor(settings: Settings, options: SmtpMailerOptions) {
    this.#settings = settings
    this.#templates =
      options.templates ??
      new TemplateSource({
        urls: settings.mailer.templates,
        siteUrl: settings.siteUrl,
        clock: options.clock,
        onFallback: options.onTemplateFallback,
      })
    const { host, port, user, pass } = settings.smtp
    const timeout = options.timeoutMs ?? 10_000
    this.#transport = nodemailer.createTransport({
      host,
      port,
      secure: port === 465,
      auth: user === '' ? undefined : { user, pass },
      connectionTimeout: timeout,
      greetingTimeout: timeout,
      socketTimeout: timeout,
    })
  }

  /**
   * Renders `message` without sending it.
   *
   * @returns From, To, subject, HTML body and its text alternative.
   */
  async render(message: MailMessage): Promise<RenderedMail> {
    const settings = this.#settings
    const values = templateValues(message, settings.siteUrl)
    const subject = renderTemplate(settings.mailer.subjects[message.kind], values, { html: false })
    const html = renderTemplate(await this.#templates.get(message.kind), values, { html: true })
    return {
      from: fromAddress(settings.smtp.senderName, settings.smtp.adminEmail),
      to: message.to,
      // One header line: a value with a line break must not start a new header.
      subject: subject.replace(/[\r\n]+/g, ' ').trim(),
      html,
      text: convert(html, { wordwrap: 78 }),
    }
  }

  /**
   * Renders and sends `message`.
   *
   * @throws {Error} When the SMTP server cannot be reached, refuses the login or the message
   *   (the message names the server and the SMTP reply; the cause is nodemailer's error).
   */
  async send(message: MailMessage): Promise<void> {
    const mail = await this.render(message)
    try {
      await this.#transport.sendMail(mail)
    } catch (error) {
      const { host, port } = this.#settings.smtp
      const reason = error instanceof Error ? error.message : String(error)
      throw new Error(
        `sending the ${message.kind} mail through ${host}:${String(port)} failed: ${reason}`,
        { cause: error },
      )
    }
  }
}
