/**
 * In-test OTLP receivers (protobuf over HTTP on `/v1/traces` and `/v1/metrics`, and gRPC
 * `TraceService/Export` and `MetricsService/Export`) that decode what arrives with the
 * OpenTelemetry proto definitions (the protobufjs messages generated from opentelemetry-proto
 * that `@opentelemetry/otlp-transformer` 0.57 ships, installed as `otlp-proto`).
 */
import * as grpc from '@grpc/grpc-js'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'

interface ProtoType {
  decode(bytes: Uint8Array): unknown
  encode(message: object): { finish(): Uint8Array }
  toObject(message: unknown, options: object): unknown
}

const require = createRequire(import.meta.url)
const root = require('otlp-proto/build/src/generated/root.js') as {
  opentelemetry: {
    proto: {
      collector: {
        trace: {
          v1: { ExportTraceServiceRequest: ProtoType; ExportTraceServiceResponse: ProtoType }
        }
        metrics: {
          v1: { ExportMetricsServiceRequest: ProtoType; ExportMetricsServiceResponse: ProtoType }
        }
      }
    }
  }
}
const { ExportTraceServiceRequest, ExportTraceServiceResponse } =
  root.opentelemetry.proto.collector.trace.v1
const { ExportMetricsServiceRequest, ExportMetricsServiceResponse } =
  root.opentelemetry.proto.collector.metrics.v1

/** An attribute value as OTLP carries it. */
interface AnyValue {
  stringValue?: string
  intValue?: string
  boolValue?: boolean
  doubleValue?: number
}

interface KeyValue {
  key: string
  value?: AnyValue
}

interface DecodedRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] }
    scopeSpans?: {
      spans?: {
        name: string
        traceId: Buffer
        spanId: Buffer
        parentSpanId?: Buffer
        kind?: number
        attributes?: KeyValue[]
        status?: { code?: number }
      }[]
    }[]
  }[]
}

/** One received span, flattened. */
export interface ReceivedSpan {
  readonly name: string
  readonly traceId: string
  readonly spanId: string
  /** '' for a root span. */
  readonly parentSpanId: string
  /** OTLP `SpanKind`: 1 internal, 2 server, 3 client. */
  readonly kind: number
  readonly attributes: Record<string, string | number | boolean>
  readonly resource: Record<string, string | number | boolean>
}

function attributes(list: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {}
  for (const { key, value } of list ?? []) {
    if (value?.stringValue !== undefined) out[key] = value.stringValue
    else if (value?.intValue !== undefined) out[key] = Number(value.intValue)
    else if (value?.boolValue !== undefined) out[key] = value.boolValue
    else if (value?.doubleValue !== undefined) out[key] = value.doubleValue
  }
  return out
}

function flatten(bytes: Uint8Array): ReceivedSpan[] {
  const decoded = ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(bytes), {
    longs: String,
  }) as DecodedRequest
  return (decoded.resourceSpans ?? []).flatMap((rs) => {
    const resource = attributes(rs.resource?.attributes)
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        name: s.name,
        traceId: Buffer.from(s.traceId).toString('hex'),
        spanId: Buffer.from(s.spanId).toString('hex'),
        parentSpanId: s.parentSpanId ? Buffer.from(s.parentSpanId).toString('hex') : '',
        kind: s.kind ?? 0,
        attributes: attributes(s.attributes),
        resource,
      })),
    )
  })
}

interface NumberPoint {
  attributes?: KeyValue[]
  asInt?: string
  asDouble?: number
}

interface HistogramPoint {
  attributes?: KeyValue[]
  count?: string
  sum?: number
}

interface DecodedMetricsRequest {
  resourceMetrics?: {
    resource?: { attributes?: KeyValue[] }
    scopeMetrics?: {
      metrics?: {
        name: string
        unit?: string
        sum?: { dataPoints?: NumberPoint[] }
        gauge?: { dataPoints?: NumberPoint[] }
        histogram?: { dataPoints?: HistogramPoint[] }
      }[]
    }[]
  }[]
}

/** One received metric data point, flattened (histograms give their count and sum). */
export interface ReceivedPoint {
  /** The instrument's name as the SDK exports it (`http.server.request.duration`). */
  readonly name: string
  readonly unit: string
  readonly kind: 'sum' | 'gauge' | 'histogram'
  readonly attributes: Record<string, string | number | boolean>
  /** Sum and gauge: the value; histogram: the count. */
  readonly value: number
  /** Histogram only: the sum of the recorded values. */
  readonly sum?: number
  readonly resource: Record<string, string | number | boolean>
}

