import { describe, expect, it } from 'vitest'
import { MEMCACHE_MAX_KEY_BYTES, illegalKeyCharacter, memcacheKeyProblem } from './keys.js'

describe('memcacheKeyProblem (gomemcache legalKey)', () => {
  it('accepts keys up to 250 bytes of printable characters, multi-byte UTF-8 included', () => {
    expect(memcacheKeyProblem('domain_key_value_1234')).toBeUndefined()
    expect(memcacheKeyProblem('x'.repeat(MEMCACHE_MAX_KEY_BYTES))).toBeUndefined()
    expect(memcacheKeyProblem('é'.repeat(125))).toBeUndefined()
  })

  it('refuses keys over 250 bytes, counted in UTF-8 bytes', () => {
    expect(memcacheKeyProblem('x'.repeat(251))).toBe(
      "the memcache cache key would be 251 bytes, over memcache's limit of 250; shorten the domain, the entries or CACHE_KEY_PREFIX",
    )
    expect(memcacheKeyProblem(`${'é'.repeat(125)}x`)).toMatch(/would be 251 bytes/)
  })

  it('refuses whitespace, control characters and DEL, naming the character', () => {
    for (const [key, found] of [
      ['a b', 'U+0020'],
      ['a\tb', 'U+0009'],
      ['a\r\nb', 'U+000D'],
      ['a\u0000', 'U+0000'],
      ['a\u007f', 'U+007F'],
    ]) {
      expect(memcacheKeyProblem(key as string)).toBe(
        `the memcache backend cannot store a key with whitespace or control characters (found ${found as string} in the domain or an entry)`,
      )
    }
    expect(illegalKeyCharacter('fine:key')).toBe(-1)
    expect(illegalKeyCharacter('no\u00a0break')).toBe(-1)
  })
})
