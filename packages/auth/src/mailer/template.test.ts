import { describe, expect, it } from 'vitest'
import type { MailMessage } from './mailer.js'
import { escapeHtml, renderTemplate, templateValues } from './template.js'

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

  it('renders unknown placeholders and Go actions as nothing, never failing', () => {
    const source =
      '[{{ .Unknown }}][{{ if .Token }}][{{ end }}][{{ .Email.Sub }}][{{ .Data }}][{{ .constructor }}][{{ .__proto__ }}]'
    expect(renderTemplate(source, values, { html: true })).toBe('[][][][][][][]')
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
