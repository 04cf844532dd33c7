import { describe, expect, it } from 'vitest'
import { statementFor, tableNames } from './db.js'

describe('statementFor', () => {
  it('builds a statement once per table set and reuses the very string', () => {
    let builds = 0
    const sql = statementFor((t) => {
      builds++
      return `SELECT * FROM ${t.users}`
    })
    const plain = tableNames('')
    const prefixed = tableNames('gh')
    const first = sql(plain)
    expect(sql(plain)).toBe(first)
    expect(builds).toBe(1)
    expect(sql(prefixed)).toBe('SELECT * FROM gh_users')
    expect(first).toBe('SELECT * FROM users')
    expect(builds).toBe(2)
  })
})
