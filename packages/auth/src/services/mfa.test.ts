import { describe, expect, it } from 'vitest'
import { loadSettings } from '../conf/settings.js'
import { smsText } from './shared/sms.js'

const BASE = {
  AUTHSVC_SITE_URL: 'http://localhost:3000',
  AUTHSVC_API_EXTERNAL_URL: 'http://localhost:9999',
  AUTHSVC_JWT_SECRET: 'a-secret-of-at-least-thirty-two-bytes!',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'postgres://localhost/db',
}

describe('MFA settings', () => {
  it("has upstream's defaults, and MFA_PHONE_MAX_UNVERIFIED_FACTORS (ours)", () => {
    expect(loadSettings(BASE).mfa).toEqual({
      totpEnrollEnabled: true,
      totpVerifyEnabled: true,
      phoneEnrollEnabled: false,
      phoneVerifyEnabled: false,
      webAuthnEnrollEnabled: false,
      webAuthnVerifyEnabled: false,
      recoveryCodesEnrollEnabled: false,
      recoveryCodesVerifyEnabled: false,
      recoveryCodesCount: 10,
      maxEnrolledFactors: 10,
      maxVerifiedFactors: 10,
      phoneMaxUnverifiedFactors: 2,
      challengeExpiryMs: 300_000,
      factorExpiryMs: 300_000,
      rateLimitChallengeAndVerify: 15,
      phoneOtpLength: 6,
      phoneTemplate: 'Your code is {{ .Code }}',
      phoneMaxFrequencyMs: 60_000,
    })
  })

  it('reads GOTRUE_ names, falls back as upstream and reports bad values', () => {
    const mfa = loadSettings({
      ...BASE,
      GOTRUE_MFA_PHONE_OTP_LENGTH: '12',
      GOTRUE_MFA_CHALLENGE_EXPIRY_DURATION: '30.5',
      GOTRUE_MFA_PHONE_MAX_FREQUENCY: '0s',
      GOTRUE_MFA_TOTP_ENROLL_ENABLED: 'false',
    }).mfa
    expect(mfa).toMatchObject({
      phoneOtpLength: 6,
      challengeExpiryMs: 30_500,
      phoneMaxFrequencyMs: 60_000,
      totpEnrollEnabled: false,
    })
    expect(() => loadSettings({ ...BASE, AUTHSVC_MFA_MAX_ENROLLED_FACTORS: 'ten' })).toThrow(
      /MFA_MAX_ENROLLED_FACTORS/,
    )
  })
})

describe('MFA_PHONE_TEMPLATE through smsText', () => {
  it('puts the code for {{ .Code }}, with or without spaces and trim markers', () => {
    expect(smsText('Your code is {{ .Code }}', '123456')).toBe('Your code is 123456')
    expect(smsText('{{.Code}} / {{- .Code -}}', '42')).toBe('42 /42') // Go's trim marker eats the space before it
    expect(smsText('no code here', '42')).toBe('no code here')
  })
})
