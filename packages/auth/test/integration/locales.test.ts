import { FakeClock, startHttpServer, type TestHttpServer } from '@gatehouse/testing'
import { startMailInbox, type MailInbox } from '@gatehouse/mail-inbox'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadSettings, SmtpMailer, type MailMessage, type Settings } from '@gatehouse/auth'
import { startFakeApi, type FakeApi } from '../support/fake-form-api.js'
import { authJsClient } from '../support/auth-js.js'
import { startTestServer, testEnv, type TestServer } from '../helpers.js'

/**
 * Mails and SMS in the reader's language (beyond upstream, supabase/auth#80):
 * `MAILER_SUBJECTS_<KIND>_<LOCALE>`, `MAILER_TEMPLATES_<KIND>_<LOCALE>` and
 * `SMS_TEMPLATE_<LOCALE>`, chosen from `user_metadata.locale`, else the request's
 * `Accept-Language`, else the default texts. Each fallback step is a test; the mails go through
 * a real SMTP server (the development inbox), which shows the language they were rendered in.
 */
let inbox: MailInbox
let templates: TestHttpServer
const fetched: string[] = []

beforeAll(async () => {
  inbox = await startMailInbox()
  templates = await startHttpServer((req, res) => {
    fetched.push(req.url ?? '')
    const bodies: Record<string, string> = {
      '/de.html': '<p>Bitte bestätigen: <a href="{{ .ConfirmationURL }}">Bestätigen</a></p>',
      '/fr.html': '<p>Veuillez confirmer : <a href="{{ .ConfirmationURL }}">Confirmer</a></p>',
      '/recovery-fr.html': '<p>Réinitialisez : <a href="{{ .ConfirmationURL }}">ici</a></p>',
    }
    const body = bodies[req.url ?? '']
    if (body === undefined) res.writeHead(404).end()
    else res.writeHead(200, { 'content-type': 'text/html' }).end(body)
  })
})
afterAll(async () => {
  await inbox.close()
  await templates.close()
})

/** The localized texts the tests configure. */
function localeEnv(): Record<string, string> {
  return {
    AUTHSVC_SMTP_HOST: '127.0.0.1',
    AUTHSVC_SMTP_PORT: String(inbox.smtp.port),
    AUTHSVC_SMTP_ADMIN_EMAIL: 'no-reply@example.com',
    GOTRUE_MAILER_SUBJECTS_CONFIRMATION_DE: 'Bestätigen Sie Ihre Anmeldung',
    GOTRUE_MAILER_TEMPLATES_CONFIRMATION_DE: `${templates.url}/de.html`,
    AUTHSVC_MAILER_SUBJECTS_CONFIRMATION_FR: 'Confirmez votre inscription',
    AUTHSVC_MAILER_TEMPLATES_CONFIRMATION_FR: `${templates.url}/fr.html`,
    AUTHSVC_MAILER_SUBJECTS_CONFIRMATION_PT_BR: 'Confirme seu cadastro',
    AUTHSVC_MAILER_SUBJECTS_RECOVERY_FR: 'Réinitialisez votre mot de passe',
    AUTHSVC_MAILER_TEMPLATES_RECOVERY_FR: `${templates.url}/recovery-fr.html`,
  }
}

function settingsWith(overrides: Record<string, string> = {}): Settings {
  return loadSettings(testEnv('postgres://unused/db', { ...localeEnv(), ...overrides }))
}

const message = (to: string, extra: Partial<MailMessage> = {}): MailMessage => ({
  kind: 'confirmation',
  to,
  confirmationUrl: 'http://127.0.0.1:9999/verify?token=abc&type=signup',
  token: '123456',
  tokenHash: 'abc',
  redirectTo: '',
  data: {},
  ...extra,
})

