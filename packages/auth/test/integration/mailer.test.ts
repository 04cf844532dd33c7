import { getFreePort, FakeClock, startHttpServer, type TestHttpServer } from '@gatehouse/testing'
import { startMailInbox, type MailInbox } from '@gatehouse/mail-inbox'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadSettings, SmtpMailer, type MailMessage, type Settings } from '@gatehouse/auth'
import { startTestServer, testEnv } from '../helpers.js'

let inbox: MailInbox
let templates: TestHttpServer

beforeAll(async () => {
  inbox = await startMailInbox()
  templates = await startHttpServer((req, res) => {
    if (req.url === '/bilingual.html') {
      // The shape of upstream's documented per-language template, with our own words.
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end(
        '{{ if eq .Data.lang "fr" }}<p>Bonjour {{ .Data.name }}</p>{{ else }}<p>Hello {{ .Data.name }}</p>{{ end }}' +
          '{{ range $k, $v := .Data.prefs }}<i>{{ $k }}:{{ $v }}</i>{{ end }}',
      )
    } else if (req.url === '/fails.html') {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end('<p>{{ if lt .Data.name 3 }}small{{ end }}</p>')
    } else if (req.url === '/invite.html') {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end(
        '<p>Hello {{ .Data.name }}, join {{ .SiteURL }}: <a href="{{ .ConfirmationURL }}">accept</a></p>',
      )
    } else {
      res.writeHead(404).end()
    }
  })
})
afterAll(async () => {
  await inbox.close()
  await templates.close()
})

function smtpSettings(overrides: Record<string, string> = {}): Settings {
  return loadSettings(
    testEnv('postgres://unused/db', {
      AUTHSVC_SMTP_HOST: '127.0.0.1',
      AUTHSVC_SMTP_PORT: String(inbox.smtp.port),
      AUTHSVC_SMTP_USER: 'mailer',
      AUTHSVC_SMTP_PASS: 'secret',
      AUTHSVC_SMTP_ADMIN_EMAIL: 'no-reply@example.com',
      AUTHSVC_SMTP_SENDER_NAME: 'Gatehouse "Dev"',
      ...overrides,
    }),
  )
}

const message = (to: string, extra: Partial<MailMessage> = {}): MailMessage => ({
  kind: 'confirmation',
  to,
  confirmationUrl:
    'http://127.0.0.1:9999/verify?token=abc&type=signup&redirect_to=http://localhost:3000',
  token: '123456',
  tokenHash: 'abc',
  redirectTo: 'http://localhost:3000',
  data: { name: 'Ann <3' },
  ...extra,
})

