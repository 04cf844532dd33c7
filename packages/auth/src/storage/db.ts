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
  /** Gatehouse's durable mail queue (migration 0005). */
  readonly mailQueue: string
  /** Custom OAuth/OIDC providers (migration 0006). */
  readonly customOauthProviders: string
  /** Passkeys (migration 0007). */
  readonly webauthnCredentials: string
  /** Pending WebAuthn ceremonies (migration 0007). */
  readonly webauthnChallenges: string
  /** SAML single sign-on (migration 0008, upstream's tables). */
  readonly ssoProviders: string
  readonly ssoDomains: string
  readonly samlProviders: string
  readonly samlRelayStates: string
  /** The SAML assertions already accepted (migration 0011). */
  readonly samlUsedAssertions: string
  /** The OAuth server's registered clients (migration 0009). */
  readonly oauthClients: string
  /** The OAuth server's authorization requests (migration 0009). */
  readonly oauthAuthorizations: string
  /** The consents users gave OAuth clients (migration 0009). */
  readonly oauthConsents: string
  /** Users' sets of MFA recovery codes (migration 0010). */
  readonly mfaRecoveryCodeSets: string
  /** MFA recovery codes, hashed (migration 0010). */
  readonly mfaRecoveryCodes: string
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
    options?: QueryOptions,
  ) => Promise<{ rows: R[]; rowCount: number }>
  /** Runs a script of several statements without parameters (migrations). */
  readonly exec: (script: string) => Promise<void>
}

/** A transaction in progress; see {@link Db.transaction}. */
export type Tx = Queryable

/**
 * Sends a statement that commits (a transaction's `COMMIT`, or a statement outside a
 * transaction), once its connection is held: it either calls `send` (and returns its promise) or
 * throws instead, and nothing is sent (a transaction is rolled back). The request deadline uses
 * it so that a request it has answered never commits.
 */
export type CommitHook = <T>(send: () => Promise<T>) => Promise<T>

/** How one statement runs; see {@link Queryable.query}. */
export interface QueryOptions {
  /**
   * Sends the statement through this hook once it has a connection (outside a transaction only;
   * ignored inside one, whose `COMMIT` has its own).
   * @default sends it
   */
  readonly commit?: CommitHook
}

/** How one transaction runs; see {@link Db.transaction}. */
export interface TransactionOptions {
  /**
   * The transaction's `statement_timeout`, and its `lock_timeout` when shorter than the
   * connection's, in milliseconds (at least 1): what a request has left before its deadline.
   * @default the connection's settings
   */
  readonly timeoutMs?: number
  /**
   * Sends the `COMMIT` (or throws instead: the transaction is rolled back).
   * @default sends it
   */
  readonly commit?: CommitHook
}

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
   *
   * @throws {@link DatabaseUnavailableError} When the connection cannot be made or is lost.
   */
  transaction<T>(fn: (tx: Tx) => Promise<T>, options?: TransactionOptions): Promise<T>
  /** Closes every connection (waits for queries in flight). */
  close(): Promise<void>
  /** The pool's state now (PostgreSQL; PGlite has no pool). */
  poolStats?(): PoolStats
}

/**
 * A statement whose text depends on the table names, built once per {@link Tables}: `build` runs
 * on the first call for a table set, and later calls return the same string. For the hot
 * statements, whose texts are long: building one anew on every call costs the concatenation, and
 * the driver's cache of prepared statements, keyed by the text, then hashes the new string again.
 *
 * @param build Makes the statement's text for one table set.
 */
export function statementFor(build: (t: Tables) => string): (t: Tables) => string {
  const built = new WeakMap<Tables, string>()
  return (t) => {
    let text = built.get(t)
    if (text === undefined) {
      text = build(t)
      built.set(t, text)
    }
    return text
  }
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
    mailQueue: `${p}mail_queue`,
    customOauthProviders: `${p}custom_oauth_providers`,
    webauthnCredentials: `${p}webauthn_credentials`,
    webauthnChallenges: `${p}webauthn_challenges`,
    ssoProviders: `${p}sso_providers`,
    ssoDomains: `${p}sso_domains`,
    samlProviders: `${p}saml_providers`,
    samlRelayStates: `${p}saml_relay_states`,
    samlUsedAssertions: `${p}saml_used_assertions`,
    oauthClients: `${p}oauth_clients`,
    oauthAuthorizations: `${p}oauth_authorizations`,
    oauthConsents: `${p}oauth_consents`,
    mfaRecoveryCodeSets: `${p}mfa_recovery_code_sets`,
    mfaRecoveryCodes: `${p}mfa_recovery_codes`,
  }
}

/**
 * The database cannot serve now: the server cannot be reached (refused, reset, unknown host,
 * timed out), the connection was lost, or the server is shutting down, crashed, starting up or
 * full. Not a verdict on the statement: the same request may succeed once the database is back
 * (the API answers 503). `cause` is the driver's error.
 */
export class DatabaseUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`database unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    })
    this.name = 'DatabaseUnavailableError'
  }
}

/** Socket errors that mean the server cannot be reached or the connection is gone. */
const UNREACHABLE_ERRNO: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EADDRNOTAVAIL',
])

/**
 * SQLSTATEs of a server that cannot serve: `admin_shutdown`, `crash_shutdown`,
 * `cannot_connect_now` (starting up, shutting down, in recovery) and `too_many_connections`.
 * Class 08 (connection exception) is matched by its prefix.
 */
const UNAVAILABLE_SQLSTATE: ReadonlySet<string> = new Set(['57P01', '57P02', '57P03', '53300'])

/** What `pg` says when its connection is lost or cannot be made (its errors carry no code). */
const LOST_CONNECTION =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout)/

/**
 * Whether a driver error means the database is unavailable rather than the statement wrong (see
 * {@link DatabaseUnavailableError}): a socket error, a lost or timed-out connection, or a
 * server that is shutting down, crashed, starting up or out of connection slots.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseUnavailableError) return true
  if (!(error instanceof Error)) return false
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string') {
    if (UNREACHABLE_ERRNO.has(code) || UNAVAILABLE_SQLSTATE.has(code)) return true
    if (/^08[0-9A-Z]{3}$/.test(code)) return true
  }
  if (error instanceof AggregateError) return error.errors.some(isDatabaseUnavailable)
  return LOST_CONNECTION.test(error.message)
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
 * Whether a statement was cancelled by `statement_timeout` (SQLSTATE 57014 `query_canceled`): the
 * transaction's timeout, set to what its request had left (see `TransactionOptions.timeoutMs`).
 */
export function isStatementTimeout(error: unknown): boolean {
  return sqlState(error) === '57014'
}

/**
 * Whether a statement failed on a unique index or constraint (SQLSTATE 23505) of `table`, when
 * the driver names the table (both `pg` and PGlite do).
 */
export function isUniqueViolation(error: unknown, table: string): boolean {
  const named = (error as { table?: unknown } | null)?.table
  return sqlState(error) === '23505' && (named === undefined || named === table)
}
