import { describe, expect, it } from 'vitest'
import {
  PasswordHasher,
  PasswordHashingBusyError,
  type PasswordHashing,
} from './password-hasher.js'

const HASH = '$2b$10$j7JTc//0K8Zwwl6p53y8fet1YiZyM11XI1EgYVwfWCQUOT1dnG.06'

/** Primitives whose calls stay open until the test finishes them, in any order. */
function heldHashing() {
  const calls: { password: string; finish: (ok: boolean) => void }[] = []
  const hashing: PasswordHashing = {
    hash: (password) =>
      new Promise((resolve) => {
        calls.push({
          password,
          finish: () => {
            resolve(`hash:${password}`)
          },
        })
      }),
    verify: (password) =>
      new Promise((resolve) => {
        calls.push({ password, finish: resolve })
      }),
  }
  return { hashing, calls }
}

/** Lets pending promise callbacks run. */
async function settle(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve))
}

describe('PasswordHasher', () => {
  it('runs at most `concurrency` at once and starts the waiting ones first come, first served', async () => {
    const { hashing, calls } = heldHashing()
    const hasher = new PasswordHasher({ concurrency: 2, queueSize: 10 }, hashing)
    const results = ['a', 'b', 'c', 'd'].map((p) => hasher.verify(p, HASH))
    await settle()
    expect(calls.map((c) => c.password)).toEqual(['a', 'b'])
    expect([hasher.running, hasher.queued]).toEqual([2, 2])
    calls[1]!.finish(true)
    await settle()
    expect(calls.map((c) => c.password)).toEqual(['a', 'b', 'c'])
    expect([hasher.running, hasher.queued]).toEqual([2, 1])
    calls[0]!.finish(false)
    await settle()
    calls[2]!.finish(true)
    await settle()
    calls[3]!.finish(false)
    expect(await Promise.all(results)).toEqual([false, true, true, false])
    expect([hasher.running, hasher.queued]).toEqual([0, 0])
  })

  it('fails at once with PasswordHashingBusyError when the slots and the queue are full', async () => {
    const { hashing, calls } = heldHashing()
    const hasher = new PasswordHasher({ concurrency: 1, queueSize: 1 }, hashing)
    const first = hasher.hash('a')
    const second = hasher.hash('b')
    await expect(hasher.verify('c', HASH)).rejects.toBeInstanceOf(PasswordHashingBusyError)
    await expect(hasher.hash('d')).rejects.toThrow(
      'Too many password checks in progress, please retry in a moment',
    )
    await settle()
    calls[0]!.finish(true)
    await settle()
    calls[1]!.finish(true)
    expect(await Promise.all([first, second])).toEqual(['hash:a', 'hash:b'])
    expect(hasher.running).toBe(0)
  })

  it('a waiter whose signal aborts leaves the queue and never runs', async () => {
    const { hashing, calls } = heldHashing()
    const hasher = new PasswordHasher({ concurrency: 1, queueSize: 5 }, hashing)
    const running = hasher.hash('a')
    const controller = new AbortController()
    const abandoned = hasher.hash('b', controller.signal)
    const kept = hasher.hash('c')
    await settle()
    expect(hasher.queued).toBe(2)
    controller.abort(new Error('request timed out'))
    await expect(abandoned).rejects.toThrow('request timed out')
    expect(hasher.queued).toBe(1)
    calls[0]!.finish(true)
    await settle()
    calls[1]!.finish(true)
    expect(await Promise.all([running, kept])).toEqual(['hash:a', 'hash:c'])
    expect(calls.map((c) => c.password)).toEqual(['a', 'c'])
    await expect(hasher.hash('d', controller.signal)).rejects.toThrow('request timed out')
  })

  it('answers a value that is no bcrypt hash with a mismatch, without a slot', async () => {
    const { hashing, calls } = heldHashing()
    const hasher = new PasswordHasher({ concurrency: 1, queueSize: 0 }, hashing)
    expect(await hasher.verify('a', '')).toBe(false)
    expect(await hasher.verify('a', 'plain-text')).toBe(false)
    expect(calls).toEqual([])
  })

  it('refuses bounds that cannot work', () => {
    expect(() => new PasswordHasher({ concurrency: 0, queueSize: 1 })).toThrow(
      '"concurrency" must be a positive integer',
    )
    expect(() => new PasswordHasher({ concurrency: 1, queueSize: -1 })).toThrow(
      '"queueSize" must be a non-negative integer',
    )
  })
})
