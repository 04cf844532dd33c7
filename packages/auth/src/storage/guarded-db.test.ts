import { describe, expect, it } from 'vitest'
import { tableNames, type Db, type Queryable, type TransactionOptions } from './db.js'
import { guardedDb, isReadOnlyStatement, type WriteGuard } from './guarded-db.js'

/** A database that records what it is sent, and the options of each transaction. */
function recordingDb() {
  const sent: string[] = []
  const transactions: TransactionOptions[] = []
  const t = tableNames('')
  const queryable: Queryable = {
    t,
    query: (text, _params, options = {}) => {
      const send = () => {
        sent.push(text)
        return Promise.resolve({ rows: [], rowCount: 0 })
      }
      return options.commit ? options.commit(send) : send()
    },
    exec: (script) => {
      sent.push(script)
      return Promise.resolve()
    },
  }
  const db: Db = {
    ...queryable,
    kind: 'postgres',
    maxConnections: 1,
    async transaction(fn, options = {}) {
      transactions.push(options)
      sent.push('BEGIN')
      try {
        const result = await fn(queryable)
        await (options.commit ?? ((send) => send()))(() => {
          sent.push('COMMIT')
          return Promise.resolve()
        })
        return result
      } catch (error) {
        sent.push('ROLLBACK')
        throw error
      }
    },
    close: () => Promise.resolve(),
  }
  return { db, sent, transactions }
}

/** A guard that counts writes and refuses everything once `closed`. */
function guard() {
  const state = { closed: false, writes: 0 }
  const value: WriteGuard = {
    check() {
      if (state.closed) throw new Error('answered')
    },
    write(send) {
      value.check()
      state.writes++
      return send()
    },
    transactionTimeoutMs: () => 250,
  }
  return { state, value }
}

describe('isReadOnlyStatement', () => {
  it('is true for SELECT only', () => {
    expect(isReadOnlyStatement('  select * from users')).toBe(true)
    expect(isReadOnlyStatement('SELECT 1')).toBe(true)
    expect(isReadOnlyStatement('WITH x AS (UPDATE users SET a = 1) SELECT 1')).toBe(false)
    expect(isReadOnlyStatement('UPDATE users SET a = 1')).toBe(false)
    expect(isReadOnlyStatement('SELECTED')).toBe(false)
  })
})

describe('guardedDb', () => {
  it("counts writes and COMMITs as the request's, and gives transactions its time left", async () => {
    const { db, transactions } = recordingDb()
    const { state, value } = guard()
    const guarded = guardedDb(db, value)
    await guarded.query('SELECT 1')
    expect(state.writes).toBe(0)
    await guarded.query('UPDATE x SET y = 1')
    await guarded.transaction((tx) => tx.query('INSERT INTO x VALUES (1)'))
    expect(state.writes).toBe(2)
    expect(transactions[0]?.timeoutMs).toBe(250)
  })

  it('sends nothing once the request was answered: its transaction rolls back', async () => {
    const { db, sent } = recordingDb()
    const { state, value } = guard()
    const guarded = guardedDb(db, value)
    await expect(
      guarded.transaction(async (tx) => {
        await tx.query('SELECT 1')
        state.closed = true
        await tx.query('INSERT INTO x VALUES (1)')
      }),
    ).rejects.toThrow('answered')
    state.closed = false
    await expect(
      guarded.transaction(async (tx) => {
        await tx.query('SELECT 2')
        state.closed = true
      }),
    ).rejects.toThrow('answered')
    await expect(guarded.query('SELECT 3')).rejects.toThrow('answered')
    await expect(guarded.query('DELETE FROM x')).rejects.toThrow('answered')
    await expect(guarded.transaction(() => Promise.resolve())).rejects.toThrow('answered')
    expect(sent).toEqual(['BEGIN', 'SELECT 1', 'ROLLBACK', 'BEGIN', 'SELECT 2', 'ROLLBACK'])
  })
})
