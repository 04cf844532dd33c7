/**
 * Tracing with the OpenTelemetry JS SDK: a tracer provider of our own (never registered
 * globally), parent-based ratio sampling decided once per server span, a batch processor and an
 * OTLP exporter (protobuf over HTTP, or gRPC), and W3C Trace Context to continue a caller's
 * `traceparent` (Envoy's, a browser's). Used by the rate limit service; the auth server builds its tracing the same way.
 *
 * When tracing is off a server holds no {@link Tracing} at all, so its hot path skips every
 * tracer call behind one `undefined` check.
 *
 * @see https://opentelemetry.io/docs/specs/otel/protocol/exporter/ (OTEL_EXPORTER_OTLP_*)
 * @see https://www.w3.org/TR/trace-context/
 * @module
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
} from '@opentelemetry/api'
import { Metadata } from '@grpc/grpc-js'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { B3Propagator } from '@opentelemetry/propagator-b3'
import { OTLPTraceExporter as GrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc'
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { resourceFromAttributes } from '@opentelemetry/resources'
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  AlwaysOnSampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base'
import { randomUUID } from 'node:crypto'

/** What {@link createTracing} needs: upstream's `TRACING_*` and the OTLP exporter variables. */
export interface TracingOptions {
  /** The tracer's instrumentation scope name (the server's package, `@gatehouse/ratelimit`). */
  readonly instrumentationName: string
  /** `service.name`. */
  readonly serviceName: string
  /** `service.namespace`; left out when empty. */
  readonly serviceNamespace?: string
  /** `service.instance.id`; a random UUID v4 when empty. */
  readonly serviceInstanceId?: string
  /**
   * More resource attributes (the server's version, `OTEL_RESOURCE_ATTRIBUTES`); they win over
   * the three above.
   */
  readonly resourceAttributes?: Attributes
  /**
   * Fraction (0 to 1) of new traces sampled (drawn from `random`, as upstream's
   * `ParentBased(TraceIDRatioBased)` samples the trace ID); a caller's sampled flag is followed.
   */
  readonly samplingRate: number
  /** `http` (OTLP protobuf over HTTP, `/v1/traces`) or `grpc`. */
  readonly exporterProtocol: 'http' | 'grpc'
  /** `OTEL_EXPORTER_OTLP_ENDPOINT`: base URL ('' = the exporter's default). */
  readonly endpoint?: string
  /** `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: full URL, wins over `endpoint`. */
  readonly tracesEndpoint?: string
  /** Headers sent with each export (`OTEL_EXPORTER_OTLP_HEADERS`, then `_TRACES_HEADERS`). */
  readonly headers?: Readonly<Record<string, string>>
  /** Export timeout in milliseconds. @default 10000 */
  readonly timeoutMs?: number
  /** Exporter instead of the OTLP one (tests, embedding). */
  readonly exporter?: SpanExporter
  /** Batch delay in milliseconds. @default 5000 (the SDK's) */
  readonly scheduledDelayMs?: number
  /** Random source in [0, 1) for sampling new traces. @default Math.random */
  readonly random?: () => number
}

/**
 * Where trace context headers are read from: HTTP/2 or HTTP/1 request headers (a record), or
 * gRPC metadata (`get(key)` returns the values).
 */
export type TraceCarrier =
  Readonly<Record<string, string | string[] | undefined>> | { get(key: string): unknown[] }

const getter: TextMapGetter<TraceCarrier> = {
  keys: (carrier) =>
    'get' in carrier && typeof carrier.get === 'function' ? [] : Object.keys(carrier),
  get: (carrier, key) => {
    if ('get' in carrier && typeof carrier.get === 'function') {
      const values = (carrier as { get(key: string): unknown[] }).get(key)
      const first = values[0]
      return typeof first === 'string' ? first : undefined
    }
    const value = (carrier as Readonly<Record<string, string | string[] | undefined>>)[key]
    return value
  },
}

/** A span and what starting children of it needs. */
export interface TraceSpan {
  readonly span: Span
  readonly context: Context
}

/**
 * The tracing of a process. Spans start only through these methods: sampling is decided in
 * {@link Tracing.startServer}, and everything below a sampled server span is recorded.
 */
export interface Tracing {
  /**
   * Starts a server span for an incoming call, as the child of the caller's `traceparent` when
   * the carrier has a valid one, else of its Zipkin B3 parent (the single `b3` header or the
   * `x-b3-traceid`/`x-b3-spanid`/`x-b3-sampled`/`x-b3-flags` headers) when it has one.
   *
   * @returns The span, or undefined when the call is not sampled: a new trace outside the
   *   sampling rate (decided before any tracer call, so that unsampled calls cost one random
   *   number), or a caller's unsampled trace. Callers then trace nothing below it.
   */
  startServer(name: string, attributes: Attributes, carrier?: TraceCarrier): TraceSpan | undefined
  /** Starts an internal (or client) span under `parent`. */
  startChild(parent: TraceSpan, name: string, attributes: Attributes, kind?: SpanKind): TraceSpan
  /** Exports what is buffered. */
  forceFlush(): Promise<void>
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>
}

