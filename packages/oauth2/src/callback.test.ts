import { describe, expect, it } from 'vitest'
import { callbackParams, constantTimeEqual, validateCallback } from './callback.js'
import { OAuth2Error } from './error.js'

const issuer = { issuer: 'https://as.example', required: false }
const params = (query: string) => new URLSearchParams(query)

describe('callback validation', () => {
  it('compares strings by value whatever their lengths', () => {
    expect(constantTimeEqual('abc', 'abc')).toBe(true)
    expect(constantTimeEqual('abc', 'abd')).toBe(false)
    expect(constantTimeEqual('abc', 'abcd')).toBe(false)
    expect(constantTimeEqual('', '')).toBe(true)
  })

  it('returns the code of a valid response; iss is optional unless the server says it sends it', () => {
    expect(validateCallback(params('code=c&state=s'), 's', issuer)).toBe('c')
    expect(validateCallback(params('code=c&state=s&iss=https://as.example'), 's', issuer)).toBe('c')
    expect(() =>
      validateCallback(params('code=c&state=s'), 's', { ...issuer, required: true }),
    ).toThrow(expect.objectContaining({ code: 'issuer_mismatch' }) as Error)
    // Without metadata there is nothing to compare iss with.
    expect(
      validateCallback(params('code=c&iss=https://x.example'), null, {
        issuer: undefined,
        required: false,
      }),
    ).toBe('c')
  })

  it('checks iss before state, and state before the error, so a forged error is reported as such', () => {
    const forged = params('error=access_denied&state=wrong&iss=https://evil.example')
    expect(() => validateCallback(forged, 's', issuer)).toThrow(
      expect.objectContaining({ code: 'issuer_mismatch' }) as Error,
    )
    expect(() => validateCallback(params('error=access_denied&state=wrong'), 's', issuer)).toThrow(
      expect.objectContaining({ code: 'state_mismatch' }) as Error,
    )
    const error = (() => {
      try {
        validateCallback(
          params('error=access_denied&state=s&error_uri=https://e.example'),
          's',
          issuer,
        )
      } catch (e) {
        return e as OAuth2Error
      }
      throw new Error('no error')
    })()
    expect(error).toBeInstanceOf(OAuth2Error)
    expect(error.code).toBe('access_denied')
    expect(error.description).toBeUndefined()
    expect(error.errorUri).toBe('https://e.example')
  })

  it('reads URLs, URL strings and form bodies, and refuses a response only in the fragment', () => {
    const fromString = callbackParams('https://app.example/cb?code=c&state=s')
    expect(fromString.redirectUri).toBe('https://app.example/cb')
    expect(fromString.params.get('code')).toBe('c')
    expect(callbackParams(params('code=c')).redirectUri).toBeUndefined()
    expect(() => callbackParams(new URL('https://app.example/cb#code=c&state=s'))).toThrow(
      expect.objectContaining({ code: 'invalid_callback' }) as Error,
    )
    expect(() => callbackParams(42 as never)).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }) as Error,
    )
  })
})
