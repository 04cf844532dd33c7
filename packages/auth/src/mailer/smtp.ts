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
import { DEFAULT_SUBJECTS } from './default-templates.js'
import { DEFAULT_TEMPLATES } from './default-templates.js'
import { TemplateExecError } from './go-template.js'
import { renderTemplate, templateValues, type TemplateValues } from './template.js'
import { TemplateSource } from './template-source.js'
import { lookupLocale, readerLanguages } from '../locale.js'

/** A rendered mail: what goes on the wire. */
export interface RenderedMail {
  /** `Name <address>`, or the address alone when `SMTP_SENDER_NAME` is empty. */
  readonly from: string
  readonly to: string
  readonly subject: string
  /**
   * The language it was rendered in (its `Content-Language`): a canonical tag of the kind's
   * `MAILER_SUBJECTS_<KIND>_<LOCALE>`/`MAILER_TEMPLATES_<KIND>_<LOCALE>`, or `''` for the default
   * texts (then the header is absent).
   */
  readonly language: string
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
  /**
   * Told when a template is unavailable (its URL cannot be fetched, it does not parse, or it
   * fails on a message's values) and the built-in template is used; `url` names the template
   * (its URL, or the `MAILER_SUBJECTS_*` variable).
   */
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
  readonly #onFallback: SmtpMailerOptions['onTemplateFallback']

  /**
   * @param settings `SMTP_*`, `MAILER_SUBJECTS_*`, `MAILER_TEMPLATES_*` and `SITE_URL`.
   * @param options The clock and optional overrides.
   */
  constructor(settings: Settings, options: SmtpMailerOptions) {
    this.#settings = settings
    this.#onFallback = options.onTemplateFallback
    this.#templates =
      options.templates ??
      new TemplateSource({
        urls: settings.mailer.templates,
        localeUrls: settings.mailer.localeTemplates,
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
    const { kind } = message
    const localeSubjects = settings.mailer.localeSubjects[kind]
    const available = new Set([
      ...Object.keys(localeSubjects),
      ...Object.keys(settings.mailer.localeTemplates[kind]),
    ])
    const preferences = readerLanguages(message.data['locale'], message.acceptLanguage ?? '')
    const language = lookupLocale(preferences, available)
    const localeSubject = language === undefined ? undefined : localeSubjects[language]
    const subjectSource = localeSubject ?? settings.mailer.subjects[kind]
    const subject = this.#render(subjectSource, DEFAULT_SUBJECTS[kind], values, {
      kind,
      what: `MAILER_SUBJECTS_${kind.toUpperCase()}${localeSubject === undefined ? '' : `_${language ?? ''}`}`,
      html: false,
    })
    const template = await this.#templates.get(kind, language)
    const html = this.#render(template, DEFAULT_TEMPLATES[kind], values, {
      kind,
      what: this.#templates.url(kind, language),
      html: true,
    })
    return {
      from: fromAddress(settings.smtp.senderName, settings.smtp.adminEmail),
      to: message.to,
      // One header line: a value with a line break must not start a new header.
      subject: subject.replace(/[\r\n]+/g, ' ').trim(),
      language: language ?? '',
      html,
      text: convert(html, { wordwrap: 78 }),
    }
  }

  /**
   * Renders `source`; when one of its actions fails on these values (a comparison of a string
   * with a number, …), the built-in `fallback` is rendered instead and the failure reported.
   */
  #render(
    source: string,
    fallback: string,
    values: TemplateValues,
    use: { readonly kind: MailKind; readonly what: string; readonly html: boolean },
  ): string {
    try {
      return renderTemplate(source, values, { html: use.html })
    } catch (error) {
      if (!(error instanceof TemplateExecError) || source === fallback) throw error
      this.#onFallback?.(use.kind, use.what, error)
      return renderTemplate(fallback, values, { html: use.html })
    }
  }

  /**
   * Renders and sends `message`.
   *
   * @throws {Error} When the SMTP server cannot be reached, refuses the login or the message
   *   (the message names the server and the SMTP reply; the cause is nodemailer's error).
   */
  async send(message: MailMessage): Promise<void> {
    const { language, ...mail } = await this.render(message)
    try {
      await this.#transport.sendMail({
        ...mail,
        ...(language === '' ? {} : { headers: { 'Content-Language': language } }),
      })
    } catch (error) {
      const { host, port } = this.#settings.smtp
      const reason = error instanceof Error ? error.message : String(error)
      throw new Error(
        `sending the ${message.kind} mail through ${host}:${String(port)} failed: ${reason}`,
        { cause: error },
      )
    }
  }

  /**
   * Connects to the SMTP server as a send would (TLS or STARTTLS, the login when `SMTP_USER` is
   * set) and says goodbye without sending anything: `gatehouse-auth check --connect`.
   *
   * @throws {Error} nodemailer's error when the server cannot be reached or refuses the login.
   */
  async verify(): Promise<void> {
    await this.#transport.verify()
  }
}