describe('settings: the <LOCALE> families', () => {
  it('reads each language under its canonical tag, with either prefix', () => {
    const settings = settingsWith({ AUTHSVC_SMS_TEMPLATE_ZH_HANT: '您的驗證碼是 {{ .Code }}' })
    expect(settings.mailer.localeSubjects.confirmation).toEqual({
      de: 'Bestätigen Sie Ihre Anmeldung',
      fr: 'Confirmez votre inscription',
      'pt-BR': 'Confirme seu cadastro',
    })
    expect(Object.keys(settings.mailer.localeTemplates.confirmation).sort()).toEqual(['de', 'fr'])
    expect(settings.mailer.localeSubjects.invite).toEqual({})
    expect(settings.sms.localeTemplates).toEqual({ 'zh-Hant': '您的驗證碼是 {{ .Code }}' })
  })

  it('refuses a suffix that is not a language tag, and a subject that does not parse, in one line each', () => {
    expect(() =>
      settingsWith({
        AUTHSVC_MAILER_SUBJECTS_INVITE_GERMAN_LANGUAGE: 'Einladung',
        AUTHSVC_MAILER_SUBJECTS_INVITE_DE: 'Einladung {{ .Oops',
      }),
    ).toThrow(
      /AUTHSVC_MAILER_SUBJECTS_INVITE_DE: is not a valid template[^\n]*\n[^\n]*AUTHSVC_MAILER_SUBJECTS_INVITE_GERMAN_LANGUAGE: must end in a language tag such as DE or PT_BR/,
    )
  })
})

describe('SmtpMailer: each step of the language choice', () => {
  const mailer = (): SmtpMailer => new SmtpMailer(settingsWith(), { clock: new FakeClock() })

  it("1. user_metadata.locale first: the user's language, its subject and template", async () => {
    await mailer().send(
      message('step1@example.com', { data: { locale: 'de' }, acceptLanguage: 'fr' }),
    )
    const mail = await inbox.store.waitFor('step1@example.com')
    expect(mail.subject).toBe('Bestätigen Sie Ihre Anmeldung')
    expect(mail.html).toContain('Bitte bestätigen')
    expect(mail.language).toBe('de')
  })

  it("2. then Accept-Language, best match first: the user's locale has no texts", async () => {
    await mailer().send(
      message('step2@example.com', {
        data: { locale: 'es' },
        acceptLanguage: 'it;q=0.9, fr-CA, en;q=0.1',
      }),
    )
    const mail = await inbox.store.waitFor('step2@example.com')
    expect(mail.subject).toBe('Confirmez votre inscription')
    expect(mail.html).toContain('Veuillez confirmer')
    expect(mail.language).toBe('fr')
  })

  it('3. a language with a subject but no template: its subject, the default template', async () => {
    await mailer().send(message('step3@example.com', { data: { locale: 'pt-br' } }))
    const mail = await inbox.store.waitFor('step3@example.com')
    expect(mail.subject).toBe('Confirme seu cadastro')
    expect(mail.html).toContain('Confirm your email address')
    expect(mail.language).toBe('pt-BR')
  })

  it('4. no match: the default texts, without Content-Language', async () => {
    await mailer().send(
      message('step4@example.com', { data: { locale: 'pt' }, acceptLanguage: 'ja, *' }),
    )
    const mail = await inbox.store.waitFor('step4@example.com')
    expect(mail.subject).toBe('Confirm your email address')
    expect(mail.language).toBe('')
    expect(mail.headers.some((h) => h.name.toLowerCase() === 'content-language')).toBe(false)
  })

  it('5. a kind without languages keeps its default texts whatever the reader speaks', async () => {
    await mailer().send(message('step5@example.com', { kind: 'invite', data: { locale: 'de' } }))
    const mail = await inbox.store.waitFor('step5@example.com')
    expect(mail.subject).toBe("You've been invited")
    expect(mail.language).toBe('')
  })
})

