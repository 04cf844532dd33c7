/**
 * Rendering of mail subjects and bodies: upstream's Go-template placeholders (`{{ .Token }}`,
 * `{{ .Data.key }}`, …) replaced by a message's values.
 *
 * Only placeholders are supported, not Go's template actions (`if`, `range`, pipelines): an
 * action or an unknown placeholder renders as nothing, so that a template written for upstream
 * never fails a send. Bodies are HTML: values are HTML-escaped there (as Go's `html/template`
 * does); subjects are plain text and get the values as they are.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/mailer/templatemailer/templatemailer.go
 * @module
 */
import type { MailMessage } from './mailer.js'

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
    Data: message.data,
  }
}

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&#34;',
  "'": '&#39;',
}

/** `value` with `& < > " '` replaced by character references. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (ch) => HTML_ESCAPES[ch] ?? ch)
}

/**
 * `{{ … }}` with the whitespace around it: Go's trim markers (`{{- ` and ` -}}`) remove that
 * whitespace, otherwise it stays.
 */
const ACTION = /(\s*)\{\{(-\s)?\s*([^{}]*?)\s*(\s-)?\}\}(\s*)/g
/** `.Name` or `.Data.key` (keys may hold letters, digits, `_` and `-`). */
const FIELD_PATH = /^\.([A-Za-z][A-Za-z0-9]*)(?:\.([A-Za-z0-9_-]+))?$/

/** A value as Go's templates print it: strings as they are, numbers and booleans as text. */
function printable(value: unknown): string {
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (value === null || value === undefined) return ''
  return JSON.stringify(value)
}

function lookup(values: TemplateValues, path: string): string {
  const match = FIELD_PATH.exec(path)
  if (!match) return ''
  const [, name = '', key] = match
  if (name === 'Data') {
    if (key === undefined || !Object.hasOwn(values.Data, key)) return ''
    return printable(values.Data[key])
  }
  if (key !== undefined || !Object.hasOwn(values, name)) return ''
  return printable(values[name as keyof TemplateValues])
}

/**
 * Replaces each `{{ … }}` action of `template` (honouring Go's `{{- ` and ` -}}` trim markers)
 * by what `valueOf` gives for its inside (`.Token`, `.Data.key`, `if .X`, …), as it is.
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

/**
 * Renders `template` with `values`: each `{{ .Name }}` or `{{ .Data.key }}` becomes its value;
 * any other `{{ … }}` (an unknown name, a Go action) becomes nothing.
 *
 * @param template The subject or body source.
 * @param values What the placeholders stand for.
 * @param options `html: true` HTML-escapes every value (bodies); `false` leaves them (subjects).
 * @returns The rendered text. Never throws.
 */
export function renderTemplate(
  template: string,
  values: TemplateValues,
  options: { readonly html: boolean },
): string {
  return renderActions(template, (path) => {
    const value = lookup(values, path)
    return options.html ? escapeHtml(value) : value
  })
}
