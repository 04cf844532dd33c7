import { describe, expect, it } from 'vitest'
import { REDACT_CENSOR, REDACT_PATHS, SECRET_HEADERS, SECRET_KEYS } from './redact.js'

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