describe('SmtpMailer through a real SMTP server', () => {
  it('sends From "Name <address>", the default subject, an HTML body and its text part', async () => {
    const mailer = new SmtpMailer(smtpSettings(), { clock: new FakeClock() })
    await mailer.send(message('ann@example.com'))
    const mail = await inbox.store.waitFor('ann@example.com')
    expect(mail.from).toBe('"Gatehouse \\"Dev\\"" <no-reply@example.com>')
    expect(mail.subject).toBe('Confirm your email address')
    expect(mail.links).toEqual([
      'http://127.0.0.1:9999/verify?token=abc&type=signup&redirect_to=http://localhost:3000',
    ])
    expect(mail.html).toContain('Or enter this code: 123456')
    expect(mail.text).toContain(
      '[http://127.0.0.1:9999/verify?token=abc&type=signup&redirect_to=http://localhost:3000]',
    )
    expect(mail.text).toContain('Or enter this code: 123456')
  })

  it('renders MAILER_SUBJECTS_* and a fetched MAILER_TEMPLATES_* with escaped values', async () => {
    const mailer = new SmtpMailer(
      smtpSettings({
        AUTHSVC_MAILER_SUBJECTS_INVITE: 'Join {{ .SiteURL }}, {{ .Data.name }}',
        AUTHSVC_MAILER_TEMPLATES_INVITE: `${templates.url}/invite.html`,
      }),
      { clock: new FakeClock() },
    )
    await mailer.send(message('bob@example.com', { kind: 'invite' }))
    const mail = await inbox.store.waitFor('bob@example.com')
    expect(mail.subject).toBe('Join http://localhost:3000, Ann <3')
    expect(mail.html).toContain('<p>Hello Ann &lt;3, join http://localhost:3000: <a href=')
    expect(mail.links[0]).toBe(
      'http://127.0.0.1:9999/verify?token=abc&type=signup&redirect_to=http://localhost:3000',
    )
  })

  it('uses the built-in template when the template URL is missing, and reports it', async () => {
    const reasons: string[] = []
    const mailer = new SmtpMailer(
      smtpSettings({ AUTHSVC_MAILER_TEMPLATES_RECOVERY: `${templates.url}/gone.html` }),
      {
        clock: new FakeClock(),
        onTemplateFallback: (_kind, _url, reason) => reasons.push(reason.message),
      },
    )
    await mailer.send(message('carl@example.com', { kind: 'recovery' }))
    const mail = await inbox.store.waitFor('carl@example.com')
    expect(mail.subject).toBe('Reset your password')
    expect(mail.html).toContain('Reset your password')
    expect(reasons).toEqual(['template URL answered 404'])
  })

  /** @see issue 25, item 19: both branches of an {{ if }} were sent. */
  it('renders a conditional template to one language, and falls back when an action fails', async () => {
    const reasons: string[] = []
    const mailer = new SmtpMailer(
      smtpSettings({
        AUTHSVC_MAILER_TEMPLATES_CONFIRMATION: `${templates.url}/bilingual.html`,
        AUTHSVC_MAILER_TEMPLATES_RECOVERY: `${templates.url}/fails.html`,
      }),
      {
        clock: new FakeClock(),
        onTemplateFallback: (_k, _u, reason) => reasons.push(reason.message),
      },
    )
    await mailer.send(
      message('gil@example.com', { data: { lang: 'fr', name: 'Gil <3', prefs: { b: 2, a: 1 } } }),
    )
    const mail = await inbox.store.waitFor('gil@example.com')
    expect(mail.html).toBe('<p>Bonjour Gil &lt;3</p><i>a:1</i><i>b:2</i>')
    await mailer.send(message('hal@example.com', { kind: 'recovery', data: { name: 'Hal' } }))
    expect((await inbox.store.waitFor('hal@example.com')).html).toContain('Reset your password')
    expect(reasons).toEqual(['incompatible types for comparison'])
  })

  it('throws, naming the server, when the SMTP server is down', async () => {
    const port = await getFreePort()
    const mailer = new SmtpMailer(smtpSettings({ AUTHSVC_SMTP_PORT: String(port) }), {
      clock: new FakeClock(),
      timeoutMs: 2000,
    })
    await expect(mailer.send(message('dan@example.com'))).rejects.toThrow(
      new RegExp(`^sending the confirmation mail through 127\\.0\\.0\\.1:${String(port)} failed: `),
    )
  })
})

describe('the app with SMTP_HOST set', () => {
  it('chooses the SMTP mailer: a sign-up confirmation arrives with its verify link', async () => {
    const server = await startTestServer('mailer_app', {
      AUTHSVC_MAILER_AUTOCONFIRM: 'false',
      AUTHSVC_SMTP_HOST: '127.0.0.1',
      AUTHSVC_SMTP_PORT: String(inbox.smtp.port),
      AUTHSVC_SMTP_ADMIN_EMAIL: 'no-reply@example.com',
    })
    try {
      const res = await server.request('POST', '/signup', {
        body: { email: 'erin@example.com', password: 'password123' },
      })
      expect(res.statusCode).toBe(200)
      const mail = await inbox.store.waitFor('erin@example.com')
      expect(mail.from).toBe('no-reply@example.com')
      expect(mail.subject).toBe('Confirm your email address')
      const link = new URL(mail.links[0] ?? '')
      expect(link.origin + link.pathname).toBe('http://127.0.0.1:9999/verify')
      expect(link.searchParams.get('type')).toBe('signup')
      expect(link.searchParams.get('token')).toMatch(/^[0-9a-f]{56}$/)
    } finally {
      await server.close()
    }
  })

  it('answers a sign-up with an error, not a crash, when the SMTP server is down', async () => {
    const server = await startTestServer('mailer_down', {
      AUTHSVC_MAILER_AUTOCONFIRM: 'false',
      AUTHSVC_SMTP_HOST: '127.0.0.1',
      AUTHSVC_SMTP_PORT: String(await getFreePort()),
      AUTHSVC_SMTP_ADMIN_EMAIL: 'no-reply@example.com',
    })
    try {
      const res = await server.request('POST', '/signup', {
        body: { email: 'fay@example.com', password: 'password123' },
      })
      expect(res.statusCode).toBe(500)
      expect(res.json().msg).toBe('Error sending confirmation email')
    } finally {
      await server.close()
    }
  })
})
