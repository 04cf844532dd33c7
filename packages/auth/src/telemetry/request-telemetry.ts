/**
 * The per-request telemetry hooks: a server span per request (upstream's `api` span of
 * `otelhttp`, with `http.route` the parametrized route and `http.route.params.<key>` each route
 * parameter, continuing an incoming `traceparent`), and the HTTP server metrics. Added only for
 * what is enabled: a server without tracing and metrics has no hook at all.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/observability/request-tracing.go
 * @module
 */
import type { AsyncLocalStorage } from 'node:async_hooks'
import { SpanStatusCode } from '@opentelemetry/api'
import type { TraceSpan, Tracing } from '@gatehouse/telemetry'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AuthMetrics } from './auth-metrics.js'

/** Upstream's span name for every request (`otelhttp.NewHandler(…, "api")`). */
export const REQUEST_SPAN_NAME = 'api'

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's span, when tracing is on and the request is sampled. */
    traceSpan?: TraceSpan
  }
}

/** `http.route` and `http.route.params.<key>` of a matched request. */
function routeAttributes(request: FastifyRequest): Record<string, string> {
  const route = request.routeOptions.url
  if (route === undefined) return {}
  const out: Record<string, string> = { 'http.route': route }
  const params = request.params as Record<string, unknown> | undefined
  for (const [key, value] of Object.entries(params ?? {})) {
    if (typeof value === 'string') out[`http.route.params.${key}`] = value
  }
  return out
}

/** The path of a request URL, without its query (which may hold tokens). */
function pathOf(url: string): string {
  const q = url.indexOf('?')
  return q < 0 ? url : url.slice(0, q)
}

/**
 * Adds the hooks to `server` (at its root, so that they run for every route and for 404s).
 *
 * @param tracing The server's tracing, or undefined when `TRACING_ENABLED` is off.
 * @param spans Where the request span is kept for the database spans (see `traced-db.ts`).
 * @param metrics The server's metrics, or undefined when `METRICS_ENABLED` is off.
 */
export function addRequestTelemetry(
  server: FastifyInstance,
  tracing: Tracing | undefined,
  spans: AsyncLocalStorage<TraceSpan>,
  metrics: AuthMetrics | undefined,
): void {
  /**
   * Sampled requests in flight. On Node 20 an enabled `AsyncLocalStorage` puts a hook on every
   * promise of the process, sampled request or not; so `spans` is disabled whenever no sampled
   * request runs (it is enabled again by the next `run`): unsampled requests pay for it only while
   * a sampled one runs.
   */
  let sampledInFlight = 0
  if (tracing !== undefined) {
    server.decorateRequest('traceSpan', undefined)
    server.addHook('onRequest', (request, _reply, done) => {
      const started = tracing.startServer(
        REQUEST_SPAN_NAME,
        {
          'http.request.method': request.method,
          'url.path': pathOf(request.url),
          ...routeAttributes(request),
        },
        request.headers,
      )
      if (started === undefined) {
        done()
        return
      }
      request.traceSpan = started
      sampledInFlight++
      // The rest of the request (hooks, handler, services, SQL) runs with the span in `spans`.
      spans.run(started, done)
    })
  }
  server.addHook('onResponse', (request, reply, done) => {
    const status = reply.statusCode
    const span = request.traceSpan?.span
    if (span !== undefined) {
      span.setAttribute('http.response.status_code', status)
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR })
      span.end()
      if (--sampledInFlight === 0) spans.disable()
    }
    if (metrics !== undefined) {
      const errorCode = reply.getHeader('x-sb-error-code')
      metrics.request({
        method: request.method,
        route: request.routeOptions.url,
        status,
        errorCode: typeof errorCode === 'string' ? errorCode : undefined,
        seconds: reply.elapsedTime / 1000,
      })
    }
    done()
  })
}
