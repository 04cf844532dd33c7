import { describe, expect, it } from 'vitest'
import { generateRefreshToken, isWellFormedRefreshToken } from './refresh-token.js'

describe('refresh tokens', () => {
  it('are 12 characters of lower-case base32 and unique', () => {
    const tokens = new Set(Array.from({ length: 1000 }, generateRefreshToken))
    expect(tokens.size).toBe(1000)
    for (const token of tokens) expect(token).toMatch(/^[a-z2-7]{12}$/)
  })

  it('accept upstream shapes only', () => {
    expect(isWellFormedRefreshToken('abcdefghijkl')).toBe(true)
    expect(isWellFormedRefreshToken('short')).toBe(false)
    expect(isWellFormedRefreshToken('ABCDEFGHIJKL')).toBe(false)
    expect(isWellFormedRefreshToken('Zx9_-Zx9_-Zx9_-Zx9_-ab')).toBe(true)
  })
})
