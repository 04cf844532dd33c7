import { describe, expect, it } from 'vitest'
import { RequestTimeoutError } from '../../errors.js'
import { RequestDeadline } from './deadline.js'

/** A promise the test settles. */
function deferred<T>() {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

describe('RequestDeadline', () => {
  it('cuts a request with nothing in flight at once; nothing is sent after', async () => {
    let cuts = 0
    const deadline = new RequestDeadline(1000, () => cuts++)
    expect(() => {
      deadline.check()
    }).not.toThrow()
    deadline.expire()
    expect(cuts).toBe(1)
    expect(deadline.cut).toBe(true)
    expect(() => {
      deadline.check()
    }).toThrow(RequestTimeoutError)
    let sent = false
    await expect(
      deadline.write(() => {
        sent = true
        return Promise.resolve()
      }),
    ).rejects.toBeInstanceOf(RequestTimeoutError)
    expect(sent).toBe(false)
    deadline.expire()
    expect(cuts).toBe(1)
  })

  it('waits for a commit in flight: committed, the request is not cut', async () => {
    let cuts = 0
    const deadline = new RequestDeadline(1000, () => cuts++)
    const commit = deferred<string>()
    const writing = deadline.write(() => commit.promise)
    deadline.expire()
    expect(cuts).toBe(0)
    commit.resolve('COMMIT')
    expect(await writing).toBe('COMMIT')
    expect(cuts).toBe(0)
    expect(deadline.cut).toBe(false)
    // What the handler does next is no longer cut, with a full statement budget.
    expect(() => {
      deadline.check()
    }).not.toThrow()
    expect(deadline.transactionTimeoutMs()).toBe(1000)
  })

  it('waits for a commit in flight: failed, the request is cut then', async () => {
    let cuts = 0
    const deadline = new RequestDeadline(1000, () => cuts++)
    const commit = deferred<string>()
    const writing = deadline.write(() => commit.promise)
    deadline.expire()
    commit.reject(new Error('Connection terminated unexpectedly'))
    await expect(writing).rejects.toThrow('Connection terminated unexpectedly')
    expect(cuts).toBe(1)
  })

  it('does not cut a request that committed before its deadline', async () => {
    let cuts = 0
    const deadline = new RequestDeadline(1000, () => cuts++)
    await deadline.write(() => Promise.resolve())
    deadline.expire()
    expect(cuts).toBe(0)
  })

  it("gives a transaction what is left of the request's time, at least 1 ms", () => {
    const deadline = new RequestDeadline(5000, () => undefined)
    const left = deadline.transactionTimeoutMs()
    expect(left).toBeGreaterThan(4000)
    expect(left).toBeLessThanOrEqual(5000)
    expect(new RequestDeadline(0.001, () => undefined).transactionTimeoutMs()).toBeGreaterThan(0)
  })
})