/** The endpoint URL the exporter is given, or undefined for its default. */
export function traceExportUrl(options: TracingOptions): string | undefined {
  if (options.tracesEndpoint !== undefined && options.tracesEndpoint !== '') {
    return options.tracesEndpoint
  }
  if (options.endpoint === undefined || options.endpoint === '') return undefined
  if (options.exporterProtocol === 'grpc') return options.endpoint
  return `${options.endpoint.replace(/\/+$/, '')}/v1/traces`
}

function buildExporter(options: TracingOptions): SpanExporter {
  const url = traceExportUrl(options)
  const timeoutMillis = options.timeoutMs ?? 10_000
  if (options.exporterProtocol === 'http') {
    return new ProtoTraceExporter({ url, headers: { ...options.headers }, timeoutMillis })
  }
  const metadata = new Metadata()
  for (const [key, value] of Object.entries(options.headers ?? {})) metadata.set(key, value)
  return new GrpcTraceExporter({ url, metadata, timeoutMillis })
}

/**
 * Builds the tracing.
 *
 * @throws {TypeError} When `samplingRate` is not between 0 and 1.
 */
export function createTracing(options: TracingOptions): Tracing {
  if (!(options.samplingRate >= 0 && options.samplingRate <= 1)) {
    throw new TypeError('samplingRate must be between 0 and 1')
  }
  const resource = resourceFromAttributes({
    'service.name': options.serviceName,
    ...(options.serviceNamespace ? { 'service.namespace': options.serviceNamespace } : {}),
    'service.instance.id': options.serviceInstanceId || randomUUID(),
    ...options.resourceAttributes,
  })
  const provider = new BasicTracerProvider({
    resource,
    // Sampling is decided in startServer before any tracer call (a random number for a new trace,
    // the caller's sampled flag otherwise), and children start only under a recording span: the
    // SDK's sampler has nothing left to decide. AlwaysOn spares the parent-based sampler's
    // per-span context lookups and validation (a tenth of a span's cost).
    sampler: new AlwaysOnSampler(),
    spanProcessors: [
      new BatchSpanProcessor(options.exporter ?? buildExporter(options), {
        scheduledDelayMillis: options.scheduledDelayMs ?? 5000,
      }),
    ],
  })
  const tracer = provider.getTracer(options.instrumentationName)
  const propagator = new W3CTraceContextPropagator()
  // Zipkin's B3, single header or multi-header (extraction reads both forms).
  const b3 = new B3Propagator()
  const random = options.random ?? Math.random
  const rate = options.samplingRate
  return {
    startServer(name, attributes, carrier) {
      let parent = ROOT_CONTEXT
      if (carrier !== undefined) {
        if (getter.get(carrier, 'traceparent') !== undefined) {
          parent = propagator.extract(ROOT_CONTEXT, carrier, getter)
        } else if (
          getter.get(carrier, 'b3') !== undefined ||
          getter.get(carrier, 'x-b3-traceid') !== undefined
        ) {
          parent = b3.extract(ROOT_CONTEXT, carrier, getter)
        }
      }
      const caller = trace.getSpanContext(parent)
      if (caller === undefined) {
        if (!(random() < rate)) return undefined
      } else if ((caller.traceFlags & TraceFlags.SAMPLED) === 0) {
        return undefined // the caller did not sample its trace: neither do we (ParentBased)
      }
      const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent)
      return { span, context: trace.setSpan(parent, span) }
    },
    startChild(parent, name, attributes, kind = SpanKind.INTERNAL) {
      const span = tracer.startSpan(name, { kind, attributes }, parent.context)
      return { span, context: trace.setSpan(parent.context, span) }
    },
    forceFlush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  }
}

/**
 * Ends `span` when `work` settles: plainly when it resolves, with an error status when it
 * rejects. Returns nothing: the caller keeps using `work` (whose rejection it handles).
 */
export function endWhenSettled(span: Span, work: Promise<unknown>): void {
  work.then(
    () => {
      span.end()
    },
    (error: unknown) => {
      endWithError(span, error)
    },
  )
}

/** Ends `span` with an error status and the error's message. */
export function endWithError(span: Span, error: unknown): void {
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: error instanceof Error ? error.message : String(error),
  })
  span.end()
}
