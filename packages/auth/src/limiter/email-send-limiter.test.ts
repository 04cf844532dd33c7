import { describe, expect, it } from 'vitest'
import { InMemoryEmailSendLimiter } from './email-send-limiter.js'

describe('InMemoryEmailSendLimiter', () => {
  it('allows `events` emails per window and starts again in the next window', async () => {
    const limiter = new InMemoryEmailSendLimiter({ events: 2, periodMs: 60_000 })
    const start = 120_000
    expect(await limiter.take(start)).toBe(true)
    expect(await limiter.take(start + 1)).toBe(true)
    expect(await limiter.take(start + 59_999)).toBe(false)
    expect(await limiter.take(start + 60_000)).toBe(true)
  })

  it('refuses everything with 0 events', async () => {
    const limiter = new InMemoryEmailSendLimiter({ events: 0, periodMs: 3_600_000 })
    expect(await limiter.take(0)).toBe(false)
  })
})
