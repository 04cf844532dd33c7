import { describe, expect, it } from 'vitest'
import { loadSettings } from '../conf/settings.js'
import { verificationLink } from './links.js'

const env = {
  AUTHSVC_SITE_URL: 'https://app.example.com',
  AUTHSVC_API_EXTERNAL_URL: 'https://example.com/auth/v1',
  AUTHSVC_JWT_SECRET: 'a-secret-of-thirty-two-bytes-or-more',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'pglite://memory',
}

describe('verificationLink', () => {
  it('resolves the URL path against API_EXTERNAL_URL and adds token, type and redirect_to', () => {
    const settings = loadSettings({
      ...env,
      AUTHSVC_MAILER_URLPATHS_CONFIRMATION: '/auth/v1/verify',
    })
    expect(
      verificationLink(settings, 'confirmation', {
        token: 'abc',
        type: 'signup',
        redirectTo: 'https://app.example.com/welcome',
      }),
    ).toBe(
      'https://example.com/auth/v1/verify?token=abc&type=signup&redirect_to=https://app.example.com/welcome',
    )
  })

  it('uses the recovery path for magic links, and an absolute default path replaces the base path', () => {
    const settings = loadSettings({ ...env, AUTHSVC_MAILER_URLPATHS_RECOVERY: 'verify' })
    expect(
      verificationLink(settings, 'magicLink', { token: 't', type: 'magiclink', redirectTo: '' }),
    ).toBe('https://example.com/auth/verify?token=t&type=magiclink')
    expect(
      verificationLink(loadSettings(env), 'invite', { token: 't', type: 'invite', redirectTo: '' }),
    ).toBe('https://example.com/verify?token=t&type=invite')
  })

  it('percent-encodes redirect_to only when it holds &, = or #', () => {
    const link = verificationLink(loadSettings(env), 'emailChange', {
      token: 't',
      type: 'email_change',
      redirectTo: 'https://app.example.com/cb?a=1&b=2#x',
    })
    expect(link).toBe(
      'https://example.com/verify?token=t&type=email_change&redirect_to=https%3A%2F%2Fapp.example.com%2Fcb%3Fa%3D1%26b%3D2%23x',
    )
    expect(new URL(link).searchParams.get('redirect_to')).toBe(
      'https://app.example.com/cb?a=1&b=2#x',
    )
  })
})
