import { describe, expect, it } from 'vitest'
import { mergeMetadata } from './user.js'

describe('mergeMetadata', () => {
  it('sets keys, removes null ones and leaves the input alone', () => {
    const current = { a: 1, b: 2 }
    expect(mergeMetadata(current, { b: null, c: 3 })).toEqual({ a: 1, c: 3 })
    expect(current).toEqual({ a: 1, b: 2 })
  })

  it('stores "__proto__" as plain data', () => {
    const merged = mergeMetadata(
      {},
      JSON.parse('{"__proto__": {"admin": true}}') as Record<string, unknown>,
    )
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype)
    expect((merged as { admin?: unknown }).admin).toBeUndefined()
    expect(JSON.stringify(merged)).toBe('{"__proto__":{"admin":true}}')
  })
})
