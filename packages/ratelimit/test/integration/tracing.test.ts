/**
 * Tracing end to end: spans exported over OTLP/HTTP and OTLP/gRPC to receivers started here,
 * decoded with the OpenTelemetry proto definitions: span names, attributes, parent/child links,
 * the continuation of a `traceparent` (or a B3 parent, single or multi-header) sent by Envoy,
 * both gRPC server implementations, /json,
 * the sampling rate, the OTLP headers, and the store span of every backend.
 */
import * as grpc from '@grpc/grpc-js'
import {
  redisKeyPrefix,
  sharedRedisUrl,
  startGrpcReceiver,
  startHttpReceiver,
  startMemcached,
  waitFor,
  type OtlpReceiver,
  type ReceivedSpan,
} from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../fixtures.js'
import { startService, type Harness } from '../harness.js'

const BASIC = fixture('integration/basic.yaml')
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT_ID = '00f067aa0ba902b7'
const request = (value: string) => ({
  domain: 'basic',
  descriptors: [{ entries: [{ key: 'one_per_minute', value }] }],
})

function traceparent(traceId: string, flags = '01'): grpc.Metadata {
  const metadata = new grpc.Metadata()
  metadata.set('traceparent', `00-${traceId}-${PARENT_ID}-${flags}`)
  return metadata
}

/** The spans of one trace, once `count` of them arrived. */
async function traceOf(h: Harness, receiver: OtlpReceiver, traceId: string, count: number) {
  await h.app.tracing?.forceFlush()
  return waitFor(
    () => {
      const spans = receiver.spans.filter((s) => s.traceId === traceId)
      return spans.length >= count ? spans : undefined
    },
    { what: `${String(count)} spans of trace ${traceId}`, timeout: 5000 },
  )
}

function named(spans: readonly ReceivedSpan[], name: string): ReceivedSpan {
  const span = spans.find((s) => s.name === name)
  if (span === undefined) throw new Error(`no span ${name} in ${JSON.stringify(spans)}`)
  return span
}

describe.each([
  { protocol: 'http', implementation: 'native', start: startHttpReceiver },
  { protocol: 'grpc', implementation: 'grpc-js', start: startGrpcReceiver },
] as const)('tracing over OTLP/$protocol ($implementation gRPC server)', (c) => {
  let receiver: OtlpReceiver
  let h: Harness
  beforeAll(async () => {
    receiver = await c.start()
    h = await startService({
      files: { 'basic.yaml': BASIC },
      env: {
        TRACING_ENABLED: 'true',
        TRACING_EXPORTER_PROTOCOL: c.protocol,
        TRACING_SERVICE_NAMESPACE: 'edge',
        TRACING_SERVICE_INSTANCE_ID: 'rl-1',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_HEADERS: 'x-tenant=t%201',
        GRPC_SERVER_IMPLEMENTATION: c.implementation,
      },
    })
  })
  afterAll(async () => {
    await h.close()
    await receiver.close()
  })

  it("continues the caller's traceparent: gRPC server span, decision, store round trip", async () => {
    const traceId = c.protocol === 'http' ? TRACE_ID : TRACE_ID.replace('4bf9', '5bf9')
    await h.client.shouldRateLimit(request('trace'), traceparent(traceId))
    const spans = await traceOf(h, receiver, traceId, 3)
    const server = named(spans, 'envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit')
    expect(server.parentSpanId).toBe(PARENT_ID)
    expect(server.kind).toBe(2)
    expect(server.attributes).toMatchObject({
      'rpc.system': 'grpc',
      'rpc.service': 'envoy.service.ratelimit.v3.RateLimitService',
      'rpc.method': 'ShouldRateLimit',
      'rpc.grpc.status_code': 0,
    })
    const decision = named(spans, 'ShouldRateLimit Execution')
    expect(decision.parentSpanId).toBe(server.spanId)
    expect(decision.attributes).toMatchObject({ domain: 'basic', 'descriptors count': 1 })
    const store = named(spans, 'Memory Pipeline Execution')
    expect(store.parentSpanId).toBe(decision.spanId)
    expect(store.attributes).toMatchObject({ 'pipeline length': 1 })
    expect(server.resource).toMatchObject({
      'service.name': 'RateLimit',
      'service.namespace': 'edge',
      'service.instance.id': 'rl-1',
    })
    expect(receiver.headers.at(-1)?.['x-tenant']).toBe('t 1')
  })

  it('traces /json as a server span continuing the traceparent header', async () => {
    const traceId = c.protocol === 'http' ? 'a'.repeat(32) : 'b'.repeat(32)
    const response = await fetch(`${h.httpUrl}/json`, {
      method: 'POST',
      body: JSON.stringify(request('json')),
      headers: { traceparent: `00-${traceId}-${PARENT_ID}-01` },
    })
    expect(response.status).toBe(200)
    const spans = await traceOf(h, receiver, traceId, 3)
    const server = named(spans, 'POST /json')
    expect(server.parentSpanId).toBe(PARENT_ID)
    expect(server.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/json',
      'http.response.status_code': 200,
    })
    expect(named(spans, 'ShouldRateLimit Execution').parentSpanId).toBe(server.spanId)
  })

  it.each([
    { form: 'single', path: 'gRPC' },
    { form: 'multi', path: 'gRPC' },
    { form: 'single', path: '/json' },
    { form: 'multi', path: '/json' },
  ] as const)(
    "continues a Zipkin caller's B3 $form-header parent over $path (issue 32)",
    async ({ form, path }) => {
      const digit = (form === 'single' ? 1 : 2) + (path === 'gRPC' ? 0 : 2)
      const traceId = `${String(digit)}${c.protocol === 'http' ? 'c' : 'd'}`.repeat(16)
      const headers: Record<string, string> =
        form === 'single'
          ? { b3: `${traceId}-${PARENT_ID}-1` }
          : { 'x-b3-traceid': traceId, 'x-b3-spanid': PARENT_ID, 'x-b3-sampled': '1' }
      let serverName: string
      if (path === 'gRPC') {
        const metadata = new grpc.Metadata()
        for (const [key, value] of Object.entries(headers)) metadata.set(key, value)
        await h.client.shouldRateLimit(request(`b3-${form}`), metadata)
        serverName = 'envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit'
      } else {
        const response = await fetch(`${h.httpUrl}/json`, {
          method: 'POST',
          body: JSON.stringify(request(`b3-${form}-json`)),
          headers,
        })
        expect(response.status).toBe(200)
        serverName = 'POST /json'
      }
      const spans = await traceOf(h, receiver, traceId, 3)
      const server = named(spans, serverName)
      expect(server.parentSpanId).toBe(PARENT_ID)
      expect(named(spans, 'ShouldRateLimit Execution').parentSpanId).toBe(server.spanId)
    },
  )
})

