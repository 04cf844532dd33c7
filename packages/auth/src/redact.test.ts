import { describe, expect, it } from 'vitest'
import { censor, maskDatabaseUrl, urlPasswords } from './redact.js'

describe('what the executable may print of a connection URL', () => {
  it('shows a URL with its password masked, in the user part or as a parameter', () => {
    expect(
      maskDatabaseUrl('postgres://auth:s%40cret@db:5432/auth?sslmode=require&password=p2'),
    ).toBe('postgres://auth:***@db:5432/auth?sslmode=require&password=***')
    expect(maskDatabaseUrl('postgres://db/auth?sslpassword=x')).toBe(
      'postgres://db/auth?sslpassword=***',
    )
  })

  it('censors the passwords an error message repeats, encoded or not', () => {
    const url = 'postgres://auth:s%40cret@db/auth?password=p2'
    expect(urlPasswords(url)).toEqual(['s%40cret', 's@cret', 'p2'])
    expect(censor('login s@cret / s%40cret / p2 failed', urlPasswords(url))).toBe(
      'login [redacted] / [redacted] / [redacted] failed',
    )
    expect(censor('nothing to hide', ['', ''])).toBe('nothing to hide')
  })
})
