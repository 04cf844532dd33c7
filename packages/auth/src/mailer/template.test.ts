import { describe, expect, it } from 'vitest'
import { loadSettings } from '../conf/settings.js'
import type { MailMessage } from './mailer.js'
import {
  escapeHtml,
  renderTemplate,
  TemplateExecError,
  TemplateParseError,
  templateValues,
} from './template.js'

const message: MailMessage = {
  kind: 'email_change',
  to: 'new@example.com',
  email: 'old@example.com',
  newEmail: 'new@example.com',
  confirmationUrl: 'https://auth.example.com/verify?token=abc&type=email_change',
  token: '123456',
  tokenHash: 'deadbeef',
  redirectTo: 'https://app.example.com/welcome',
  data: { name: '<b>Ann</b>', age: 42, vip: true, nested: { a: 1 } },
}
const values = templateValues(message, 'https://app.example.com')

describe('renderTemplate', () => {
  it('replaces every upstream placeholder, with or without inner spaces', () => {
    const source =
      '{{ .SiteURL }}|{{.ConfirmationURL}}|{{ .Token }}|{{ .TokenHash }}|{{ .RedirectTo }}|' +
      '{{ .Email }}|{{ .NewEmail }}|{{ .OldEmail }}|{{ .Phone }}|{{ .OldPhone }}|' +
      '{{ .Provider }}|{{ .FactorType }}'
    expect(renderTemplate(source, values, { html: false })).toBe(
      'https://app.example.com|https://auth.example.com/verify?token=abc&type=email_change|' +
        '123456|deadbeef|https://app.example.com/welcome|old@example.com|new@example.com|||||',
    )
  })

  it("removes the whitespace next to Go's trim markers and keeps it elsewhere", () => {
    expect(renderTemplate('a  {{- .Token -}}  b {{ .Token }} c', values, { html: false })).toBe(
      'a123456b 123456 c',
    )
  })

  it('HTML-escapes values in bodies and leaves them in subjects', () => {
    expect(renderTemplate('<a href="{{ .ConfirmationURL }}">go</a>', values, { html: true })).toBe(
      '<a href="https://auth.example.com/verify?token=abc&amp;type=email_change">go</a>',
    )
    expect(renderTemplate('Hi {{ .Data.name }}', values, { html: true })).toBe(
      'Hi &lt;b&gt;Ann&lt;/b&gt;',
    )
    expect(renderTemplate('Hi {{ .Data.name }}', values, { html: false })).toBe('Hi <b>Ann</b>')
  })

  it('prints {{ .Data.key }} of any JSON type, and nothing for a missing key', () => {
    expect(
      renderTemplate(
        '{{ .Data.age }} {{ .Data.vip }} {{ .Data.nested }} [{{ .Data.missing }}]',
        values,
        { html: false },
      ),
    ).toBe('42 true {"a":1} []')
  })

  it('renders unknown placeholders as nothing, and refuses a field of a string', () => {
    const source = '[{{ .Unknown }}][{{ .constructor }}][{{ .__proto__ }}][{{ .Data.missing }}]'
    expect(renderTemplate(source, values, { html: true })).toBe('[][][][]')
    expect(() => renderTemplate('{{ .Email.Sub }}', values, { html: true })).toThrow(
      TemplateExecError,
    )
    expect(() => renderTemplate('{{ if .Token }}', values, { html: true })).toThrow(
      TemplateParseError,
    )
  })

  /** @see issue 25, item 19: both branches were rendered (a mail in French and in English). */
  it('renders one branch of {{ if }} … {{ else }} … {{ end }}', () => {
    const source =
      '{{ if eq .Data.lang "fr" }}Bonjour {{ .Data.name }}{{ else }}Hello {{ .Data.name }}{{ end }}'
    const fr = templateValues({ ...message, data: { lang: 'fr', name: 'Ann' } }, 'https://s')
    const en = templateValues({ ...message, data: { lang: 'en', name: 'Ann' } }, 'https://s')
    expect(renderTemplate(source, fr, { html: true })).toBe('Bonjour Ann')
    expect(renderTemplate(source, en, { html: true })).toBe('Hello Ann')
  })

  it('takes {{ .Email }} from to when the message has no email', () => {
    const plain = templateValues({ ...message, email: undefined }, 'https://s')
    expect(renderTemplate('{{ .Email }}', plain, { html: false })).toBe('new@example.com')
  })

  it('does not treat a value as a template', () => {
    const sneaky = templateValues({ ...message, data: { x: '{{ .Token }}' } }, 'https://s')
    expect(renderTemplate('{{ .Data.x }}', sneaky, { html: false })).toBe('{{ .Token }}')
  })
})

describe('escapeHtml', () => {
  it('escapes the five HTML metacharacters', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe(
      '&lt;a href=&#34;x&#34; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
    )
  })
})

describe('MAILER_SUBJECTS_*', () => {
  /** @see issue 25, item 19: a template that fails to parse is refused when it is loaded. */
  it('refuses a subject that does not parse, at start, naming the variable and the place', () => {
    const env = {
      AUTHSVC_SITE_URL: 'https://app.example.com',
      AUTHSVC_API_EXTERNAL_URL: 'https://auth.example.com',
      AUTHSVC_JWT_SECRET: 'a-secret-of-thirty-two-bytes-or-more',
      AUTHSVC_DB_DRIVER: 'postgres',
      DATABASE_URL: 'pglite://memory',
    }
    expect(() =>
      loadSettings({ ...env, AUTHSVC_MAILER_SUBJECTS_RECOVERY: 'Reset {{ if .Data.vip }}now' }),
    ).toThrow(
      /MAILER_SUBJECTS_RECOVERY.*is not a valid template: line 1, column 7: unexpected end of template: \{\{ if \}\} without \{\{ end \}\}/,
    )
    const ok = loadSettings({
      ...env,
      AUTHSVC_MAILER_SUBJECTS_RECOVERY:
        '{{ if eq .Data.lang "fr" }}Réinitialiser{{ else }}Reset{{ end }}',
    })
    expect(ok.mailer.subjects.recovery).toContain('{{ if eq')
  })
})
