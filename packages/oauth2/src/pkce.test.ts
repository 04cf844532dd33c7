import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { sha256 } from '@noble/hashes/sha2.js'
import { pkce, pkceChallenge, pkceFrom } from './pkce.js'

describe('pkce', () => {
  it('computes the RFC 7636 Appendix B challenge', () => {
    expect(pkceChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe(
      'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    )
  })

  it('sha256 matches node:crypto for lengths around block boundaries', () => {
    for (const length of [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000]) {
      const data = new Uint8Array(length).map((_, i) => (i * 7 + length) & 0xff)
      expect(Buffer.from(sha256(data)).toString('hex')).toBe(
        createHash('sha256').update(data).digest('hex'),
      )
    }
  })

  it('creates a 43-character verifier and its S256 challenge, different each time', () => {
    const a = pkce()
    const b = pkce()
    expect(a.code_verifier).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(a.code_challenge_method).toBe('S256')
    expect(a.code_challenge).toBe(createHash('sha256').update(a.code_verifier).digest('base64url'))
    expect(a.code_verifier).not.toBe(b.code_verifier)
  })

  it('takes the verifier bytes from the injected random source', () => {
    const zeros = { bytes: (length: number) => new Uint8Array(length), uuid: () => '' }
    const pair = pkceFrom(zeros)
    expect(pair.code_verifier).toBe('A'.repeat(43))
    expect(pair.code_challenge).toBe(
      createHash('sha256').update(pair.code_verifier).digest('base64url'),
    )
  })

  it('rejects verifiers outside RFC 7636 §4.1', () => {
    expect(() => pkceChallenge('short')).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }),
    )
    expect(() => pkceChallenge(`${'a'.repeat(42)} `)).toThrow(TypeError)
  })
})
