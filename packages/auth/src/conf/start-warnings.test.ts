import { describe, expect, it } from 'vitest'
import { loadSettings } from './settings.js'
import { startWarnings } from './start-warnings.js'

const base = {
  AUTHSVC_SITE_URL: 'http://localhost:3000',
  AUTHSVC_API_EXTERNAL_URL: 'http://127.0.0.1:9999',
  AUTHSVC_JWT_SECRET: 'test-secret-with-at-least-32-characters!!',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'pglite://memory',
}
const settingsOf = (env: Record<string, string>) => loadSettings({ ...base, ...env })
const smtp = { AUTHSVC_SMTP_HOST: 'smtp.example.com', AUTHSVC_SMTP_ADMIN_EMAIL: 'a@example.com' }

describe('startWarnings', () => {
  it('warns when sign-ups must be confirmed by mail and no SMTP_HOST is set', () => {
    const warnings = startWarnings(settingsOf({}))
    expect(warnings).toEqual([
      {
        setting: 'SMTP_HOST',
        message:
          'SMTP_HOST is not set, so no mail can be sent, and MAILER_AUTOCONFIRM is off: email ' +
          'sign-ups are created unconfirmed and never get their confirmation mail, so they ' +
          'cannot sign in; recovery, magic-link, invite and email-change mails are dropped too. ' +
          'Set SMTP_HOST (and SMTP_PORT, SMTP_USER, SMTP_PASS), or MAILER_AUTOCONFIRM=true to ' +
          'confirm sign-ups at once.',
      },
    ])
  })

  it('warns when phone sign-ups must be confirmed by SMS and no SMS_PROVIDER is set', () => {
    const warnings = startWarnings(settingsOf({ AUTHSVC_EXTERNAL_PHONE_ENABLED: 'true', ...smtp }))
    expect(warnings).toEqual([
      {
        setting: 'SMS_PROVIDER',
        message:
          'SMS_PROVIDER is not set, so no SMS can be sent, and SMS_AUTOCONFIRM is off: phone ' +
          'sign-ups and phone sign-in codes fail with 422 sms_send_failed and store nothing ' +
          '(except for the numbers of SMS_TEST_OTP). Set SMS_PROVIDER and its SMS_<PROVIDER>_* ' +
          'settings, or SMS_AUTOCONFIRM=true to confirm phone sign-ups at once.',
      },
    ])
  })

  it('is silent when confirmations can be sent, are not needed, or the sender is injected', () => {
    expect(startWarnings(settingsOf(smtp))).toEqual([])
    expect(startWarnings(settingsOf({ AUTHSVC_MAILER_AUTOCONFIRM: 'true' }))).toEqual([])
    expect(startWarnings(settingsOf({ AUTHSVC_EXTERNAL_EMAIL_ENABLED: 'false' }))).toEqual([])
    const phone = { AUTHSVC_EXTERNAL_PHONE_ENABLED: 'true', AUTHSVC_MAILER_AUTOCONFIRM: 'true' }
    expect(startWarnings(settingsOf({ ...phone, AUTHSVC_SMS_AUTOCONFIRM: 'true' }))).toEqual([])
    expect(startWarnings(settingsOf({}), { mailer: true, sms: true })).toEqual([])
    expect(startWarnings(settingsOf(phone), { mailer: false, sms: true })).toEqual([])
  })

  it('warns when the JWT_KEYS signing key is one auth-js getClaims() cannot verify', () => {
    const keys = (jwks: object[]) => ({ ...smtp, AUTHSVC_JWT_KEYS: JSON.stringify(jwks) })
    const okp = { kty: 'OKP', crv: 'Ed25519', x: 'x', d: 'd' }
    const rsa = { kty: 'RSA', n: 'n', e: 'AQAB', d: 'd' }
    const [warning, ...others] = startWarnings(settingsOf(keys([okp])))
    expect(others).toEqual([])
    expect(warning?.setting).toBe('JWT_KEYS')
    expect(warning?.message).toContain('signs EdDSA')
    // The signing key decides, not the first: an RSA signer with an EdDSA key kept for checks.
    expect(
      startWarnings(
        settingsOf(
          keys([
            { ...okp, key_ops: ['verify'] },
            { ...rsa, key_ops: ['sign'] },
          ]),
        ),
      ),
    ).toEqual([])
    expect(startWarnings(settingsOf(keys([rsa])))).toEqual([])
    expect(startWarnings(settingsOf(keys([{ ...rsa, alg: 'RS512' }])))).toHaveLength(1)
  })
})
