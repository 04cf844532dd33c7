import { describe, expect, it } from 'vitest'
import { DatabaseUnavailableError, isDatabaseUnavailable } from './db.js'
import { beginStatements, derivedPoolSize } from './pg.js'

describe('isDatabaseUnavailable', () => {
  const withCode = (code: string) => Object.assign(new Error(code), { code })

  it('is true for a server that cannot be reached or cannot serve now', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EAI_AGAIN']) {
      expect(isDatabaseUnavailable(withCode(code))).toBe(true)
    }
    // Shut down, crashed, starting up, full; class 08 (connection exception).
    for (const code of ['57P01', '57P02', '57P03', '53300', '08006', '08P01']) {
      expect(isDatabaseUnavailable(withCode(code))).toBe(true)
    }
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true)
    expect(isDatabaseUnavailable(new Error('timeout exceeded when trying to connect'))).toBe(true)
    expect(isDatabaseUnavailable(new AggregateError([withCode('ECONNREFUSED')]))).toBe(true)
    expect(isDatabaseUnavailable(new DatabaseUnavailableError(new Error('x')))).toBe(true)
  })

  it('is false for a statement that is wrong, conflicts or times out', () => {
    for (const code of ['23505', '55P03', '57014', '42P01', '3D000', '28P01']) {
      expect(isDatabaseUnavailable(withCode(code))).toBe(false)
    }
    expect(isDatabaseUnavailable(new Error('syntax error'))).toBe(false)
    expect(isDatabaseUnavailable('Connection terminated')).toBe(false)
  })
})

describe('beginStatements', () => {
  it('opens a plain transaction without a timeout', () => {
    expect(beginStatements(undefined)).toBe('BEGIN')
  })

  it("sets the transaction's statement and lock timeouts, the lock one at most 5 s", () => {
    expect(beginStatements(1234.7)).toBe(
      'BEGIN; SET LOCAL statement_timeout = 1234; SET LOCAL lock_timeout = 1234',
    )
    expect(beginStatements(9000)).toBe(
      'BEGIN; SET LOCAL statement_timeout = 9000; SET LOCAL lock_timeout = 5000',
    )
    expect(beginStatements(0.2)).toBe(
      'BEGIN; SET LOCAL statement_timeout = 1; SET LOCAL lock_timeout = 1',
    )
  })
})

describe('derivedPoolSize', () => {
  const server = { maxConnections: 100, reserved: 3, roleLimit: -1, databaseLimit: -1 }

  it('takes half of what the server leaves after its reserved slots', () => {
    expect(derivedPoolSize(server)).toBe(48)
  })

  it("honours the role's and the database's CONNECTION LIMIT, whichever is lower", () => {
    expect(derivedPoolSize({ ...server, roleLimit: 4 })).toBe(2)
    expect(derivedPoolSize({ ...server, databaseLimit: 10 })).toBe(5)
    expect(derivedPoolSize({ ...server, roleLimit: 30, databaseLimit: 12 })).toBe(6)
  })

  it('never goes below one connection', () => {
    expect(derivedPoolSize({ ...server, maxConnections: 4 })).toBe(1)
    expect(derivedPoolSize({ ...server, roleLimit: 1 })).toBe(1)
  })
})
