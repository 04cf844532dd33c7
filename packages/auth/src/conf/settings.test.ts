import { generateKeyPairSync } from 'node:crypto'
import { SettingsError } from '@gatehouse/settings'
import { describe, expect, it } from 'vitest'
import { passwordHasherFor } from '../server.js'
import { DEFAULT_SUBJECTS } from '../mailer/default-templates.js'
import { MAIL_KINDS } from '../mailer/mailer.js'
import { loadSettings, splitRequiredCharacters } from './settings.js'

const REQUIRED = {
  AUTHSVC_SITE_URL: 'http://localhost:3000',
  AUTHSVC_API_EXTERNAL_URL: 'http://localhost:9999',
  AUTHSVC_JWT_SECRET: 'a-secret-of-thirty-two-bytes-or-more',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'postgres://localhost/db',
}

function problems(env: Record<string, string>): readonly string[] {
  try {
    loadSettings(env)
  } catch (error) {
    if (error instanceof SettingsError) return error.problems
    throw error
  }
  return []
}

describe('loadSettings', () => {
  it('applies upstream defaults', () => {
    const s = loadSettings(REQUIRED)
    expect(s.port).toBe(8081)
    expect(s.jwt).toMatchObject({
      expMs: 3_600_000,
      adminRoles: ['service_role', 'supabase_admin'],
      adminGroupName: 'admin',
    })
    expect(s.password).toEqual({
      minLength: 6,
      requiredCharacters: [],
      hashConcurrency: 0,
      hashQueueSize: 100,
      hibp: {
        enabled: false,
        failClosed: false,
        userAgent: 'https://github.com/supabase/gotrue',
        apiUrl: 'https://api.pwnedpasswords.com',
        timeoutMs: 5000,
        bloom: { enabled: false, items: 100_000, falsePositives: 0.0000099 },
      },
    })
    expect(s.security).toEqual({
      refreshTokenRotationEnabled: true,
      refreshTokenReuseIntervalMs: 0,
      updatePasswordRequireReauthentication: false,
      manualLinkingEnabled: false,
      manualLinkingRequireSiteReferer: true,
      otpMaxAttempts: 5,
      allowPrivateUrls: false,
      captcha: {
        enabled: false,
        provider: 'hcaptcha',
        secret: '',
        timeoutMs: 10_000,
        verifyUrl: 'https://hcaptcha.com/siteverify',
      },
    })
    expect(s.customOauth).toEqual({ enabled: true, maxProviders: 0, encryptionKey: '' })
    expect(s.external).toMatchObject({
      emailEnabled: true,
      phoneEnabled: false,
      anonymousUsersEnabled: false,
    })
    expect(s.db).toEqual({
      driver: 'postgres',
      url: 'postgres://localhost/db',
      maxPoolSize: 0,
      namespace: '',
      cleanupIntervalMs: 600_000,
      startRetryMs: 30_000,
    })
    expect(s.log).toEqual({ level: 'info', file: '', auditDisablePostgres: false })
    expect(s.saml).toEqual({
      enabled: false,
      privateKey: '',
      privateKeyNext: '',
      allowEncryptedAssertions: false,
      relayStateValidityPeriodMs: 120_000,
      externalUrl: '',
      rateLimitAssertion: 15,
    })
    expect(Object.isFrozen(s.jwt)).toBe(true)
  })

  it('lists every problem in one error', () => {
    expect(problems({ AUTHSVC_DB_DRIVER: 'mysql', AUTHSVC_JWT_EXP: 'soon', PORT: 'x' })).toEqual([
      'AUTHSVC_SITE_URL: required',
      'AUTHSVC_API_EXTERNAL_URL: required',
      'AUTHSVC_DB_DRIVER: must be postgres (got "mysql")',
      'AUTHSVC_DB_DATABASE_URL (or DATABASE_URL): required',
      'AUTHSVC_JWT_SECRET: required unless AUTHSVC_JWT_KEYS holds a signing key',
      'AUTHSVC_JWT_EXP: must be an integer of at least 1 (got "soon")',
      'PORT: must be an integer of at least 0 (got "x")',
    ])
  })

  it('never echoes secret values in problems', () => {
    const list = problems({ ...REQUIRED, DATABASE_URL: 'mysql://user:pw@host/db' })
    expect(list).toEqual(['DATABASE_URL: must start with postgres://, postgresql:// or pglite://'])
    expect(list.join()).not.toContain('pw@host')
  })

  it('accepts GOTRUE_ names and prefers AUTHSVC_ ones; unprefixed PORT/DATABASE_URL/LOG_LEVEL', () => {
    const s = loadSettings({
      GOTRUE_SITE_URL: 'http://site',
      GOTRUE_API_EXTERNAL_URL: 'http://api',
      GOTRUE_JWT_SECRET: 'gotrue-secret-of-thirty-two-bytes-or-more',
      AUTHSVC_JWT_SECRET: 'authsvc-secret-of-thirty-two-bytes-or-more',
      GOTRUE_DB_DRIVER: 'postgres',
      DATABASE_URL: 'pglite://memory',
      PORT: '9999',
      LOG_LEVEL: 'debug',
      GOTRUE_JWT_EXP: '60',
    })
    expect(s).toMatchObject({ siteUrl: 'http://site', port: 9999, log: { level: 'debug' } })
    expect(s.jwt).toMatchObject({
      secret: 'authsvc-secret-of-thirty-two-bytes-or-more',
      expMs: 60_000,
    })
    expect(s.db.url).toBe('pglite://memory')
    expect(loadSettings({ ...REQUIRED, PORT: '1', AUTHSVC_API_PORT: '2' }).port).toBe(2)
  })

  it('parses the reuse interval as seconds or a Go duration', () => {
    const env = { ...REQUIRED, AUTHSVC_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: '10' }
    expect(loadSettings(env).security.refreshTokenReuseIntervalMs).toBe(10_000)
    env.AUTHSVC_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL = '1m30s'
    expect(loadSettings(env).security.refreshTokenReuseIntervalMs).toBe(90_000)
  })

  it('reads the rate limit settings with upstream defaults and refuses bad ones', () => {
    expect(loadSettings(REQUIRED).rateLimit).toMatchObject({
      tokenRefresh: 150,
      verify: 30,
      otp: 30,
      sso: 30,
      anonymousUsers: 30,
      smsSent: { events: 30, periodMs: 3_600_000 },
      backend: 'memory',
      serviceAddress: '127.0.0.1:8081',
      domain: 'gatehouse-auth',
      serviceTimeoutMs: 250,
      serviceCoalesce: true,
      failClosed: false,
      passwordFailures: 5,
    })
    const bad = problems({
      ...REQUIRED,
      AUTHSVC_RATE_LIMIT_BACKEND: 'redis',
      AUTHSVC_RATE_LIMIT_SERVICE_ADDRESS: 'localhost',
      AUTHSVC_RATE_LIMIT_VERIFY: '-1',
      AUTHSVC_RATE_LIMIT_SERVICE_COALESCE: 'yes',
    })
    expect(bad).toHaveLength(4)
    expect(bad).toContain(
      'AUTHSVC_RATE_LIMIT_SERVICE_COALESCE: must be a boolean (true/false/1/0) (got "yes")',
    )
    expect(
      loadSettings({ ...REQUIRED, AUTHSVC_RATE_LIMIT_SERVICE_COALESCE: 'false' }).rateLimit
        .serviceCoalesce,
    ).toBe(false)
    expect(bad.join('\n')).toContain('AUTHSVC_RATE_LIMIT_BACKEND: must be one of memory, ratelimit')
    expect(bad.join('\n')).toContain('AUTHSVC_RATE_LIMIT_SERVICE_ADDRESS: must be host:port')
  })

  /** @see issue 8, item 9: a short HS256 secret can be brute-forced from any issued token. */
  it('refuses a JWT_SECRET shorter than 32 bytes, without echoing it', () => {
    expect(problems({ ...REQUIRED, AUTHSVC_JWT_SECRET: 'short-secret' })).toEqual([
      'AUTHSVC_JWT_SECRET: must be at least 32 bytes long (got a value)',
    ])
    expect(
      problems({ ...REQUIRED, GOTRUE_JWT_SECRET: 'x'.repeat(31), AUTHSVC_JWT_SECRET: '' }),
    ).toEqual(['GOTRUE_JWT_SECRET: must be at least 32 bytes long (got a value)'])
    expect(
      loadSettings({ ...REQUIRED, AUTHSVC_JWT_SECRET: 'x'.repeat(32) }).jwt.secret,
    ).toHaveLength(32)
    // Also when JWT_KEYS signs: the secret still verifies HS256 tokens.
    expect(
      problems({ ...REQUIRED, AUTHSVC_JWT_SECRET: 'short', AUTHSVC_JWT_KEYS: '[{"kty":"RSA"}]' }),
    ).toEqual(['AUTHSVC_JWT_SECRET: must be at least 32 bytes long (got a value)'])
  })

  it('does not require JWT_SECRET when JWT_KEYS is set, and checks its shape', () => {
    const env: Record<string, string> = {
      ...REQUIRED,
      AUTHSVC_JWT_SECRET: '',
      AUTHSVC_JWT_KEYS: '[{"kty":"RSA"}]',
    }
    expect(loadSettings(env).jwt.keys).toHaveLength(1)
    env.AUTHSVC_JWT_KEYS = '[1]'
    expect(problems(env)).toContain('AUTHSVC_JWT_KEYS: key 0 is not a JWK (an object with "kty")')
  })

  it('reads API_MAX_REQUEST_DURATION as seconds or a Go duration (default 10 s, 0 = none)', () => {
    expect(loadSettings(REQUIRED).apiMaxRequestDurationMs).toBe(10_000)
    const duration = (value: string) =>
      loadSettings({ ...REQUIRED, AUTHSVC_API_MAX_REQUEST_DURATION: value }).apiMaxRequestDurationMs
    expect([duration('30'), duration('1m30s'), duration('250ms'), duration('0')]).toEqual([
      30_000, 90_000, 250, 0,
    ])
    expect(problems({ ...REQUIRED, GOTRUE_API_MAX_REQUEST_DURATION: 'soon' })).toEqual([
      'GOTRUE_API_MAX_REQUEST_DURATION: must be a number of seconds or a duration such as 10s (got "soon")',
    ])
  })

  it('reads PASSWORD_HIBP_* and refuses a bloom filter it cannot size', () => {
    const settings = loadSettings({
      ...REQUIRED,
      AUTHSVC_PASSWORD_HIBP_ENABLED: 'true',
      GOTRUE_PASSWORD_HIBP_FAIL_CLOSED: 'true',
      AUTHSVC_PASSWORD_HIBP_API_URL: 'http://127.0.0.1:8080/hibp',
      AUTHSVC_PASSWORD_HIBP_TIMEOUT: '750ms',
      AUTHSVC_PASSWORD_HIBP_BLOOM_ENABLED: 'true',
      AUTHSVC_PASSWORD_HIBP_BLOOM_ITEMS: '500',
      AUTHSVC_PASSWORD_HIBP_BLOOM_FALSE_POSITIVES: '0.001',
    })
    expect(settings.password.hibp).toMatchObject({
      enabled: true,
      failClosed: true,
      apiUrl: 'http://127.0.0.1:8080/hibp',
      timeoutMs: 750,
      bloom: { enabled: true, items: 500, falsePositives: 0.001 },
    })
    for (const [name, value] of [
      ['AUTHSVC_PASSWORD_HIBP_BLOOM_ITEMS', '0'],
      ['AUTHSVC_PASSWORD_HIBP_BLOOM_ITEMS', '10000001'],
      ['AUTHSVC_PASSWORD_HIBP_BLOOM_FALSE_POSITIVES', '1'],
      ['AUTHSVC_PASSWORD_HIBP_API_URL', 'not a url'],
    ] as const) {
      expect(() => loadSettings({ ...REQUIRED, [name]: value })).toThrow(name)
    }
  })

  it('reads the password hashing bounds (0 concurrency: one per core)', () => {
    const settings = loadSettings({
      ...REQUIRED,
      AUTHSVC_PASSWORD_HASH_CONCURRENCY: '3',
      AUTHSVC_PASSWORD_HASH_QUEUE_SIZE: '0',
    })
    expect(settings.password).toMatchObject({ hashConcurrency: 3, hashQueueSize: 0 })
    const hasher = passwordHasherFor(settings)
    expect([hasher.concurrency, hasher.queueSize]).toEqual([3, 0])
    const byCores = passwordHasherFor(loadSettings(REQUIRED), 6)
    expect([byCores.concurrency, byCores.queueSize]).toEqual([6, 100])
    expect(problems({ ...REQUIRED, AUTHSVC_PASSWORD_HASH_QUEUE_SIZE: '-1' })).toEqual([
      'AUTHSVC_PASSWORD_HASH_QUEUE_SIZE: must be an integer of at least 0 (got "-1")',
    ])
  })

  it('raises PASSWORD_MIN_LENGTH below 6 to 6 and checks DB_NAMESPACE', () => {
    expect(loadSettings({ ...REQUIRED, AUTHSVC_PASSWORD_MIN_LENGTH: '3' }).password.minLength).toBe(
      6,
    )
    expect(problems({ ...REQUIRED, AUTHSVC_DB_NAMESPACE: 'Bad-Name' })).toEqual([
      'AUTHSVC_DB_NAMESPACE: must be lower-case letters, digits and underscores (got "Bad-Name")',
    ])
  })
})

