import { maskDatabaseUrl } from '../redact.js'
import { describe, expect, it } from 'vitest'
import { DatabaseUnavailableError } from './db.js'
import { describeDatabaseError, isTransientStartError, waitForDatabase } from './reach.js'

const URL_ = 'postgres://ann:s3cret@db.internal:6543/auth'
const withCode = (code: string, message = code, extra: object = {}) =>
  Object.assign(new Error(message), { code, ...extra })

describe('maskDatabaseUrl', () => {
  it('masks the password and password-like parameters, and keeps the rest', () => {
    expect(maskDatabaseUrl(URL_)).toBe('postgres://ann:***@db.internal:6543/auth')
    expect(maskDatabaseUrl('postgres://ann@db/auth?sslpassword=x&application_name=a')).toBe(
      'postgres://ann@db/auth?sslpassword=***&application_name=a',
    )
    expect(maskDatabaseUrl('not a url with s3cret')).not.toContain('s3cret')
  })
})

describe('isTransientStartError', () => {
  it('retries what may pass by itself', () => {
    for (const code of ['ECONNREFUSED', 'ETIMEDOUT', 'EAI_AGAIN', '57P03', '53300']) {
      expect(isTransientStartError(withCode(code))).toBe(true)
    }
    expect(isTransientStartError(new Error('Connection terminated unexpectedly'))).toBe(true)
    expect(isTransientStartError(new DatabaseUnavailableError(withCode('ECONNREFUSED')))).toBe(true)
  })

  it('reports a wrong setting at once', () => {
    for (const code of ['ENOTFOUND', '3D000', '28000', '28P01']) {
      expect(isTransientStartError(withCode(code))).toBe(false)
    }
    expect(isTransientStartError(new Error('bad'))).toBe(false)
  })
})

describe('describeDatabaseError', () => {
  it('says what a socket error means, with the address it names', () => {
    const refused = withCode('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.5:6543', {
      address: '10.0.0.5',
      port: 6543,
    })
    expect(describeDatabaseError(refused, URL_)).toBe(
      'connection refused by 10.0.0.5:6543 (is PostgreSQL running there?)',
    )
    expect(describeDatabaseError(withCode('ENOTFOUND'), URL_)).toBe('unknown host "db.internal"')
    expect(describeDatabaseError(withCode('ETIMEDOUT'), URL_)).toBe(
      'no answer from db.internal:6543 (timed out)',
    )
    expect(describeDatabaseError(new Error('timeout exceeded when trying to connect'), URL_)).toBe(
      'no answer from db.internal:6543 (timed out)',
    )
  })

  it("gives the server's own message otherwise, on one line", () => {
    expect(describeDatabaseError(withCode('3D000', 'database "auth" does not exist'), URL_)).toBe(
      'database "auth" does not exist',
    )
    expect(describeDatabaseError(new Error('two\n  lines'), URL_)).toBe('two lines')
  })
})

describe('waitForDatabase', () => {
  /** A clock that sleeping moves, and an attempt that fails with `errors` in turn. */
  function fake(errors: Error[]) {
    let now = 0
    const pauses: number[] = []
    let attempts = 0
    return {
      pauses,
      attempts: () => attempts,
      options: {
        now: () => now,
        sleep: (ms: number) => {
          pauses.push(ms)
          now += ms
          return Promise.resolve()
        },
        attempt: () => {
          attempts++
          const error = errors.shift()
          return error === undefined ? Promise.resolve() : Promise.reject(error)
        },
      },
    }
  }

  it('retries a database that is down with doubling pauses until it answers', async () => {
    const refused = withCode('ECONNREFUSED')
    const run = fake([refused, refused, withCode('57P03'), refused])
    const retries: number[] = []
    await waitForDatabase(URL_, {
      retryMs: 30_000,
      ...run.options,
      onRetry: (_error, delay) => retries.push(delay),
    })
    expect(run.attempts()).toBe(5)
    expect(run.pauses).toEqual([250, 500, 1000, 2000])
    expect(retries).toEqual(run.pauses)
  })

  it('gives up with the last error once the next pause would pass the budget', async () => {
    const errors = Array.from({ length: 20 }, () => withCode('ECONNREFUSED'))
    const run = fake(errors)
    await expect(waitForDatabase(URL_, { retryMs: 10_000, ...run.options })).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    })
    // 250 + 500 + 1000 + 2000 + 4000 = 7750 ms; the next pause (5000, the longest) would end past 10 s.
    expect(run.pauses).toEqual([250, 500, 1000, 2000, 4000])
  })

  it('tries once with a budget of 0, and never retries a wrong setting', async () => {
    const once = fake([withCode('ECONNREFUSED')])
    await expect(waitForDatabase(URL_, { retryMs: 0, ...once.options })).rejects.toThrow()
    expect(once.attempts()).toBe(1)
    const wrong = fake([withCode('28P01', 'password authentication failed for user "ann"')])
    await expect(waitForDatabase(URL_, { retryMs: 30_000, ...wrong.options })).rejects.toThrow(
      'password authentication failed',
    )
    expect(wrong.attempts()).toBe(1)
  })
})
