import { describe, expect, it } from 'vitest'
import { loadSettings } from '../../conf/settings.js'
import { validateChannel } from './phone.js'
import { normalizePhone, validatePhone } from './validation.js'

const REQUIRED = {
  AUTHSVC_SITE_URL: 'http://localhost:3000',
  AUTHSVC_API_EXTERNAL_URL: 'http://localhost:9999',
  AUTHSVC_JWT_SECRET: 'a-secret-of-thirty-two-bytes-or-more',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'postgres://localhost/db',
}

const INVALID_CHANNEL =
  "Invalid channel, supported values are 'sms' or 'whatsapp'. 'whatsapp' is only supported if Twilio or Twilio Verify is used as the provider."

describe('validateChannel', () => {
  it("defaults to sms and allows whatsapp only with Twilio or Twilio Verify, as upstream's IsValidMessageChannel", () => {
    const withProvider = (provider: string, extra: Record<string, string> = {}) =>
      loadSettings({ ...REQUIRED, AUTHSVC_SMS_PROVIDER: provider, ...extra })
    const vonage = withProvider('vonage', {
      AUTHSVC_SMS_VONAGE_API_KEY: 'k',
      AUTHSVC_SMS_VONAGE_API_SECRET: 's',
      AUTHSVC_SMS_VONAGE_FROM: 'f',
    })
    const verify = withProvider('twilio_verify', {
      AUTHSVC_SMS_TWILIO_VERIFY_ACCOUNT_SID: 'AC1',
      AUTHSVC_SMS_TWILIO_VERIFY_AUTH_TOKEN: 't',
      AUTHSVC_SMS_TWILIO_VERIFY_MESSAGE_SERVICE_SID: 'VA1',
    })
    expect(validateChannel(vonage, '')).toBe('sms')
    expect(validateChannel(vonage, 'sms')).toBe('sms')
    expect(() => validateChannel(vonage, 'whatsapp')).toThrow(INVALID_CHANNEL)
    expect(validateChannel(verify, 'whatsapp')).toBe('whatsapp')
    expect(() => validateChannel(verify, 'WhatsApp')).toThrow(INVALID_CHANNEL)
  })
})

describe('normalizePhone and validatePhone', () => {
  it('strip spaces and +, normalise international forms with other punctuation to E.164, and refuse the rest', () => {
    expect(normalizePhone(' +1 555 010 0100 ')).toBe('15550100100')
    expect(normalizePhone('+1 (555) 010-0100')).toBe('15550100100')
    expect(normalizePhone('+44 20-7946-0958')).toBe('442079460958')
    expect(validatePhone('+49 (151) 1234-5678')).toBe('4915112345678')
    // National forms, extensions and letters are not guessed at.
    for (const bad of ['(555) 010-0100', '+1 555 0100 ext. 5', '+1-800-FLOWERS', '0155501001']) {
      expect(() => validatePhone(bad)).toThrow('Invalid phone number format (E.164 required)')
    }
  })
})
