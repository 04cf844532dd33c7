import { describe, expect, it } from 'vitest'
import {
  REDACT_CENSOR,
  REDACT_PATHS,
  SECRET_HEADERS,
  SECRET_KEYS,
  SECRET_QUERY_PARAMS,
  redactUrl,
} from './redact.js'

describe('REDACT_PATHS', () => {
  it('covers each secret key at the top level and one level down', () => {
    for (const key of ['password', 'refresh_token', 'token', 'secret', 'auth', 'REDIS_AUTH']) {
      expect(SECRET_KEYS).toContain(key)
      expect(REDACT_PATHS).toContain(key)
      expect(REDACT_PATHS).toContain(`*.${key}`)
    }
    expect(SECRET_KEYS).toEqual(
      expect.arrayContaining(['JWT_SECRET', 'GOTRUE_JWT_SECRET', 'KVSTORE_AUTH', 'DATABASE_URL']),
    )
  })

  it('covers credential headers in any headers object, quoting names that need it', () => {
    expect(SECRET_HEADERS).toEqual(
      expect.arrayContaining(['authorization', 'cookie', 'set-cookie']),
    )
    expect(REDACT_PATHS).toEqual(
      expect.arrayContaining([
        'headers.authorization',
        '*.headers.authorization',
        '*.headers.cookie',
        '*.headers["set-cookie"]',
        '*.headers["proxy-authorization"]',
      ]),
    )
    expect(REDACT_CENSOR).toBe('[redacted]')
  })

  it('cannot be changed by a caller', () => {
    expect(Object.isFrozen(REDACT_PATHS)).toBe(true)
    expect(Object.isFrozen(SECRET_KEYS)).toBe(true)
  })
})

describe('redactUrl', () => {
  it('censors the values of secret query parameters and keeps the rest as written', () => {
    expect(redactUrl('/verify?token=abc123&type=signup&redirect_to=http://x/cb')).toBe(
      '/verify?token=[redacted]&type=signup&redirect_to=http://x/cb',
    )
    expect(redactUrl('/cb?code=c0de&token_hash=h&nonce=n&code_verifier=v&state=s')).toBe(
      '/cb?code=[redacted]&token_hash=[redacted]&nonce=[redacted]&code_verifier=[redacted]&state=[redacted]',
    )
    expect(SECRET_QUERY_PARAMS).toEqual(expect.arrayContaining([...SECRET_KEYS, 'code']))
  })

  it('matches encoded and upper-case names, and survives malformed escapes and fragments', () => {
    expect(redactUrl('/verify?%74oken=abc&TOKEN=def')).toBe(
      '/verify?%74oken=[redacted]&TOKEN=[redacted]',
    )
    expect(redactUrl('/verify?%E0%A4%A=1&token=abc#frag')).toBe(
      '/verify?%E0%A4%A=1&token=[redacted]#frag',
    )
    expect(redactUrl('/health')).toBe('/health')
    expect(redactUrl('/verify?token&type=x')).toBe('/verify?token&type=x')
  })
})
