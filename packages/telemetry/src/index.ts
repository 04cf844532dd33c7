/**
 * `@gatehouse/telemetry`: the OpenTelemetry setup both Gatehouse servers share (tracing, metrics,
 * SDK diagnostics).
 *
 * @module
 */
export {
  createTracing,
  endWhenSettled,
  endWithError,
  traceExportUrl,
  type TraceCarrier,
  type TraceSpan,
  type Tracing,
  type TracingOptions,
} from './tracing.js'
export {
  createMetrics,
  metricsExportUrl,
  type Metrics,
  type MetricsExporterOptions,
  type MetricsOptions,
} from './metrics.js'
export { enableDiagnostics, type DiagnosticsLogger } from './diagnostics.js'
