/**
 * Database spans: a {@link Db} whose statements are spans under the span of the request that
 * runs them (found through an `AsyncLocalStorage` the request hook fills). Our own thin wrapper
 * over the query function rather than `@opentelemetry/instrumentation-pg`, which patches `pg`
 * through require hooks and a global tracer provider.
 *
 * Only a server with tracing on wraps its database; a statement outside a sampled request (a
 * migration, an unsampled request) is sent without a span.
 *
 * @see https://opentelemetry.io/docs/specs/semconv/database/database-spans/
 * @module
 */
import type { AsyncLocalStorage } from 'node:async_hooks'
import { SpanKind } from '@opentelemetry/api'
import { endWithError, type TraceSpan, type Tracing } from '@gatehouse/telemetry'
import type { Db, Queryable, TransactionOptions, Tx } from '../storage/db.js'

/** The SQL keyword a statement starts with (`SELECT`, `WITH`, …), for its span name. */
export function operationOf(text: string): string {
  const match = /^\s*([A-Za-z]+)/.exec(text)
  return match?.[1]?.toUpperCase() ?? 'SQL'
}

/** Runs `work` in a child span of `parent` named `name`; the span ends when it settles. */
async function inSpan<T>(
  tracing: Tracing,
  spans: AsyncLocalStorage<TraceSpan>,
  parent: TraceSpan,
  name: string,
  attributes: Record<string, string>,
  work: () => Promise<T>,
): Promise<T> {
  const child = tracing.startChild(parent, name, attributes, SpanKind.CLIENT)
  try {
    const result = await spans.run(child, work)
    child.span.end()
    return result
  } catch (error) {
    endWithError(child.span, error)
    throw error
  }
}

function tracedQueryable(
  inner: Queryable,
  tracing: Tracing,
  spans: AsyncLocalStorage<TraceSpan>,
): Queryable {
  return {
    t: inner.t,
    query: (text, params, options) => {
      const parent = spans.getStore()
      if (parent === undefined) return inner.query(text, params, options)
      const operation = operationOf(text)
      return inSpan(
        tracing,
        spans,
        parent,
        operation,
        {
          'db.system.name': 'postgresql',
          'db.operation.name': operation,
          'db.query.text': text,
        },
        () => inner.query(text, params, options),
      )
    },
    exec: (script) => inner.exec(script),
  }
}

/**
 * `db` with a span per statement (`SELECT`, `UPDATE`, …, kind client, `db.query.text` the
 * parametrized SQL: values are never recorded) and a `transaction` span around each
 * transaction, children of the request span in `spans`.
 */
export function tracedDb(db: Db, tracing: Tracing, spans: AsyncLocalStorage<TraceSpan>): Db {
  const base = tracedQueryable(db, tracing, spans)
  return {
    kind: db.kind,
    maxConnections: db.maxConnections,
    t: db.t,
    query: base.query,
    exec: base.exec,
    ...(db.poolStats ? { poolStats: db.poolStats.bind(db) } : {}),
    transaction<T>(fn: (tx: Tx) => Promise<T>, options?: TransactionOptions): Promise<T> {
      const parent = spans.getStore()
      if (parent === undefined) return db.transaction(fn, options)
      return inSpan(tracing, spans, parent, 'transaction', { 'db.system.name': 'postgresql' }, () =>
        db.transaction((tx) => fn(tracedQueryable(tx, tracing, spans)), options),
      )
    },
    close: () => db.close(),
  }
}
