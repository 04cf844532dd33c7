/**
 * A {@link Db} that lets a request's deadline decide what its statements may still do (see
 * `api/http/deadline.ts`): once the request has been answered with its timeout nothing of it is sent,
 * a transaction rolls back instead of committing, and a write already sent is waited for before
 * the request is answered. Statements outside a request (start-up, the mail queue's worker, the
 * clean-up job) use the database itself.
 *
 * @module
 */
import type { Db, Queryable, TransactionOptions, Tx } from './db.js'

/** What a request lets its database work do; implemented by the request's deadline. */
export interface WriteGuard {
  /**
   * Throws when the request must send nothing more (it has been answered with its timeout): the
   * statement is not sent and its transaction rolls back.
   */
  check(): void
  /**
   * Sends a statement that commits (a `COMMIT`, or a write outside a transaction), once its
   * connection is held: throws as {@link WriteGuard.check} does, else counts it as in flight
   * until it settles, so that the request is not answered with a timeout while its outcome is
   * unknown.
   */
  write<T>(send: () => Promise<T>): Promise<T>
  /**
   * The `statement_timeout` of a transaction starting now, in milliseconds: what the request has
   * left before its deadline (at least 1).
   */
  transactionTimeoutMs(): number
}

/** Whether a statement only reads (it starts with `SELECT`): one in flight can be abandoned. */
export function isReadOnlyStatement(text: string): boolean {
  return /^\s*SELECT\b/i.test(text)
}

function guardedQueryable(inner: Queryable, guard: WriteGuard): Queryable {
  return {
    t: inner.t,
    query: async (text, params) => {
      guard.check()
      return inner.query(text, params)
    },
    exec: async (script) => {
      guard.check()
      return inner.exec(script)
    },
  }
}

/**
 * `db` under one request's guard: writes outside a transaction and every `COMMIT` go through
 * {@link WriteGuard.write}, every other statement is checked first, and each transaction gets the
 * request's time left as its statement and lock timeout.
 *
 * The guard is handed over explicitly (each request's work sees a context whose `db` is this,
 * see `api/http/request-app-context.ts`) rather than found through an `AsyncLocalStorage`: on
 * Node 20 an enabled `AsyncLocalStorage` runs hooks on every promise of the process, which cost
 * refresh rotations about a tenth of the server's CPU (bench/RESULTS.md, issue 34).
 *
 * @param guard The request's guard (its deadline).
 */
export function guardedDb(db: Db, guard: WriteGuard): Db {
  return {
    kind: db.kind,
    maxConnections: db.maxConnections,
    t: db.t,
    query: async (text, params, options = {}) => {
      guard.check()
      if (isReadOnlyStatement(text)) return db.query(text, params, options)
      // Counted as in flight only once its connection is held: a request waiting for one is cut.
      const { commit } = options
      return db.query(text, params, {
        commit: (send) => guard.write(() => (commit ? commit(send) : send())),
      })
    },
    exec: async (script) => guard.write(() => db.exec(script)),
    ...(db.poolStats ? { poolStats: db.poolStats.bind(db) } : {}),
    async transaction<T>(fn: (tx: Tx) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
      guard.check()
      const { commit } = options
      return db.transaction((tx) => fn(guardedQueryable(tx, guard)), {
        timeoutMs: options.timeoutMs ?? guard.transactionTimeoutMs(),
        commit: (send) => guard.write(() => (commit ? commit(send) : send())),
      })
    },
    close: () => db.close(),
  }
}
