import { describe, expect, it } from 'vitest'
import { PasswordBackoff } from './password-backoff.js'

describe('PasswordBackoff', () => {
  it('lets the free failures pass, then doubles the delay up to the maximum', () => {
    const backoff = new PasswordBackoff({ freeFailures: 2, baseDelayMs: 1_000, maxDelayMs: 4_000 })
    backoff.failed('email:a@x', 0)
    backoff.failed('email:a@x', 0)
    expect(backoff.wait('email:a@x', 0)).toBe(0)
    const delays: number[] = []
    let now = 0
    for (let i = 0; i < 5; i++) {
      backoff.failed('email:a@x', now)
      delays.push(backoff.wait('email:a@x', now))
      now += delays.at(-1) ?? 0
      expect(backoff.wait('email:a@x', now)).toBe(0)
    }
    expect(delays).toEqual([1_000, 2_000, 4_000, 4_000, 4_000])
    expect(backoff.wait('email:other@x', now)).toBe(0)
  })

  it('is cleared by a success and forgotten after a quiet hour', () => {
    const backoff = new PasswordBackoff({ freeFailures: 1 })
    backoff.failed('k', 0)
    backoff.failed('k', 0)
    expect(backoff.wait('k', 0)).toBe(1_000)
    backoff.succeeded('k')
    expect(backoff.wait('k', 0)).toBe(0)
    backoff.failed('k', 0)
    backoff.failed('k', 0)
    expect(backoff.wait('k', 3_600_999)).toBe(0)
    backoff.failed('k', 3_601_000)
    expect(backoff.wait('k', 3_601_000)).toBe(0)
  })

  it('keeps at most maxEntries accounts and does nothing when off', () => {
    const backoff = new PasswordBackoff({ freeFailures: 1, maxEntries: 3 })
    for (let i = 0; i < 100; i++) backoff.failed(`k${String(i)}`, 0)
    expect(backoff.size).toBe(3)
    const off = new PasswordBackoff({ freeFailures: 0 })
    for (let i = 0; i < 10; i++) off.failed('k', 0)
    expect(off.wait('k', 0)).toBe(0)
    expect(off.size).toBe(0)
  })
})
