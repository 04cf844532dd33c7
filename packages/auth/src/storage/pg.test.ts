import { describe, expect, it } from 'vitest'
import { derivedPoolSize } from './pg.js'

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