describe('TRACING_SAMPLING_RATE', () => {
  it("samples no new trace at 0 but follows the caller's sampled flag", async () => {
    const receiver = await startHttpReceiver()
    const h = await startService({
      files: { 'basic.yaml': BASIC },
      env: {
        TRACING_ENABLED: 'true',
        TRACING_SAMPLING_RATE: '0',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.endpoint}/v1/traces`,
      },
    })
    try {
      await h.client.shouldRateLimit(request('unsampled'))
      // A caller's unsampled trace is followed too.
      await h.client.shouldRateLimit(request('unsampled'), traceparent('d'.repeat(32), '00'))
      const traceId = 'c'.repeat(32)
      await h.client.shouldRateLimit(request('sampled'), traceparent(traceId))
      const spans = await traceOf(h, receiver, traceId, 3)
      expect(spans).toHaveLength(3)
      // Only the sampled parent's trace arrived.
      expect(receiver.spans.every((s) => s.traceId === traceId)).toBe(true)
    } finally {
      await h.close()
      await receiver.close()
    }
  })
})

describe.each([
  {
    backend: 'redis',
    span: 'Redis Pipeline Execution',
    open: () =>
      Promise.resolve({
        env: {
          BACKEND_TYPE: 'redis',
          REDIS_URL: sharedRedisUrl(),
          // Own keys on the shared Redis; they expire with their minute.
          CACHE_KEY_PREFIX: redisKeyPrefix('ratelimit-tracing'),
        },
        stop: () => Promise.resolve(),
      }),
  },
  {
    backend: 'memcache',
    span: 'Memcache Pipeline Execution',
    open: async () => {
      const memcached = await startMemcached()
      return {
        env: { BACKEND_TYPE: 'memcache', MEMCACHE_HOST_PORT: memcached.hostPort },
        stop: () => memcached.stop(),
      }
    },
  },
] as const)('the store round trip with BACKEND_TYPE=$backend', (c) => {
  it(`is the span ${c.span} under the decision`, async () => {
    const [receiver, backend] = await Promise.all([startHttpReceiver(), c.open()])
    const h = await startService({
      files: { 'basic.yaml': BASIC },
      env: {
        ...backend.env,
        TRACING_ENABLED: 'true',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      },
    })
    try {
      const traceId = c.backend === 'redis' ? 'e'.repeat(32) : 'f'.repeat(32)
      const answer = await h.client.shouldRateLimit(request('store'), traceparent(traceId))
      expect(answer.overallCode).toBe('OK')
      const spans = await traceOf(h, receiver, traceId, 3)
      const store = named(spans, c.span)
      expect(store.parentSpanId).toBe(named(spans, 'ShouldRateLimit Execution').spanId)
      expect(store.attributes).toMatchObject({ 'pipeline length': 1 })
    } finally {
      await h.close()
      await Promise.all([receiver.close(), backend.stop()])
    }
  })
})