describe('loadSettings: attempt limits', () => {
  it('SECURITY_OTP_MAX_ATTEMPTS (5), MFA_PHONE_MAX_UNVERIFIED_FACTORS (2) and MAILER_OTP_EXP (1 hour)', () => {
    const s = loadSettings(REQUIRED)
    expect(s.security.otpMaxAttempts).toBe(5)
    expect(s.mfa.phoneMaxUnverifiedFactors).toBe(2)
    expect(s.mailer.otpExpMs).toBe(3_600_000)
    const set = loadSettings({
      ...REQUIRED,
      AUTHSVC_SECURITY_OTP_MAX_ATTEMPTS: '10',
      AUTHSVC_MFA_PHONE_MAX_UNVERIFIED_FACTORS: '10',
      AUTHSVC_MAILER_OTP_EXP: '86400',
    })
    expect([set.security.otpMaxAttempts, set.mfa.phoneMaxUnverifiedFactors]).toEqual([10, 10])
    expect(set.mailer.otpExpMs).toBe(86_400_000)
    expect(
      problems({
        ...REQUIRED,
        AUTHSVC_SECURITY_OTP_MAX_ATTEMPTS: '0',
        AUTHSVC_MFA_PHONE_MAX_UNVERIFIED_FACTORS: '0',
      }),
    ).toEqual([
      'AUTHSVC_MFA_PHONE_MAX_UNVERIFIED_FACTORS: must be an integer of at least 1 (got "0")',
      'AUTHSVC_SECURITY_OTP_MAX_ATTEMPTS: must be an integer of at least 1 (got "0")',
    ])
  })
})

