/**
 * Rendering of mail subjects and bodies: upstream's Go templates (`{{ .Token }}`,
 * `{{ if eq .Data.locale "fr" }}…{{ else }}…{{ end }}`, …; see `go-template.ts` for what is
 * supported) with a message's values. Bodies are HTML: printed values are HTML-escaped there (as
 * Go's `html/template` does); subjects are plain text and get the values as they are.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/mailer/templatemailer/templatemailer.go
 * @module
 */
import { escapeHtml, parseTemplate, type Template } from './go-template.js'
import type { MailMessage } from './mailer.js'

export { escapeHtml }
export { TemplateExecError, TemplateParseError } from './go-template.js'

/** The values a template sees, by upstream's names (`SiteURL`, `ConfirmationURL`, …). */
export interface TemplateValues {
  readonly SiteURL: string
  readonly ConfirmationURL: string
  readonly Token: string
  readonly TokenHash: string
  readonly RedirectTo: string
  readonly Email: string
  readonly NewEmail: string
  readonly OldEmail: string
  readonly Phone: string
  readonly OldPhone: string
  readonly Provider: string
  readonly FactorType: string
  /** The signing-in device's `User-Agent` (ours, for `new_sign_in_notification`). */
  readonly UserAgent: string
  /** The signing-in device's address (ours, for `new_sign_in_notification`). */
  readonly IP: string
  /** `{{ .Data.key }}`: the user's `user_metadata`. */
  readonly Data: Readonly<Record<string, unknown>>
}

/**
 * The template values of a message (upstream's names), with `{{ .SiteURL }}` from the settings.
 *
 * @param message The message to send.
 * @param siteUrl `SITE_URL`.
 */
export function templateValues(message: MailMessage, siteUrl: string): TemplateValues {
  return {
    SiteURL: siteUrl,
    ConfirmationURL: message.confirmationUrl,
    Token: message.token,
    TokenHash: message.tokenHash,
    RedirectTo: message.redirectTo,
    Email: message.email ?? message.to,
    NewEmail: message.newEmail ?? '',
    OldEmail: message.oldEmail ?? '',
    Phone: message.phone ?? '',
    OldPhone: message.oldPhone ?? '',
    Provider: message.provider ?? '',
    FactorType: message.factorType ?? '',
    UserAgent: message.userAgent ?? '',
    IP: message.ip ?? '',
    Data: message.data,
  }
}

/**
 * `{{ … }}` with the whitespace around it: Go's trim markers (`{{- ` and ` -}}`) remove that
 * whitespace, otherwise it stays.
 */
const ACTION = /(\s*)\{\{(-\s)?\s*([^{}]*?)\s*(\s-)?\}\}(\s*)/g

/**
 * Replaces each `{{ … }}` action of `template` (honouring Go's `{{- ` and ` -}}` trim markers)
 * by what `valueOf` gives for its inside (`.Token`, `.Data.key`, `if .X`, …), as it is: the
 * placeholder-only renderer of SMS texts (`SMS_TEMPLATE`), which never fails.
 *
 * @param valueOf The text of an action, given its trimmed inside; `''` removes it.
 * @returns The rendered text. Never throws (unless `valueOf` does).
 */
export function renderActions(template: string, valueOf: (action: string) => string): string {
  return template.replace(
    ACTION,
    (_action, before: string, trimBefore: string | undefined, path: string, trimAfter, after) =>
      `${trimBefore ? '' : before}${valueOf(path)}${trimAfter ? '' : String(after)}`,
  )
}

/** Parsed templates by source: defaults, subjects and the fetched bodies, a few dozen at most. */
const compiled = new Map<string, Template>()
const MAX_COMPILED = 256

/**
 * Parses a mail template once (later calls with the same text reuse it).
 *
 * @throws {@link TemplateParseError} When it does not parse.
 */
export function compileTemplate(source: string): Template {
  let template = compiled.get(source)
  if (!template) {
    template = parseTemplate(source)
    if (compiled.size >= MAX_COMPILED) compiled.clear()
    compiled.set(source, template)
  }
  return template
}

/**
 * Renders `template` with `values` as Go's templates do (see `go-template.ts`): `{{ .Name }}`,
 * `{{ .Data.key }}`, conditions, `range`, `with`, pipelines.
 *
 * @param template The subject or body source.
 * @param values What `.` stands for.
 * @param options `html: true` HTML-escapes every printed value (bodies); `false` leaves them
 *   (subjects).
 * @returns The rendered text.
 * @throws {@link TemplateParseError} When the template does not parse; {@link TemplateExecError}
 *   when an action fails (a comparison of a string with a number, …).
 */
export function renderTemplate(
  template: string,
  values: TemplateValues,
  options: { readonly html: boolean },
): string {
  return compileTemplate(template).render(values, options)
}
