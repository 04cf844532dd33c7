/**
 * The rate limit service's tracing from its settings (`TRACING_*`, `OTEL_EXPORTER_OTLP_*`), built
 * with `@gatehouse/telemetry`. Span names and attributes are upstream's where it has them
 * (`ShouldRateLimit Execution`, `Redis Pipeline Execution`) and OpenTelemetry's RPC and HTTP
 * conventions for the server spans.
 *
 * @module
 */
import { createTracing, type Tracing } from '@gatehouse/telemetry'
import type { Random } from '../clock.js'
import type { Settings } from '../settings/settings.js'

export {
  endWhenSettled,
  endWithError,
  type TraceCarrier,
  type TraceSpan,
  type Tracing,
} from '@gatehouse/telemetry'

/**
 * The tracing the settings ask for, or undefined when `TRACING_ENABLED` is false (then nothing on
 * the request path calls a tracer).
 *
 * @param random Draws the sampling of new traces.
 */
export function buildTracing(settings: Readonly<Settings>, random: Random): Tracing | undefined {
  const t = settings.tracing
  if (!t.enabled) return undefined
  return createTracing({
    instrumentationName: '@gatehouse/ratelimit',
    serviceName: t.serviceName,
    serviceNamespace: t.serviceNamespace,
    serviceInstanceId: t.serviceInstanceId,
    samplingRate: t.samplingRate,
    exporterProtocol: t.exporterProtocol,
    endpoint: t.endpoint,
    tracesEndpoint: t.tracesEndpoint,
    headers: { ...t.headers, ...t.tracesHeaders },
    timeoutMs: t.tracesTimeoutMs > 0 ? t.tracesTimeoutMs : t.timeoutMs,
    random,
  })
}
