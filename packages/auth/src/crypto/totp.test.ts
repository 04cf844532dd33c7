import { describe, expect, it } from 'vitest'
import { generateTotpSecret, matchTotpStep, totpCode, totpUri } from './totp.js'

/** RFC 6238 Appendix B's SHA-1 key, "12345678901234567890", in Base32. */
const RFC_SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ'

describe('TOTP', () => {
  it("computes RFC 6238's SHA-1 test vectors (last 6 of the 8 digits)", () => {
    expect(totpCode(RFC_SECRET, 59_000)).toBe('287082')
    expect(totpCode(RFC_SECRET, 1_111_111_109_000)).toBe('081804')
    expect(totpCode(RFC_SECRET, 20_000_000_000_000)).toBe('353130')
  })

  it('matches the current step and one step either side, and nothing else', () => {
    const now = 1_111_111_109_000
    const step = Math.floor(now / 30_000)
    expect(matchTotpStep(RFC_SECRET, totpCode(RFC_SECRET, now), now)).toBe(step)
    expect(matchTotpStep(RFC_SECRET, totpCode(RFC_SECRET, now - 30_000), now)).toBe(step - 1)
    expect(matchTotpStep(RFC_SECRET, totpCode(RFC_SECRET, now + 30_000), now)).toBe(step + 1)
    expect(matchTotpStep(RFC_SECRET, totpCode(RFC_SECRET, now - 60_000), now)).toBeUndefined()
    expect(matchTotpStep(RFC_SECRET, '12345', now)).toBeUndefined()
    expect(matchTotpStep(RFC_SECRET, '12345a', now)).toBeUndefined()
  })

  it('makes 20-byte Base32 secrets from the injected randomness and key URIs', () => {
    const random = {
      uuid: () => '',
      int: () => 0,
      bytes: (n: number) => new Uint8Array(n).fill(0x31),
    }
    const secret = generateTotpSecret(random)
    expect(secret).toBe('GEYTCMJRGEYTCMJRGEYTCMJRGEYTCMJR')
    const uri = new URL(totpUri(secret, 'Gatehouse', 'ann@example.com'))
    expect(uri.href).toMatch(/^otpauth:\/\/totp\/Gatehouse:ann%40example\.com\?/)
    expect(Object.fromEntries(uri.searchParams)).toEqual({
      issuer: 'Gatehouse',
      secret,
      algorithm: 'SHA1',
      digits: '6',
      period: '30',
    })
  })
})