function flattenMetrics(bytes: Uint8Array): ReceivedPoint[] {
  const decoded = ExportMetricsServiceRequest.toObject(ExportMetricsServiceRequest.decode(bytes), {
    longs: String,
  }) as DecodedMetricsRequest
  return (decoded.resourceMetrics ?? []).flatMap((rm) => {
    const resource = attributes(rm.resource?.attributes)
    return (rm.scopeMetrics ?? []).flatMap((sm) =>
      (sm.metrics ?? []).flatMap((m): ReceivedPoint[] => {
        const base = { name: m.name, unit: m.unit ?? '', resource }
        const number = (kind: 'sum' | 'gauge', points: NumberPoint[] | undefined) =>
          (points ?? []).map((p) => ({
            ...base,
            kind,
            attributes: attributes(p.attributes),
            value: p.asDouble ?? Number(p.asInt ?? 0),
          }))
        if (m.sum) return number('sum', m.sum.dataPoints)
        if (m.gauge) return number('gauge', m.gauge.dataPoints)
        return (m.histogram?.dataPoints ?? []).map((p) => ({
          ...base,
          kind: 'histogram' as const,
          attributes: attributes(p.attributes),
          value: Number(p.count ?? 0),
          sum: p.sum ?? 0,
        }))
      }),
    )
  })
}

/** A running receiver. */
export interface OtlpReceiver {
  /** The endpoint for `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  readonly endpoint: string
  /** Every span received so far. */
  readonly spans: ReceivedSpan[]
  /** Every metric data point received so far, export after export. */
  readonly metrics: ReceivedPoint[]
  /** Request headers of the exports (HTTP: lower-case names; gRPC: metadata). */
  readonly headers: Record<string, string>[]
  close(): Promise<void>
}

/** Starts an OTLP/HTTP (protobuf) receiver of traces and metrics on a random loopback port. */
export async function startHttpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = []
  const metrics: ReceivedPoint[] = []
  const headers: Record<string, string>[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      let body: Uint8Array
      if (req.method === 'POST' && req.url === '/v1/traces') {
        spans.push(...flatten(Buffer.concat(chunks)))
        body = ExportTraceServiceResponse.encode({}).finish()
      } else if (req.method === 'POST' && req.url === '/v1/metrics') {
        metrics.push(...flattenMetrics(Buffer.concat(chunks)))
        body = ExportMetricsServiceResponse.encode({}).finish()
      } else {
        res.writeHead(404).end()
        return
      }
      headers.push(Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])))
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(Buffer.from(body))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return receiver(port, spans, metrics, headers, (done) => {
    server.closeAllConnections()
    server.close(() => {
      done()
    })
  })
}

/** Starts an OTLP/gRPC receiver of traces and metrics on a random loopback port. */
export async function startGrpcReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = []
  const metrics: ReceivedPoint[] = []
  const headers: Record<string, string>[] = []
  const server = new grpc.Server()
  const exportMethod = (path: string) => ({
    Export: {
      path,
      requestStream: false,
      responseStream: false,
      requestSerialize: (value: Buffer) => value,
      requestDeserialize: (bytes: Buffer) => bytes,
      responseSerialize: (value: Buffer) => value,
      responseDeserialize: (bytes: Buffer) => bytes,
    },
  })
  const handler =
    (receive: (bytes: Buffer) => void, response: Uint8Array) =>
    (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) => {
      headers.push(
        Object.fromEntries(Object.entries(call.metadata.getMap()).map(([k, v]) => [k, String(v)])),
      )
      receive(call.request)
      done(null, Buffer.from(response))
    }
  server.addService(exportMethod('/opentelemetry.proto.collector.trace.v1.TraceService/Export'), {
    Export: handler(
      (bytes) => spans.push(...flatten(bytes)),
      ExportTraceServiceResponse.encode({}).finish(),
    ),
  })
  server.addService(
    exportMethod('/opentelemetry.proto.collector.metrics.v1.MetricsService/Export'),
    {
      Export: handler(
        (bytes) => metrics.push(...flattenMetrics(bytes)),
        ExportMetricsServiceResponse.encode({}).finish(),
      ),
    },
  )
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, p) => {
      if (error !== null) reject(error)
      else resolve(p)
    })
  })
  return receiver(port, spans, metrics, headers, (done) => {
    server.tryShutdown(() => {
      done()
    })
  })
}

/** The {@link OtlpReceiver} on loopback `port`; `stop` calls `done` once the server is closed. */
function receiver(
  port: number,
  spans: ReceivedSpan[],
  metrics: ReceivedPoint[],
  headers: Record<string, string>[],
  stop: (done: () => void) => void,
): OtlpReceiver {
  return {
    endpoint: `http://127.0.0.1:${String(port)}`,
    spans,
    metrics,
    headers,
    close: () =>
      new Promise((resolve) => {
        stop(resolve)
      }),
  }
}
