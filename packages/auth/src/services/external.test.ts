import { describe, expect, it } from 'vitest'
import { pkceMethod } from './external.js'

const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'

describe('pkceMethod', () => {
  it('accepts both or neither, with upstream messages for the rest', () => {
    expect(pkceMethod('', '')).toBeUndefined()
    expect(pkceMethod(CHALLENGE, 'S256')).toBe('s256')
    expect(pkceMethod(CHALLENGE, 'plain')).toBe('plain')
    expect(() => pkceMethod(CHALLENGE, '')).toThrow(
      'PKCE flow requires code_challenge_method and code_challenge',
    )
    expect(() => pkceMethod('short', 's256')).toThrow(
      'code challenge has to be between 43 and 128 characters',
    )
    expect(() => pkceMethod(`${CHALLENGE}!`, 's256')).toThrow(/can only contain/)
    expect(() => pkceMethod(CHALLENGE, 'md5')).toThrow('code challenge method md5 not supported')
  })
})