describe('loadSettings: mail', () => {
  it("applies upstream's mailer and SMTP defaults and the spec's subjects", () => {
    const s = loadSettings(REQUIRED)
    expect(s.mailer).toMatchObject({
      autoconfirm: false,
      otpExpMs: 3_600_000,
      otpLength: 6,
      secureEmailChangeEnabled: true,
      urlPaths: {
        invite: '/verify',
        confirmation: '/verify',
        recovery: '/verify',
        emailChange: '/verify',
      },
    })
    expect(s.mailer.subjects).toEqual(DEFAULT_SUBJECTS)
    expect(s.mailer.subjects.reauthentication).toBe('{{ .Token }} is your verification code')
    expect(Object.keys(s.mailer.templates)).toEqual([...MAIL_KINDS])
    expect(Object.values(s.mailer.templates).every((url) => url === '')).toBe(true)
    // Upstream's seven, and ours: a new sign-in, a recovery code used.
    expect(Object.keys(s.mailer.notifications)).toHaveLength(9)
    expect(Object.values(s.mailer.notifications).every((on) => !on)).toBe(true)
    expect(s.smtp).toEqual({
      host: '',
      port: 587,
      user: '',
      pass: '',
      adminEmail: '',
      senderName: '',
    })
  })

  it('reads subjects, template URLs, URL paths and notification switches by kind', () => {
    const s = loadSettings({
      ...REQUIRED,
      GOTRUE_MAILER_SUBJECTS_MAGIC_LINK: 'Sign in to {{ .SiteURL }}',
      AUTHSVC_MAILER_TEMPLATES_CONFIRMATION: 'https://cdn.example.com/confirm.html',
      AUTHSVC_MAILER_URLPATHS_RECOVERY: '/auth/v1/verify',
      AUTHSVC_MAILER_NOTIFICATIONS_PASSWORD_CHANGED_ENABLED: 'true',
      AUTHSVC_MAILER_NOTIFICATIONS_MFA_FACTOR_UNENROLLED_ENABLED: '1',
      AUTHSVC_MAILER_OTP_LENGTH: '12',
    })
    expect(s.mailer.subjects.magic_link).toBe('Sign in to {{ .SiteURL }}')
    expect(s.mailer.templates.confirmation).toBe('https://cdn.example.com/confirm.html')
    expect(s.mailer.urlPaths.recovery).toBe('/auth/v1/verify')
    expect(s.mailer.notifications).toEqual({
      passwordChanged: true,
      emailChanged: false,
      phoneChanged: false,
      identityLinked: false,
      identityUnlinked: false,
      mfaFactorEnrolled: false,
      mfaFactorUnenrolled: true,
      newSignIn: false,
      mfaRecoveryCodeUsed: false,
    })
    expect(s.mailer.otpLength).toBe(10)
  })

  it('requires SMTP_ADMIN_EMAIL with SMTP_HOST, checks it, and never echoes SMTP_PASS', () => {
    expect(problems({ ...REQUIRED, AUTHSVC_SMTP_HOST: 'smtp.example.com' })).toEqual([
      'AUTHSVC_SMTP_ADMIN_EMAIL: required when AUTHSVC_SMTP_HOST is set',
    ])
    expect(problems({ ...REQUIRED, AUTHSVC_SMTP_ADMIN_EMAIL: 'not an address' })).toEqual([
      'AUTHSVC_SMTP_ADMIN_EMAIL: must be an email address (name@domain) (got "not an address")',
    ])
    expect(problems({ ...REQUIRED, AUTHSVC_SMTP_PORT: '70000' })).toEqual([
      'AUTHSVC_SMTP_PORT: must be an integer from 0 to 65535 (got "70000")',
    ])
    const s = loadSettings({
      ...REQUIRED,
      AUTHSVC_SMTP_HOST: 'smtp.example.com',
      AUTHSVC_SMTP_PORT: '465',
      AUTHSVC_SMTP_USER: 'mailer',
      AUTHSVC_SMTP_PASS: 'hunter2',
      AUTHSVC_SMTP_ADMIN_EMAIL: 'no-reply@example.com',
      AUTHSVC_SMTP_SENDER_NAME: 'Example',
    })
    expect(s.smtp).toEqual({
      host: 'smtp.example.com',
      port: 465,
      user: 'mailer',
      pass: 'hunter2',
      adminEmail: 'no-reply@example.com',
      senderName: 'Example',
    })
  })

  it('refuses a malformed URI_ALLOW_LIST glob and a URL path with a query', () => {
    expect(
      problems({
        ...REQUIRED,
        AUTHSVC_URI_ALLOW_LIST: 'https://ok.example.com/**,https://[bad.com',
        AUTHSVC_MAILER_URLPATHS_INVITE: '/verify?x=1',
      }),
    ).toEqual([
      'AUTHSVC_URI_ALLOW_LIST: "https://[bad.com": [ is not closed by ] (got "https://ok.example.com/**,https://[bad.com")',
      'AUTHSVC_MAILER_URLPATHS_INVITE: must be a path, without spaces, ? or # (got "/verify?x=1")',
    ])
  })
})

