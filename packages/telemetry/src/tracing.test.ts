import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base'
import { describe, expect, it } from 'vitest'
import { createTracing, traceExportUrl } from './tracing.js'

const base = { instrumentationName: 'test', serviceName: 'svc' } as const

describe('traceExportUrl', () => {
  it('prefers the traces endpoint, appends /v1/traces for http only, else the default', () => {
    const t = { ...base, samplingRate: 1 }
    expect(traceExportUrl({ ...t, exporterProtocol: 'http' })).toBeUndefined()
    expect(traceExportUrl({ ...t, exporterProtocol: 'http', endpoint: 'http://c:4318/' })).toBe(
      'http://c:4318/v1/traces',
    )
    expect(traceExportUrl({ ...t, exporterProtocol: 'grpc', endpoint: 'http://c:4317' })).toBe(
      'http://c:4317',
    )
    expect(
      traceExportUrl({
        ...t,
        exporterProtocol: 'http',
        endpoint: 'http://c:4318',
        tracesEndpoint: 'http://t/x',
      }),
    ).toBe('http://t/x')
  })
})

describe('createTracing', () => {
  it('continues a traceparent, links children, and samples new traces with the random source', async () => {
    const exporter = new InMemorySpanExporter()
    let next = 0.5
    const tracing = createTracing({
      ...base,
      samplingRate: 0.1,
      exporterProtocol: 'http',
      exporter,
      random: () => next,
    })
    // 0.5 is not below 0.1: no span, and no tracer call.
    expect(tracing.startServer('s', {})).toBeUndefined()
    next = 0.05
    const root = tracing.startServer('s', { a: 1 })
    expect(root).toBeDefined()
    root?.span.end()
    const parent = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }
    next = 0.99 // a sampled caller is followed whatever the rate
    const server = tracing.startServer('server', {}, parent)
    if (server === undefined) throw new Error('not sampled')
    tracing.startChild(server, 'child', {}).span.end()
    server.span.end()
    // An unsampled caller is followed too, even when a new trace would be sampled.
    next = 0
    expect(
      tracing.startServer('s', {}, { traceparent: parent.traceparent.replace(/01$/, '00') }),
    ).toBeUndefined()
    await tracing.forceFlush()
    const spans = exporter.getFinishedSpans()
    const byName = new Map(spans.map((s) => [s.name, s]))
    expect(byName.get('server')?.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736')
    expect(byName.get('server')?.parentSpanContext?.spanId).toBe('00f067aa0ba902b7')
    expect(byName.get('child')?.parentSpanContext?.spanId).toBe(
      byName.get('server')?.spanContext().spanId,
    )
    expect(spans.map((s) => s.resource.attributes['service.name'])).toEqual(['svc', 'svc', 'svc'])
    await tracing.shutdown()
  })

  it('refuses a sampling rate outside 0 to 1', () => {
    expect(() => createTracing({ ...base, samplingRate: 2, exporterProtocol: 'http' })).toThrow(
      'samplingRate must be between 0 and 1',
    )
  })
})
