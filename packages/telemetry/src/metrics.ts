/**
 * Metrics with the OpenTelemetry JS SDK: a meter provider of our own (never registered
 * globally) read either by a Prometheus scrape endpoint (`@opentelemetry/exporter-prometheus`,
 * served by a `node:http` server of ours so that tests can listen on port 0) or by a periodic
 * OTLP export (protobuf over HTTP, or gRPC).
 *
 * @see https://opentelemetry.io/docs/specs/otel/metrics/sdk_exporters/prometheus/
 * @see https://opentelemetry.io/docs/specs/otel/protocol/exporter/ (OTEL_EXPORTER_OTLP_*)
 * @module
 */
import { Metadata } from '@grpc/grpc-js'
import { diag, type Attributes, type Meter } from '@opentelemetry/api'
import { OTLPMetricExporter as GrpcMetricExporter } from '@opentelemetry/exporter-metrics-otlp-grpc'
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto'
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus'
import { resourceFromAttributes } from '@opentelemetry/resources'
import {
  MeterProvider,
  PeriodicExportingMetricReader,
  type IMetricReader,
  type PushMetricExporter,
} from '@opentelemetry/sdk-metrics'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** Where {@link createMetrics} sends what the meters record. */
export type MetricsExporterOptions =
  | {
      /** A Prometheus scrape endpoint, served by {@link Metrics.listen}. */
      readonly kind: 'prometheus'
      /** Path the metrics are served on; every other path is a 404. @default '/' */
      readonly path?: string
    }
  | {
      /** A periodic OTLP export. */
      readonly kind: 'otlp'
      /** `http` (OTLP protobuf over HTTP, `/v1/metrics`) or `grpc`. */
      readonly protocol: 'http' | 'grpc'
      /** `OTEL_EXPORTER_OTLP_ENDPOINT`: base URL ('' = the exporter's default). */
      readonly endpoint?: string
      /** `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`: full URL, wins over `endpoint`. */
      readonly metricsEndpoint?: string
      /** Headers sent with each export (`OTEL_EXPORTER_OTLP_HEADERS`). */
      readonly headers?: Readonly<Record<string, string>>
      /** Export timeout in milliseconds. @default 10000 */
      readonly timeoutMs?: number
      /** Milliseconds between exports (`OTEL_METRIC_EXPORT_INTERVAL`). @default 60000 */
      readonly intervalMs?: number
      /** Exporter instead of the OTLP one (tests, embedding). */
      readonly exporter?: PushMetricExporter
    }

/** What {@link createMetrics} needs. */
export interface MetricsOptions {
  /** The meter's instrumentation scope name (the server's package, `@gatehouse/auth`). */
  readonly instrumentationName: string
  /** Resource attributes (`service.name`, the server's version, `OTEL_RESOURCE_ATTRIBUTES`). */
  readonly resourceAttributes: Attributes
  readonly exporter: MetricsExporterOptions
}

/** The metrics of a process. */
export interface Metrics {
  /** The meter instruments are created on. */
  readonly meter: Meter
  /**
   * Prometheus only: opens the scrape endpoint on `host:port` (port 0 picks a free one).
   *
   * @returns The URL metrics are served on (`http://host:port/path`).
   * @throws {Error} For an OTLP exporter, or when the address cannot be listened on.
   */
  listen(host: string, port: number): Promise<string>
  /** Exports what is pending (OTLP); nothing to do for Prometheus. */
  forceFlush(): Promise<void>
  /** Stops the exports and closes the scrape endpoint. */
  shutdown(): Promise<void>
}

/** The Prometheus text exposition format's media type. */
const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8'

/** Answers one scrape: the collected metrics in the text format. */
async function serveScrape(
  exporter: PrometheusExporter,
  serializer: PrometheusSerializer,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { resourceMetrics, errors } = await exporter.collect()
  if (errors.length > 0) diag.error('metrics collection errors', ...errors)
  const body = serializer.serialize(resourceMetrics)
  res.writeHead(200, { 'content-type': PROMETHEUS_TEXT })
  res.end(req.method === 'HEAD' ? undefined : body)
}

