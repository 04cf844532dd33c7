import { describe, expect, it } from 'vitest'
import { TokenBucketLimiter } from './token-bucket.js'

describe('TokenBucketLimiter', () => {
  it('allows a burst, then the rate, per operation and key; other operations are free', async () => {
    const limiter = new TokenBucketLimiter({ factor_verify: { perSecond: 0.25, burst: 2 } })
    expect((await limiter.allow('factor_verify', 'a', 0)).allowed).toBe(true)
    expect((await limiter.allow('factor_verify', 'a', 0)).allowed).toBe(true)
    expect(await limiter.allow('factor_verify', 'a', 0)).toEqual({
      allowed: false,
      retryAfterSeconds: 4,
    })
    expect((await limiter.allow('factor_verify', 'b', 0)).allowed).toBe(true)
    expect((await limiter.allow('factor_challenge', 'a', 0)).allowed).toBe(true)
    expect((await limiter.allow('factor_verify', 'a', 3_999)).allowed).toBe(false)
    expect((await limiter.allow('factor_verify', 'a', 4_000)).allowed).toBe(true)
    // A clock that goes back never adds requests.
    expect((await limiter.allow('factor_verify', 'a', 0)).allowed).toBe(false)
  })

  it('tracks at most maxBuckets keys', async () => {
    const limiter = new TokenBucketLimiter({ factor_verify: { perSecond: 0, burst: 1 } }, 2)
    expect((await limiter.allow('factor_verify', 'a', 0)).allowed).toBe(true)
    expect((await limiter.allow('factor_verify', 'b', 0)).allowed).toBe(true)
    expect((await limiter.allow('factor_verify', 'c', 0)).allowed).toBe(true)
    // "a" was dropped to make room for "c": it starts afresh.
    expect((await limiter.allow('factor_verify', 'a', 0)).allowed).toBe(true)
    expect((await limiter.allow('factor_verify', 'c', 0)).allowed).toBe(false)
  })
})
