import { createHash } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { BloomFilter } from './bloom-filter.js'

const digest = (text: string): Buffer => createHash('sha1').update(text).digest()

describe('BloomFilter', () => {
  it('never forgets a key it was given (no false negatives)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.uint8Array({ minLength: 8, maxLength: 32 }), { maxLength: 300 }),
        fc.integer({ min: 1, max: 500 }),
        fc.double({ min: 1e-6, max: 0.3, noNaN: true }),
        (keys, items, rate) => {
          const filter = new BloomFilter(items, rate)
          for (const key of keys) filter.add(key)
          return keys.every((key) => filter.has(key))
        },
      ),
    )
  })

  it('keeps false positives near the configured rate', () => {
    const filter = new BloomFilter(10_000, 0.01)
    for (let i = 0; i < 10_000; i++) filter.add(digest(`in-${String(i)}`))
    let positives = 0
    for (let i = 0; i < 20_000; i++) if (filter.has(digest(`out-${String(i)}`))) positives++
    // 1 % expected; 2 % leaves room for chance, not for a broken hash.
    expect(positives / 20_000).toBeLessThan(0.02)
  })

  it('forgets everything when cleared', () => {
    const filter = new BloomFilter(100, 0.001)
    filter.add(digest('a'))
    expect(filter.has(digest('a'))).toBe(true)
    filter.clear()
    expect(filter.has(digest('a'))).toBe(false)
  })

  it('sizes itself as the estimates say and refuses impossible sizes', () => {
    const filter = new BloomFilter(100_000, 0.0000099)
    // m = -n ln p / ln² 2 ≈ 2 398 357 bits (about 300 KB), k = m/n ln 2 ≈ 17
    expect(filter.bits).toBe(2_398_357)
    expect(filter.hashes).toBe(17)
    expect(() => new BloomFilter(0, 0.01)).toThrow(RangeError)
    expect(() => new BloomFilter(10, 1)).toThrow(RangeError)
    expect(() => {
      new BloomFilter(10, 0.01).add(new Uint8Array(4))
    }).toThrow(RangeError)
  })
})