describe('loadSettings: mail flows', () => {
  it('applies the defaults of the mail settings (SMTP_MAX_FREQUENCY: 900 s, as the spec says)', () => {
    const s = loadSettings(REQUIRED)
    expect(s.mailer).toMatchObject({
      autoconfirm: false,
      otpExpMs: 3_600_000,
      otpLength: 6,
      secureEmailChangeEnabled: true,
      maxFrequencyMs: 900_000,
      notifications: {
        passwordChanged: false,
        emailChanged: false,
        phoneChanged: false,
        identityLinked: false,
        identityUnlinked: false,
        mfaFactorEnrolled: false,
        mfaFactorUnenrolled: false,
        newSignIn: false,
      },
    })
    expect(s.rateLimit.emailSent).toEqual({ events: 30, periodMs: 3_600_000 })
    expect(s.external.flowStateExpiryMs).toBe(300_000)
  })

  it('applies upstream SMS defaults and reads the SMS settings', () => {
    const s = loadSettings(REQUIRED)
    expect(s.sms).toMatchObject({
      provider: '',
      otpExpMs: 60_000,
      otpLength: 6,
      maxFrequencyMs: 60_000,
      template: 'Your code is {{ .Code }}',
      testOtp: {},
      testOtpValidUntil: null,
      twilio: { apiUrl: 'https://api.twilio.com' },
      twilioVerify: { apiUrl: 'https://verify.twilio.com' },
      messagebird: { apiUrl: 'https://rest.messagebird.com' },
      textlocal: { apiUrl: 'https://api.textlocal.in' },
      vonage: { apiUrl: 'https://rest.nexmo.com' },
    })
    expect(s.rateLimit.smsSent).toEqual({ events: 30, periodMs: 3_600_000 })
    const set = loadSettings({
      ...REQUIRED,
      AUTHSVC_SMS_PROVIDER: 'vonage',
      AUTHSVC_SMS_VONAGE_API_KEY: 'key',
      AUTHSVC_SMS_VONAGE_API_SECRET: 'secret',
      AUTHSVC_SMS_VONAGE_FROM: 'Gatehouse',
      AUTHSVC_SMS_OTP_LENGTH: '4',
      AUTHSVC_SMS_MAX_FREQUENCY: '2m',
      AUTHSVC_SMS_TEST_OTP: '+15551230000:123456,4915112345678:654321',
      AUTHSVC_SMS_TEST_OTP_VALID_UNTIL: '2030-01-01T00:00:00Z',
      AUTHSVC_RATE_LIMIT_SMS_SENT: '10/1m',
    })
    expect(set.sms).toMatchObject({
      provider: 'vonage',
      otpLength: 6,
      maxFrequencyMs: 120_000,
      testOtp: { '15551230000': '123456', '4915112345678': '654321' },
      testOtpValidUntil: Date.UTC(2030, 0, 1),
      vonage: { apiKey: 'key', apiSecret: 'secret', from: 'Gatehouse' },
    })
    expect(set.rateLimit.smsSent).toEqual({ events: 10, periodMs: 60_000 })
  })

  it('reports unknown SMS providers, missing credentials and bad test codes', () => {
    expect(problems({ ...REQUIRED, AUTHSVC_SMS_PROVIDER: 'pigeon' })).toEqual([
      'AUTHSVC_SMS_PROVIDER: must be one of twilio, twilio_verify, messagebird, textlocal, vonage (got "pigeon")',
    ])
    expect(
      problems({
        ...REQUIRED,
        AUTHSVC_SMS_PROVIDER: 'twilio',
        AUTHSVC_SMS_TWILIO_ACCOUNT_SID: 'AC1',
      }),
    ).toEqual([
      'AUTHSVC_SMS_TWILIO_AUTH_TOKEN: required when AUTHSVC_SMS_PROVIDER is twilio',
      'AUTHSVC_SMS_TWILIO_MESSAGE_SERVICE_SID: required when AUTHSVC_SMS_PROVIDER is twilio',
    ])
    expect(problems({ ...REQUIRED, AUTHSVC_SMS_PROVIDER: 'twilio_verify' })).toEqual([
      'AUTHSVC_SMS_TWILIO_VERIFY_ACCOUNT_SID: required when AUTHSVC_SMS_PROVIDER is twilio_verify',
      'AUTHSVC_SMS_TWILIO_VERIFY_AUTH_TOKEN: required when AUTHSVC_SMS_PROVIDER is twilio_verify',
      'AUTHSVC_SMS_TWILIO_VERIFY_MESSAGE_SERVICE_SID: required when AUTHSVC_SMS_PROVIDER is twilio_verify',
    ])
    expect(problems({ ...REQUIRED, AUTHSVC_SMS_TEST_OTP: '+1555:abc' })).toEqual([
      'AUTHSVC_SMS_TEST_OTP: must be <phone>:<otp> pairs of digits, such as 15551234567:123456 (got "+1555:abc")',
    ])
    expect(problems({ ...REQUIRED, AUTHSVC_SMS_TEST_OTP_VALID_UNTIL: 'tomorrow' })).toEqual([
      'AUTHSVC_SMS_TEST_OTP_VALID_UNTIL: must be an RFC 3339 time such as 2030-01-01T00:00:00Z (got "tomorrow")',
    ])
    expect(problems({ ...REQUIRED, AUTHSVC_RATE_LIMIT_SMS_SENT: 'lots' })).toEqual([
      'AUTHSVC_RATE_LIMIT_SMS_SENT: must be a number of SMS messages per hour, or N/<duration> such as 10/5m (got "lots")',
    ])
  })

  it('reads SAML_*: the key as upstream (Base64 PKCS#1 RSA ≥ 2048, e 65537), required when enabled', () => {
    const rsa = (bits: number, publicExponent = 65537) =>
      generateKeyPairSync('rsa', { modulusLength: bits, publicExponent })
        .privateKey.export({ type: 'pkcs1', format: 'der' })
        .toString('base64')
    const key = rsa(2048)
    const s = loadSettings({
      ...REQUIRED,
      AUTHSVC_SAML_ENABLED: 'true',
      AUTHSVC_SAML_PRIVATE_KEY: key,
      AUTHSVC_SAML_RELAY_STATE_VALIDITY_PERIOD: '5m',
    })
    expect(s.saml.privateKey).toBe(key)
    expect(s.saml.relayStateValidityPeriodMs).toBe(300_000)
    expect(problems({ ...REQUIRED, AUTHSVC_SAML_ENABLED: 'true' })).toEqual([
      'AUTHSVC_SAML_PRIVATE_KEY: required when AUTHSVC_SAML_ENABLED is true',
    ])
    const refused = (value: string) =>
      problems({ ...REQUIRED, AUTHSVC_SAML_PRIVATE_KEY_NEXT: value }).join('\n')
    expect(refused('not base64!')).toMatch(/standard Base64/)
    expect(refused(Buffer.from('junk').toString('base64'))).toMatch(/PKCS#1/)
    const weak = rsa(1024)
    expect(refused(weak)).toMatch(/at least RSA 2048/)
    expect(refused(weak)).not.toContain(weak.slice(0, 40))
    expect(refused(rsa(2048, 3))).toMatch(/65537/)
    expect(refused(key)).toBe('')
  })

  it('reads the captcha settings: provider case-insensitive, secret required when enabled', () => {
    const s = loadSettings({
      ...REQUIRED,
      AUTHSVC_SECURITY_CAPTCHA_ENABLED: 'true',
      AUTHSVC_SECURITY_CAPTCHA_PROVIDER: 'Turnstile',
      AUTHSVC_SECURITY_CAPTCHA_SECRET: ' s3cret ',
      AUTHSVC_SECURITY_CAPTCHA_TIMEOUT: '2s',
    })
    expect(s.security.captcha).toEqual({
      enabled: true,
      provider: 'turnstile',
      secret: 's3cret',
      timeoutMs: 2000,
      verifyUrl: 'https://challenges.cloudflare.com/turnstile/v0/siteverify',
    })
    expect(
      loadSettings({ ...REQUIRED, AUTHSVC_SECURITY_CAPTCHA_VERIFY_URL: 'http://127.0.0.1:1/v' })
        .security.captcha.verifyUrl,
    ).toBe('http://127.0.0.1:1/v')
    expect(problems({ ...REQUIRED, AUTHSVC_SECURITY_CAPTCHA_ENABLED: 'true' })).toEqual([
      'AUTHSVC_SECURITY_CAPTCHA_SECRET: required when AUTHSVC_SECURITY_CAPTCHA_ENABLED is on',
    ])
    expect(problems({ ...REQUIRED, AUTHSVC_SECURITY_CAPTCHA_PROVIDER: 'recaptcha' })).toHaveLength(
      1,
    )
  })

  it('reads the passkey and WebAuthn settings; the relying party is required with passkeys on', () => {
    const s = loadSettings({
      ...REQUIRED,
      GOTRUE_PASSKEY_ENABLED: 'true',
      GOTRUE_PASSKEY_MAX_PASSKEYS_PER_USER: '3',
      GOTRUE_WEBAUTHN_RP_ID: 'example.com',
      GOTRUE_WEBAUTHN_RP_DISPLAY_NAME: 'Example',
      GOTRUE_WEBAUTHN_RP_ORIGINS: 'https://example.com,https://app.example.com',
      GOTRUE_WEBAUTHN_CHALLENGE_EXPIRY_DURATION: '2m',
      GOTRUE_RATE_LIMIT_PASSKEY: '12',
    })
    expect(s.passkey).toEqual({ enabled: true, maxPasskeysPerUser: 3 })
    expect(s.webauthn).toEqual({
      rpId: 'example.com',
      rpDisplayName: 'Example',
      rpOrigins: ['https://example.com', 'https://app.example.com'],
      challengeExpiryMs: 120_000,
    })
    expect(s.rateLimit.passkey).toBe(12)
    const d = loadSettings(REQUIRED)
    expect(d.passkey).toEqual({ enabled: false, maxPasskeysPerUser: 10 })
    expect(d.webauthn.challengeExpiryMs).toBe(300_000)
    expect(d.rateLimit.passkey).toBe(30)
    expect(problems({ ...REQUIRED, AUTHSVC_MFA_WEB_AUTHN_VERIFY_ENABLED: 'true' })).toContain(
      'AUTHSVC_WEBAUTHN_RP_ID: required when MFA_WEB_AUTHN_ENROLL_ENABLED or MFA_WEB_AUTHN_VERIFY_ENABLED is on',
    )
    expect(problems({ ...REQUIRED, AUTHSVC_PASSKEY_ENABLED: 'true' })).toEqual([
      'AUTHSVC_WEBAUTHN_RP_ID: required when PASSKEY_ENABLED is on',
      'AUTHSVC_WEBAUTHN_RP_DISPLAY_NAME: required when PASSKEY_ENABLED is on',
      'AUTHSVC_WEBAUTHN_RP_ORIGINS: required when PASSKEY_ENABLED is on',
    ])
  })

  it('reads RATE_LIMIT_EMAIL_SENT as N or N/<duration>, clamps MAILER_OTP_LENGTH and reads durations', () => {
    const s = loadSettings({
      ...REQUIRED,
      AUTHSVC_RATE_LIMIT_EMAIL_SENT: '5/10m',
      AUTHSVC_MAILER_OTP_LENGTH: '12',
      AUTHSVC_SMTP_MAX_FREQUENCY: '1m',
      AUTHSVC_EXTERNAL_FLOW_STATE_EXPIRY_DURATION: '10s',
      AUTHSVC_MAILER_NOTIFICATIONS_EMAIL_CHANGED_ENABLED: 'true',
    })
    expect(s.rateLimit.emailSent).toEqual({ events: 5, periodMs: 600_000 })
    expect(s.mailer).toMatchObject({ otpLength: 10, maxFrequencyMs: 60_000 })
    expect(s.mailer.notifications.emailChanged).toBe(true)
    expect(s.external.flowStateExpiryMs).toBe(300_000)
    expect(
      loadSettings({ ...REQUIRED, AUTHSVC_RATE_LIMIT_EMAIL_SENT: '0' }).rateLimit.emailSent,
    ).toEqual({ events: 0, periodMs: 3_600_000 })
    for (const bad of ['many', '5/', '5/0s', '5/1h/2', '-1', '5/soon']) {
      expect(problems({ ...REQUIRED, AUTHSVC_RATE_LIMIT_EMAIL_SENT: bad })).toEqual([
        `AUTHSVC_RATE_LIMIT_EMAIL_SENT: must be a number of emails per hour, or N/<duration> such as 10/5m (got "${bad}")`,
      ])
    }
  })
})

describe('loadSettings: external providers', () => {
  it('checks every enabled provider at once, and leaves disabled ones alone', () => {
    expect(
      problems({
        ...REQUIRED,
        AUTHSVC_EXTERNAL_GITHUB_ENABLED: 'true',
        AUTHSVC_EXTERNAL_KEYCLOAK_ENABLED: 'true',
        AUTHSVC_EXTERNAL_KEYCLOAK_CLIENT_ID: 'kc',
        AUTHSVC_EXTERNAL_KEYCLOAK_SECRET: 'kc-secret',
        AUTHSVC_EXTERNAL_KEYCLOAK_REDIRECT_URI: 'http://localhost:9999/callback',
        AUTHSVC_EXTERNAL_GOOGLE_CLIENT_ID: 'unused',
      }),
    ).toEqual([
      'AUTHSVC_EXTERNAL_GITHUB_CLIENT_ID: required when EXTERNAL_GITHUB_ENABLED is true',
      'AUTHSVC_EXTERNAL_GITHUB_SECRET: required when EXTERNAL_GITHUB_ENABLED is true',
      'AUTHSVC_EXTERNAL_GITHUB_REDIRECT_URI: required when EXTERNAL_GITHUB_ENABLED is true',
      'AUTHSVC_EXTERNAL_KEYCLOAK_URL: required when EXTERNAL_KEYCLOAK_ENABLED is true (the realm URL)',
    ])
  })

  it('reads each provider, reports /settings switches, and defaults gitlab to gitlab.com', () => {
    const s = loadSettings({
      ...REQUIRED,
      GOTRUE_EXTERNAL_GITHUB_ENABLED: 'true',
      GOTRUE_EXTERNAL_GITHUB_CLIENT_ID: 'id',
      GOTRUE_EXTERNAL_GITHUB_SECRET: 'secret',
      GOTRUE_EXTERNAL_GITHUB_REDIRECT_URI: 'http://localhost:9999/callback',
    })
    expect(s.external.github.enabled).toBe(true)
    expect(s.external.google.enabled).toBe(false)
    expect(s.external.github).toEqual({
      enabled: true,
      clientId: 'id',
      secret: 'secret',
      redirectUri: 'http://localhost:9999/callback',
      url: '',
    })
    expect(s.external.gitlab.url).toBe('https://gitlab.com')
    expect(s.mailer.notifications).toMatchObject({ identityLinked: false, identityUnlinked: false })
  })

  it('trusts the unverified emails of a provider only when EXTERNAL_<P>_TRUST_EMAIL says so', () => {
    const s = loadSettings({ ...REQUIRED, AUTHSVC_EXTERNAL_WORKOS_TRUST_EMAIL: 'true' })
    expect(s.external.workos.trustEmail).toBe(true)
    expect(s.external.figma.trustEmail).toBe(false)
    // GitHub says whether it verified an address: there is nothing to trust.
    expect(s.external.github).not.toHaveProperty('trustEmail')
    expect(() =>
      loadSettings({ ...REQUIRED, AUTHSVC_EXTERNAL_SLACK_TRUST_EMAIL: 'maybe' }),
    ).toThrow(/EXTERNAL_SLACK_TRUST_EMAIL/)
  })

  it('needs the team and key ids with a PEM Apple secret', () => {
    expect(
      problems({
        ...REQUIRED,
        AUTHSVC_EXTERNAL_APPLE_ENABLED: 'true',
        AUTHSVC_EXTERNAL_APPLE_CLIENT_ID: 'com.example.web',
        AUTHSVC_EXTERNAL_APPLE_SECRET:
          '-----BEGIN PRIVATE KEY-----\\nMIG…\\n-----END PRIVATE KEY-----',
        AUTHSVC_EXTERNAL_APPLE_REDIRECT_URI: 'http://localhost:9999/callback',
      }),
    ).toEqual([
      'AUTHSVC_EXTERNAL_APPLE_TEAM_ID: required with a PEM EXTERNAL_APPLE_SECRET',
      'AUTHSVC_EXTERNAL_APPLE_KEY_ID: required with a PEM EXTERNAL_APPLE_SECRET',
    ])
  })
})

describe('loadSettings: booleans', () => {
  /** @see issue 9: booleans are read as upstream's Go `strconv.ParseBool` reads them. */
  it("accepts Go's spellings only (yes and on are refused, as upstream refuses them)", () => {
    const disableSignup = (value: string) =>
      loadSettings({ ...REQUIRED, AUTHSVC_DISABLE_SIGNUP: value }).disableSignup
    expect(['1', 't', 'T', 'TRUE', 'true', 'True'].map(disableSignup)).toEqual(Array(6).fill(true))
    expect(['0', 'f', 'F', 'FALSE', 'false', 'False'].map(disableSignup)).toEqual(
      Array(6).fill(false),
    )
    expect(
      problems({
        ...REQUIRED,
        AUTHSVC_DISABLE_SIGNUP: 'yes',
        GOTRUE_MAILER_AUTOCONFIRM: 'on',
        AUTHSVC_EXTERNAL_GITHUB_ENABLED: 'tRuE',
      }),
    ).toEqual([
      'AUTHSVC_DISABLE_SIGNUP: must be a boolean (true/false/1/0) (got "yes")',
      'AUTHSVC_EXTERNAL_GITHUB_ENABLED: must be a boolean (true/false/1/0) (got "tRuE")',
      'GOTRUE_MAILER_AUTOCONFIRM: must be a boolean (true/false/1/0) (got "on")',
    ])
  })
})

describe('splitRequiredCharacters', () => {
  it('splits on colons and keeps escaped ones', () => {
    expect(splitRequiredCharacters('abc:ABC:0-9')).toEqual(['abc', 'ABC', '0-9'])
    expect(splitRequiredCharacters('ab\\:c:!?')).toEqual(['ab:c', '!?'])
    expect(splitRequiredCharacters('')).toEqual([])
  })
})

describe('telemetry settings', () => {
  it('has upstream defaults: everything off, Prometheus on 0.0.0.0:9100, OTLP http/protobuf', () => {
    expect(loadSettings(REQUIRED).telemetry).toEqual({
      tracingEnabled: false,
      tracingExporter: 'opentelemetry',
      tracingSamplingRate: 1,
      metricsEnabled: false,
      metricsExporter: 'opentelemetry',
      prometheusHost: '0.0.0.0',
      prometheusPort: 9100,
      otlpProtocol: 'http/protobuf',
      otlpEndpoint: '',
      otlpTracesEndpoint: '',
      otlpMetricsEndpoint: '',
      otlpHeaders: {},
      otlpTimeoutMs: 10000,
      metricExportIntervalMs: 60000,
      serviceName: 'gotrue',
      resourceAttributes: {},
      debug: false,
    })
  })

  it('reads the prefixed switches and the OTEL_* variables and DEBUG without a prefix', () => {
    const t = loadSettings({
      ...REQUIRED,
      GOTRUE_TRACING_ENABLED: 'true',
      AUTHSVC_TRACING_SAMPLING_RATE: '0.01',
      AUTHSVC_METRICS_ENABLED: 'true',
      AUTHSVC_METRICS_EXPORTER: 'prometheus',
      OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
      OTEL_EXPORTER_PROMETHEUS_PORT: '9101',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4317',
      OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20x',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod',
      OTEL_SERVICE_NAME: 'auth',
      DEBUG: 'true',
    }).telemetry
    expect(t).toMatchObject({
      tracingEnabled: true,
      tracingSamplingRate: 0.01,
      metricsEnabled: true,
      metricsExporter: 'prometheus',
      prometheusHost: '127.0.0.1',
      prometheusPort: 9101,
      otlpProtocol: 'grpc',
      otlpEndpoint: 'http://collector:4317',
      otlpHeaders: { authorization: 'Bearer x' },
      resourceAttributes: { 'deployment.environment': 'prod' },
      serviceName: 'auth',
      debug: true,
    })
  })

  it('refuses unknown exporters and protocols, and never echoes OTLP header values', () => {
    const found = problems({
      ...REQUIRED,
      AUTHSVC_TRACING_EXPORTER: 'jaeger',
      AUTHSVC_METRICS_EXPORTER: 'statsd',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: 'x=sec%0Dret',
      OTEL_EXPORTER_PROMETHEUS_PORT: '99999',
      AUTHSVC_TRACING_SAMPLING_RATE: '2',
    })
    expect(found.map((p) => p.split(':')[0])).toEqual(
      expect.arrayContaining([
        'AUTHSVC_TRACING_EXPORTER',
        'AUTHSVC_METRICS_EXPORTER',
        'OTEL_EXPORTER_OTLP_PROTOCOL',
        'OTEL_EXPORTER_OTLP_HEADERS',
        'OTEL_EXPORTER_PROMETHEUS_PORT',
        'AUTHSVC_TRACING_SAMPLING_RATE',
      ]),
    )
    expect(found.join('\n')).not.toContain('sec')
  })
})

describe('SESSIONS_* settings', () => {
  it('are off by default and read Go durations in milliseconds', () => {
    expect(loadSettings(REQUIRED).sessions).toEqual({
      timeboxMs: 0,
      inactivityTimeoutMs: 0,
      allowLowAalMs: 0,
      singlePerUser: false,
      tags: [],
    })
    const s = loadSettings({
      ...REQUIRED,
      GOTRUE_SESSIONS_TIMEBOX: '24h',
      GOTRUE_SESSIONS_INACTIVITY_TIMEOUT: '30m',
      GOTRUE_SESSIONS_ALLOW_LOW_AAL: '90s',
      GOTRUE_SESSIONS_SINGLE_PER_USER: 'true',
      GOTRUE_SESSIONS_TAGS: 'web,mobile',
    }).sessions
    expect(s).toEqual({
      timeboxMs: 24 * 3_600_000,
      inactivityTimeoutMs: 30 * 60_000,
      allowLowAalMs: 90_000,
      singlePerUser: true,
      tags: ['web', 'mobile'],
    })
  })

  it('refuse negative and malformed durations', () => {
    expect(() => loadSettings({ ...REQUIRED, AUTHSVC_SESSIONS_TIMEBOX: '-1h' })).toThrow(
      /SESSIONS_TIMEBOX/,
    )
    expect(() => loadSettings({ ...REQUIRED, AUTHSVC_SESSIONS_INACTIVITY_TIMEOUT: '10' })).toThrow(
      /SESSIONS_INACTIVITY_TIMEOUT/,
    )
  })
})

const HOOK_SECRET = 'v1,whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'

describe('HOOK_* settings', () => {
  it('are off by default', () => {
    const s = loadSettings(REQUIRED)
    expect(s.hook.customAccessToken).toEqual({ enabled: false, uri: null, secrets: [] })
    expect(Object.keys(s.hook)).toHaveLength(7)
  })

  it('read each hook point under upstream names', () => {
    const s = loadSettings({
      ...REQUIRED,
      AUTHSVC_HOOK_SEND_EMAIL_ENABLED: 'true',
      AUTHSVC_HOOK_SEND_EMAIL_URI: 'https://hooks.example.com/mail',
      AUTHSVC_HOOK_SEND_EMAIL_SECRETS: HOOK_SECRET,
      GOTRUE_HOOK_MFA_VERIFICATION_ATTEMPT_ENABLED: 'true',
      GOTRUE_HOOK_MFA_VERIFICATION_ATTEMPT_URI: 'pg-functions://postgres/auth_hooks/mfa',
    })
    expect(s.hook.sendEmail).toMatchObject({ enabled: true, uri: { kind: 'http' } })
    expect(s.hook.mfaVerificationAttempt.uri).toMatchObject({ schema: 'auth_hooks', name: 'mfa' })
  })

  it('refuse each mistake with one line naming the variable', () => {
    const found = problems({
      ...REQUIRED,
      AUTHSVC_HOOK_CUSTOM_ACCESS_TOKEN_URI: 'http://hooks.example.com/claims',
      AUTHSVC_HOOK_SEND_SMS_URI: 'ftp://example.com/x',
      AUTHSVC_HOOK_SEND_EMAIL_URI: 'pg-functions://postgres/public/drop table',
      AUTHSVC_HOOK_BEFORE_USER_CREATED_URI: 'pg-functions://postgres/public',
      AUTHSVC_HOOK_AFTER_USER_CREATED_ENABLED: 'true',
      AUTHSVC_HOOK_PASSWORD_VERIFICATION_ATTEMPT_ENABLED: 'true',
      AUTHSVC_HOOK_PASSWORD_VERIFICATION_ATTEMPT_URI: 'https://hooks.example.com/pw',
      AUTHSVC_HOOK_MFA_VERIFICATION_ATTEMPT_SECRETS: 'v1,whsec_short|whsec_abc',
    })
    const line = (name: string) => found.filter((p) => p.includes(name))
    expect(line('HOOK_CUSTOM_ACCESS_TOKEN_URI')[0]).toMatch(
      /http:\/\/ is only allowed for localhost/,
    )
    expect(line('HOOK_SEND_SMS_URI')[0]).toMatch(/scheme ftp: is not supported/)
    expect(line('HOOK_SEND_EMAIL_URI')[0]).toMatch(/invalid function name/)
    expect(line('HOOK_BEFORE_USER_CREATED_URI')[0]).toMatch(/<schema>\/<function>/)
    expect(line('HOOK_AFTER_USER_CREATED_URI')[0]).toMatch(/required when .*_ENABLED is on/)
    expect(line('HOOK_PASSWORD_VERIFICATION_ATTEMPT_SECRETS')[0]).toMatch(/required when/)
    const secrets = line('HOOK_MFA_VERIFICATION_ATTEMPT_SECRETS')
    expect(secrets).toHaveLength(2)
    expect(secrets.join('\n')).toMatch(/secret 1 must be v1,whsec_/)
    expect(secrets.join('\n')).not.toContain('whsec_abc')
  })

  it('refuse an asymmetric secret, which cannot sign', () => {
    const pair = `v1a,whpk_${'A'.repeat(44)}:whsk_${'B'.repeat(44)}`
    expect(problems({ ...REQUIRED, AUTHSVC_HOOK_SEND_SMS_SECRETS: pair })[0]).toMatch(
      /asymmetric v1a/,
    )
  })
})
