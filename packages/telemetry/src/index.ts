/**
 * `@gatehouse/telemetry`: the OpenTelemetry setup both Gatehouse servers share (tracing today).
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
