import { describe, expect, it } from 'vitest'
import { loadSettings } from '../../conf/settings.js'
import { onOrigin } from '../../form-post.js'
import { InMemoryEmailSendLimiter } from '../../limiter/email-send-limiter.js'
import { systemClock } from '../../clock.js'
import { Hooks } from '../../hooks/hooks.js'
import type { User } from '../../models/user.js'
import { cryptoRandom } from '../../random.js'
import type { Db, Queryable } from '../../storage/db.js'
import type { SmsProvider } from '../../sms/sms-provider.js'
import { TEST_OTP_MESSAGE_ID, sendSmsOtp, smsText } from './sms.js'
import { tokenHash } from './mail.js'

describe('smsText', () => {
  it('puts the code in SMS_TEMPLATE as text, with Go trim markers, dropping other actions', () => {
    expect(smsText('Your code is {{ .Code }}', '123456')).toBe('Your code is 123456')
    expect(smsText('Code:  {{- .Code -}}  <b>&', '42')).toBe('Code:42<b>&')
    // Actions other than .Code vanish, the text between them stays (as in mail templates).
    expect(smsText('{{ .Token }}{{if .Code}}x{{end}}{{.Code}}', '7')).toBe('x7')
  })
})

describe('onOrigin', () => {
  it("keeps the provider's path and takes only scheme, host and port from the setting", () => {
    expect(onOrigin('http://127.0.0.1:8080/proxy/path?q=1', '/sms/json')).toBe(
      'http://127.0.0.1:8080/sms/json',
    )
    expect(onOrigin('https://api.twilio.com', '/2010-04-01/Accounts/AC1/Messages.json')).toBe(
      'https://api.twilio.com/2010-04-01/Accounts/AC1/Messages.json',
    )
  })
})

describe('sendSmsOtp', () => {
  const sent: string[] = []
  const sms: SmsProvider = {
    sendMessage(phone) {
      sent.push(phone)
      return Promise.resolve('id-1')
    },
  }
  const settings = loadSettings({
    AUTHSVC_SITE_URL: 'http://localhost:3000',
    AUTHSVC_API_EXTERNAL_URL: 'http://localhost:9999',
    AUTHSVC_JWT_SECRET: 'a-secret-of-thirty-two-bytes-or-more',
    AUTHSVC_DB_DRIVER: 'postgres',
    DATABASE_URL: 'postgres://localhost/db',
    AUTHSVC_SMS_TEST_OTP: '15550000001:111111',
    AUTHSVC_SMS_TEST_OTP_VALID_UNTIL: '2030-01-01T00:00:00Z',
    AUTHSVC_RATE_LIMIT_SMS_SENT: '1/1h',
  })
  const ctx = {
    settings,
    random: cryptoRandom,
    sms,
    smsLimiter: new InMemoryEmailSendLimiter(settings.rateLimit.smsSent),
    // Every hook off: the database and the user renderer are never reached.
    hooks: new Hooks(settings.hook, {
      db: {} as Db,
      clock: systemClock,
      random: cryptoRandom,
      userJson: () => ({}),
    }),
  }
  const origin = { tx: {} as Queryable, user: {} as User }
  const before = Date.UTC(2029, 0, 1)
  const after = Date.UTC(2030, 0, 2)

  it('uses the fixed code of a test number until SMS_TEST_OTP_VALID_UNTIL, then sends', async () => {
    const test = await sendSmsOtp(ctx, '15550000001', 'sms', 'confirmation', null, before, origin)
    expect(test).toEqual({
      otp: '111111',
      hash: tokenHash('15550000001', '111111'),
      messageId: TEST_OTP_MESSAGE_ID,
    })
    expect(sent).toEqual([])
    const real = await sendSmsOtp(ctx, '15550000001', 'sms', 'confirmation', null, after, origin)
    expect(real.messageId).toBe('id-1')
    expect(real.otp).toMatch(/^\d{6}$/)
    expect(sent).toEqual(['15550000001'])
  })

  it('refuses beyond RATE_LIMIT_SMS_SENT with 429 over_sms_send_rate_limit', async () => {
    await expect(
      sendSmsOtp(ctx, '15550000002', 'sms', 'confirmation', null, after, origin),
    ).rejects.toMatchObject({
      code: 'over_sms_send_rate_limit',
      message: 'SMS rate limit exceeded',
    })
  })
})