describe('through the server and @supabase/auth-js', () => {
  let server: TestServer
  let sms: FakeApi

  beforeAll(async () => {
    sms = await startFakeApi({
      path: '/2010-04-01/Accounts/AC0123/Messages.json',
      authorized: () => true,
      unauthorized: [401, {}],
      success: (r) => [201, { sid: 'SM1', status: 'queued', to: r.form.To }],
      failure: [400, { code: 21211, message: 'bad number', more_info: '', status: 400 }],
    })
    server = await startTestServer('locales', {
      ...localeEnv(),
      AUTHSVC_MAILER_AUTOCONFIRM: 'false',
      AUTHSVC_EXTERNAL_PHONE_ENABLED: 'true',
      AUTHSVC_SMS_PROVIDER: 'twilio',
      AUTHSVC_SMS_TWILIO_ACCOUNT_SID: 'AC0123',
      AUTHSVC_SMS_TWILIO_AUTH_TOKEN: 'secret',
      AUTHSVC_SMS_TWILIO_MESSAGE_SERVICE_SID: 'MG0456',
      AUTHSVC_SMS_TWILIO_API_URL: sms.url,
      AUTHSVC_SMS_TEMPLATE_DE: 'Ihr Code lautet {{ .Code }}',
    })
    await server.listen()
  })
  afterAll(async () => {
    await server.close()
    await sms.close()
  })

  it('signUp with data.locale: the confirmation mail in German', async () => {
    const auth = authJsClient(server.url)
    const { error } = await auth.signUp({
      email: 'anna@example.com',
      password: 'password-1234',
      options: { data: { locale: 'de' } },
    })
    expect(error).toBeNull()
    const mail = await inbox.store.waitFor('anna@example.com')
    expect([mail.subject, mail.language]).toEqual(['Bestätigen Sie Ihre Anmeldung', 'de'])
    expect(mail.html).toContain('Bitte bestätigen')
  })

  it("signUp without a locale: the browser's Accept-Language picks French", async () => {
    const auth = authJsClient(server.url, { headers: { 'Accept-Language': 'fr-FR,fr;q=0.9' } })
    expect(
      (await auth.signUp({ email: 'jeanne@example.com', password: 'password-1234' })).error,
    ).toBeNull()
    const mail = await inbox.store.waitFor('jeanne@example.com')
    expect([mail.subject, mail.language]).toEqual(['Confirmez votre inscription', 'fr'])
  })

  it('a queued mail keeps the language of the request that queued it (recovery)', async () => {
    const created = await server.request('POST', '/admin/users', {
      token: server.serviceKey,
      body: { email: 'louise@example.com', password: 'password-1234', email_confirm: true },
    })
    expect(created.statusCode).toBe(200)
    const auth = authJsClient(server.url, { headers: { 'Accept-Language': 'fr' } })
    expect((await auth.resetPasswordForEmail('louise@example.com')).error).toBeNull()
    await server.app.flushMail()
    const mail = await inbox.store.waitFor('louise@example.com')
    expect([mail.subject, mail.language]).toEqual(['Réinitialisez votre mot de passe', 'fr'])
    expect(mail.html).toContain('Réinitialisez')
  })

  it('an SMS code in the language of user_metadata.locale, else SMS_TEMPLATE', async () => {
    const german = authJsClient(server.url)
    const signed = await german.signUp({
      phone: '+15550401001',
      password: 'password-1234',
      options: { data: { locale: 'de-AT' } },
    })
    expect(signed.error).toBeNull()
    const english = authJsClient(server.url, { headers: { 'Accept-Language': 'en-GB' } })
    expect(
      (await english.signUp({ phone: '+15550401002', password: 'password-1234' })).error,
    ).toBeNull()
    const bodyTo = (phone: string) => sms.requests.find((r) => r.form.To === phone)?.form.Body
    expect(bodyTo('+15550401001')).toMatch(/^Ihr Code lautet \d{6}$/)
    expect(bodyTo('+15550401002')).toMatch(/^Your code is \d{6}$/)
  })
})
