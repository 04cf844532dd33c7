/**
 * The storage interface every model function takes: a PostgreSQL connection (a pool through `pg`
 * or an embedded PGlite) that runs parameterised SQL and transactions. Both backends run the same
 * SQL and the same migrations.
 */

/** Table names of one namespace (`DB_NAMESPACE` is a table-name prefix: `<ns>_users`). */
export interface Tables {
  readonly users: string
  readonly identities: string
  readonly sessions: string
  readonly refreshTokens: string
  readonly oneTimeTokens: string
  readonly flowState: string
  readonly auditLogEntries: string
  readonly mfaAmrClaims: string
  readonly mfaFactors: string
  readonly mfaChallenges: string
  readonly failedAttempts: string
  readonly schemaMigrations: string
}

/**
 * Something SQL can be sent to: the database itself or an open transaction.
 * Parameters use `$1…$n`; JSON values must be passed as `JSON.stringify(…)` with a `::jsonb` cast.
 */
export interface Queryable {
  /** Table names of this database's namespace. */
  readonly t: Tables
  /**
   * Runs one statement. `R` is the caller's description of the row shape (not checked).
   *
   * @returns The rows (empty for statements without `RETURNING`) and the affected-row count.
   */
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- row type chosen by the caller, as pg's `query<R>`
  readonly query: <R = Record<string, unknown>>(
    text: string,
    params?: readonly unknown[],
  ) => Promise<{ rows: R[]; rowCount: number }>
  /** Runs a script of several statements without parameters (migrations). */
  readonly exec: (script: string) => Promise<void>
}

/** A transaction in progress; see {@link Db.transaction}. */
export type Tx = Queryable

/** The connection pool's state: `pg.Pool`'s `totalCount`, `idleCount` and `waitingCount`. */
export interface PoolStats {
  /** Open connections, idle or in use. */
  readonly total: number
  readonly idle: number
  /** Queries waiting for a connection. */
  readonly waiting: number
  /** Most connections the pool opens. */
  readonly max: number
}

/** A database: pooled PostgreSQL or embedded PGlite. */
export interface Db extends Queryable {
  /** `postgres` or `pglite`, for logs. */
  readonly kind: 'postgres' | 'pglite'
  /**
   * Connections this database opens at most (`DB_MAX_POOL_SIZE`, or the size derived from the
   * server's limits when that is 0; 1 for PGlite). Requests beyond it wait for a free one.
   */
  readonly maxConnections: number
  /**
   * Runs `fn` inside `BEGIN … COMMIT` on one connection; rolls back and rethrows when `fn` throws.
   * Multi-statement writes and their audit-log entries always go through here.
   */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>
  /** Closes every connection (waits for queries in flight). */
  close(): Promise<void>
  /** The pool's state now (PostgreSQL; PGlite has no pool). */
  poolStats?(): PoolStats
}

/**
 * The table names for a namespace.
 *
 * @param namespace `DB_NAMESPACE`: empty, or a prefix such that tables are `<namespace>_users`.
 */
export function tableNames(namespace: string): Tables {
  const p = namespace === '' ? '' : `${namespace}_`
  return {
    users: `${p}users`,
    identities: `${p}identities`,
    sessions: `${p}sessions`,
    refreshTokens: `${p}refresh_tokens`,
    oneTimeTokens: `${p}one_time_tokens`,
    flowState: `${p}flow_state`,
    auditLogEntries: `${p}audit_log_entries`,
    mfaAmrClaims: `${p}mfa_amr_claims`,
    mfaFactors: `${p}mfa_factors`,
    mfaChallenges: `${p}mfa_challenges`,
    failedAttempts: `${p}failed_attempts`,
    schemaMigrations: `${p}schema_migrations`,
  }
}

/** The SQLSTATE of a driver error (`pg` and PGlite both set `code`), or `undefined`. */
function sqlState(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code
}

/**
 * Whether a statement failed because a lock stayed taken longer than `lock_timeout` (SQLSTATE
 * 55P03 `lock_not_available`).
 */
export function isLockTimeout(error: unknown): boolean {
  return sqlState(error) === '55P03'
}

/**
 * Whether a statement failed on a unique index or constraint (SQLSTATE 23505) of `table`, when
 * the driver names the table (both `pg` and PGlite do).
 */
export function isUniqueViolation(error: unknown, table: string): boolean {
  const named = (error as { table?: unknown } | null)?.table
  return sqlState(error) === '23505' && (named === undefined || named === table)
}
