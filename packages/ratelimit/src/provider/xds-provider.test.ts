import { describe, expect, it } from 'vitest'
import { xdsBackoffDelay, type XdsBackoff } from './xds-provider.js'

const BACKOFF: XdsBackoff = { initialMs: 10_000, maxMs: 60_000, randomFactor: 0.5, jitter: true }

describe('xdsBackoffDelay', () => {
  it('doubles from the initial interval up to the maximum without jitter', () => {
    const plain = { ...BACKOFF, jitter: false }
    expect([0, 1, 2, 3, 50].map((attempt) => xdsBackoffDelay(attempt, plain, () => 0))).toEqual([
      10_000, 20_000, 40_000, 60_000, 60_000,
    ])
  })

  it('varies each wait by the random factor, never beyond the maximum', () => {
    expect(xdsBackoffDelay(0, BACKOFF, () => 0)).toBe(5_000)
    expect(xdsBackoffDelay(0, BACKOFF, () => 0.5)).toBe(10_000)
    expect(xdsBackoffDelay(0, BACKOFF, () => 0.999_999)).toBe(15_000)
    expect(xdsBackoffDelay(2, BACKOFF, () => 0.999_999)).toBe(60_000)
    expect(xdsBackoffDelay(3, BACKOFF, () => 0)).toBe(30_000)
  })
})
