import { describe, expect, it } from 'vitest'
import { checkPasswordStrength, hashPassword, isTooLong, verifyPassword } from './password.js'

describe('passwords', () => {
  it('hashes with bcrypt cost 10 and verifies', async () => {
    const hash = await hashPassword('correct horse')
    expect(hash).toMatch(/^\$2b\$10\$/)
    expect(await verifyPassword('correct horse', hash)).toBe(true)
    expect(await verifyPassword('wrong', hash)).toBe(false)
  })

  it("verifies upstream's $2a$ hashes and treats malformed hashes as a mismatch", async () => {
    const upstream = (await hashPassword('from-go', 4)).replace(/^\$2b\$/, '$2a$')
    expect(await verifyPassword('from-go', upstream)).toBe(true)
    expect(await verifyPassword('x', 'not-a-hash')).toBe(false)
    expect(await verifyPassword('x', '')).toBe(false)
  })

  it('limits passwords to 72 bytes', () => {
    expect(isTooLong('a'.repeat(72))).toBe(false)
    expect(isTooLong('a'.repeat(73))).toBe(true)
    expect(isTooLong('é'.repeat(37))).toBe(true)
  })

  it('reports weak-password reasons and messages', () => {
    const policy = { minLength: 8, requiredCharacters: ['abc', '123'] }
    expect(checkPasswordStrength('abc123xyz', policy)).toBeUndefined()
    expect(checkPasswordStrength('a1', policy)).toEqual({
      reasons: ['length'],
      message: 'Password should be at least 8 characters.',
    })
    expect(checkPasswordStrength('zzzzzzzzz', policy)).toEqual({
      reasons: ['characters'],
      message: 'Password should contain at least one character of each: abc, 123.',
    })
  })
})
