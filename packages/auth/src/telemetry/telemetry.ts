/**
 * The auth server's telemetry from its settings (`TRACING_*`, `METRICS_*`, `OTEL_*`, `DEBUG`),
 * built with `@gatehouse/telemetry`: resource attributes `service.name` (`OTEL_SERVICE_NAME`),
 * `auth.version` and `OTEL_RESOURCE_ATTRIBUTES`; OTLP traces; OTLP or Prometheus metrics; SDK
 * diagnostics through the server's logger.
 *
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import {
  createMetrics,
  createTracing,
  enableDiagnostics,
  type Metrics,
  type TraceSpan,
  type Tracing,
} from '@gatehouse/telemetry'
import type { Logger } from 'pino'
import { VERSION } from '../version.js'
import type { Settings } from '../conf/settings.js'
import type { ServiceLimiterStats } from '../limiter/service-limiter.js'
import type { PoolStats } from '../storage/db.js'
import { meterAuthMetrics, noAuthMetrics, type AuthMetrics } from './auth-metrics.js'

/** The instrumentation scope of the auth server's tracer and meter. */
export const INSTRUMENTATION_NAME = '@gatehouse/auth'

/** The telemetry of one auth server. */
export interface AuthTelemetry {
  /** Undefined when `TRACING_ENABLED` is off: nothing on the request path calls a tracer. */
  readonly tracing: Tracing | undefined
  /** The request span of the code running now (for the database spans). */
  readonly spans: AsyncLocalStorage<TraceSpan>
  /** The SDK metrics, undefined when `METRICS_ENABLED` is off. */
  readonly metrics: Metrics | undefined
  /** The counters the services call ({@link noAuthMetrics} when metrics are off). */
  readonly authMetrics: AuthMetrics
  /**
   * Opens the Prometheus endpoint on `OTEL_EXPORTER_PROMETHEUS_HOST`:`_PORT` when that is the
   * exporter. @returns Its URL, or undefined when there is none.
   */
  listen(): Promise<string | undefined>
  /** Exports the buffered spans and pending metrics (OTLP). */
  flush(): Promise<void>
  /**
   * Exports what is buffered, closes the endpoint and stops the diagnostics. Never rejects: an
   * export that fails is logged.
   */
  shutdown(): Promise<void>
}

/** The resource attributes of both signals. */
export function resourceAttributes(settings: Settings): Record<string, string> {
  return {
    'service.name': settings.telemetry.serviceName,
    'auth.version': VERSION,
    ...settings.telemetry.resourceAttributes,
  }
}

/**
 * Builds the telemetry the settings ask for. Nothing listens yet ({@link AuthTelemetry.listen});
 * an OTLP metric export starts its timer.
 *
 * @param pool Reads the database pool's state for the pool gauges.
 * @param rateLimit Reads the shared limiter's counters (undefined with the memory backend).
 */
export function buildTelemetry(
  settings: Settings,
  logger: Logger | undefined,
  pool: () => PoolStats | undefined,
  rateLimit: () => Readonly<ServiceLimiterStats> | undefined = () => undefined,
): AuthTelemetry {
  const t = settings.telemetry
  const stopDiagnostics =
    t.debug && logger ? enableDiagnostics(logger, Object.values(t.otlpHeaders)) : undefined
  const resource = resourceAttributes(settings)
  const protocol = t.otlpProtocol === 'grpc' ? 'grpc' : 'http'
  const tracing = t.tracingEnabled
    ? createTracing({
        instrumentationName: INSTRUMENTATION_NAME,
        serviceName: t.serviceName,
        resourceAttributes: resource,
        samplingRate: t.tracingSamplingRate,
        exporterProtocol: protocol,
        endpoint: t.otlpEndpoint,
        tracesEndpoint: t.otlpTracesEndpoint,
        headers: t.otlpHeaders,
        timeoutMs: t.otlpTimeoutMs,
      })
    : undefined
  const metrics = t.metricsEnabled
    ? createMetrics({
        instrumentationName: INSTRUMENTATION_NAME,
        resourceAttributes: resource,
        exporter:
          t.metricsExporter === 'prometheus'
            ? { kind: 'prometheus', path: '/' }
            : {
                kind: 'otlp',
                protocol,
                endpoint: t.otlpEndpoint,
                metricsEndpoint: t.otlpMetricsEndpoint,
                headers: t.otlpHeaders,
                timeoutMs: t.otlpTimeoutMs,
                intervalMs: t.metricExportIntervalMs,
              },
      })
    : undefined
  let listened: string | undefined
  return {
    tracing,
    spans: new AsyncLocalStorage<TraceSpan>(),
    metrics,
    authMetrics: metrics ? meterAuthMetrics(metrics.meter, pool, rateLimit) : noAuthMetrics,
    async listen() {
      if (metrics === undefined || t.metricsExporter !== 'prometheus') return undefined
      listened ??= await metrics.listen(t.prometheusHost, t.prometheusPort)
      return listened
    },
    async flush() {
      await Promise.all([tracing?.forceFlush(), metrics?.forceFlush()])
    },
    async shutdown() {
      // A collector that is down must not fail the server's shutdown: the loss is logged.
      const results = await Promise.allSettled([tracing?.shutdown(), metrics?.shutdown()])
      for (const result of results) {
        if (result.status === 'rejected') {
          const reason: unknown = result.reason
          logger?.warn(
            {
              component: 'telemetry',
              reason: reason instanceof Error ? reason.message : String(reason),
            },
            'telemetry not exported at shutdown',
          )
        }
      }
      stopDiagnostics?.()
    },
  }
}
