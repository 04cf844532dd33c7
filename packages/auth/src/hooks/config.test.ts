import { SettingsError } from '@gatehouse/settings'
import { describe, expect, it } from 'vitest'
import { loadSettings } from '../conf/settings.js'
import { parseHookSecrets, parseHookUri } from './config.js'

const REQUIRED = {
  AUTHSVC_SITE_URL: 'http://localhost:3000',
  AUTHSVC_API_EXTERNAL_URL: 'http://localhost:9999',
  AUTHSVC_JWT_SECRET: 'a-secret-of-thirty-two-bytes-or-more',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'postgres://localhost/db',
}
const SECRET = 'v1,whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'

function problems(env: Record<string, string>): readonly string[] {
  try {
    loadSettings({ ...REQUIRED, ...env })
  } catch (error) {
    if (error instanceof SettingsError) return error.problems
    throw error
  }
  return []
}

describe('parseHookUri', () => {
  it('reads https, loopback http and pg-functions targets', () => {
    expect(parseHookUri('https://hooks.example.com/claims')).toEqual({
      kind: 'http',
      url: 'https://hooks.example.com/claims',
    })
    expect(parseHookUri('http://127.0.0.1:8080/h')).toMatchObject({ kind: 'http' })
    expect(parseHookUri('http://[::1]/h')).toMatchObject({ kind: 'http' })
    expect(parseHookUri('pg-functions://postgres/public/custom_access_token_hook')).toEqual({
      kind: 'pg-function',
      uri: 'pg-functions://postgres/public/custom_access_token_hook',
      schema: 'public',
      name: 'custom_access_token_hook',
    })
    expect(parseHookUri('')).toBeNull()
  })
})

describe('parseHookSecrets', () => {
  it('keeps the base64 keys of every secret of a rotation', () => {
    expect(parseHookSecrets(`${SECRET}|v1,whsec_${'A'.repeat(44)}|`)).toEqual([
      'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      'A'.repeat(44),
    ])
  })
})

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
      AUTHSVC_HOOK_SEND_EMAIL_SECRETS: SECRET,
      GOTRUE_HOOK_MFA_VERIFICATION_ATTEMPT_ENABLED: 'true',
      GOTRUE_HOOK_MFA_VERIFICATION_ATTEMPT_URI: 'pg-functions://postgres/auth_hooks/mfa',
    })
    expect(s.hook.sendEmail).toMatchObject({ enabled: true, uri: { kind: 'http' } })
    expect(s.hook.mfaVerificationAttempt.uri).toMatchObject({ schema: 'auth_hooks', name: 'mfa' })
  })

  it('refuse each mistake with one line naming the variable', () => {
    const found = problems({
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
    expect(problems({ AUTHSVC_HOOK_SEND_SMS_SECRETS: pair })[0]).toMatch(/asymmetric v1a/)
  })
})