/** The URL the OTLP metric exporter is given, or undefined for its default. */
export function metricsExportUrl(
  options: Extract<MetricsExporterOptions, { kind: 'otlp' }>,
): string | undefined {
  if (options.metricsEndpoint !== undefined && options.metricsEndpoint !== '') {
    return options.metricsEndpoint
  }
  if (options.endpoint === undefined || options.endpoint === '') return undefined
  if (options.protocol === 'grpc') return options.endpoint
  return `${options.endpoint.replace(/\/+$/, '')}/v1/metrics`
}

function otlpExporter(options: Extract<MetricsExporterOptions, { kind: 'otlp' }>) {
  if (options.exporter) return options.exporter
  const url = metricsExportUrl(options)
  const timeoutMillis = options.timeoutMs ?? 10_000
  if (options.protocol === 'http') {
    return new ProtoMetricExporter({ url, headers: { ...options.headers }, timeoutMillis })
  }
  const metadata = new Metadata()
  for (const [key, value] of Object.entries(options.headers ?? {})) metadata.set(key, value)
  return new GrpcMetricExporter({ url, metadata, timeoutMillis })
}

/**
 * Builds the metrics: a meter provider with the given resource and one reader. Nothing listens
 * until {@link Metrics.listen}; an OTLP export starts at once (every `intervalMs`).
 */
export function createMetrics(options: MetricsOptions): Metrics {
  const resource = resourceFromAttributes(options.resourceAttributes)
  const exporterOptions = options.exporter
  let reader: IMetricReader
  let prometheus: PrometheusExporter | undefined
  if (exporterOptions.kind === 'prometheus') {
    prometheus = new PrometheusExporter({ preventServerStart: true })
    reader = prometheus
  } else {
    const interval = exporterOptions.intervalMs ?? 60_000
    reader = new PeriodicExportingMetricReader({
      exporter: otlpExporter(exporterOptions),
      exportIntervalMillis: interval,
      exportTimeoutMillis: Math.min(interval, exporterOptions.timeoutMs ?? 10_000),
    })
  }
  const provider = new MeterProvider({ resource, readers: [reader] })
  const meter = provider.getMeter(options.instrumentationName)
  let server: Server | undefined
  return {
    meter,
    async listen(host, port) {
      if (prometheus === undefined || exporterOptions.kind !== 'prometheus') {
        throw new Error('only a Prometheus exporter listens')
      }
      if (server !== undefined) throw new Error('the metrics endpoint is already listening')
      const path = exporterOptions.path ?? '/'
      const exporter = prometheus
      // Without otel_scope_name on every series: one meter per server.
      const serializer = new PrometheusSerializer(undefined, false, undefined, false, true)
      const created = createServer((req, res) => {
        const url = req.url ?? '/'
        const q = url.indexOf('?')
        if ((q < 0 ? url : url.slice(0, q)) !== path) {
          res.writeHead(404).end()
          return
        }
        if (req.method !== 'GET' && req.method !== 'HEAD') {
          res.writeHead(405, { allow: 'GET, HEAD' }).end()
          return
        }
        serveScrape(exporter, serializer, req, res).catch((error: unknown) => {
          diag.error('metrics scrape failed', error)
          if (!res.headersSent) res.writeHead(500)
          res.end()
        })
      })
      // A scraper that stalls must not hold a socket open for ever (Slowloris).
      created.headersTimeout = 2000
      created.requestTimeout = 10_000
      server = created
      await new Promise<void>((resolve, reject) => {
        created.once('error', reject)
        created.listen(port, host, () => {
          created.off('error', reject)
          resolve()
        })
      })
      const address = created.address() as AddressInfo
      const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address
      return `http://${shown}:${String(address.port)}${path}`
    },
    forceFlush: () => provider.forceFlush(),
    async shutdown() {
      const open = server
      server = undefined
      if (open?.listening) {
        open.closeAllConnections()
        await new Promise<void>((resolve) =>
          open.close(() => {
            resolve()
          }),
        )
      }
      await provider.shutdown()
    },
  }
}
