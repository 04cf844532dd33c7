import { diag } from '@opentelemetry/api'
import { scrape, series, startGrpcReceiver, startHttpReceiver } from '@gatehouse/testing'
import { describe, expect, it } from 'vitest'
import { enableDiagnostics } from './diagnostics.js'
import { createMetrics, metricsExportUrl } from './metrics.js'

const resourceAttributes = { 'service.name': 'svc', 'auth.version': '1.2.3' }

describe('metricsExportUrl', () => {
  it('prefers the metrics endpoint, appends /v1/metrics for http only, else the default', () => {
    const otlp = { kind: 'otlp', protocol: 'http' } as const
    expect(metricsExportUrl(otlp)).toBeUndefined()
    expect(metricsExportUrl({ ...otlp, endpoint: 'http://c:4318/' })).toBe(
      'http://c:4318/v1/metrics',
    )
    expect(metricsExportUrl({ ...otlp, protocol: 'grpc', endpoint: 'http://c:4317' })).toBe(
      'http://c:4317',
    )
    expect(metricsExportUrl({ ...otlp, endpoint: 'http://c', metricsEndpoint: 'http://m/x' })).toBe(
      'http://m/x',
    )
  })
})

describe('createMetrics', () => {
  it('serves the Prometheus text format on the path, with the resource as target_info', async () => {
    const metrics = createMetrics({
      instrumentationName: 'test',
      resourceAttributes,
      exporter: { kind: 'prometheus', path: '/' },
    })
    try {
      metrics.meter.createCounter('auth.signups').add(2, { provider: 'email' })
      const url = await metrics.listen('127.0.0.1', 0)
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
      const families = await scrape(url)
      expect(series(families, 'auth_signups_total', { provider: 'email' })?.value).toBe('2')
      expect(families.get('target_info')?.metrics[0]?.labels).toMatchObject({
        service_name: 'svc',
        auth_version: '1.2.3',
      })
      expect((await fetch(new URL('/other', url))).status).toBe(404)
      expect((await fetch(url, { method: 'POST' })).status).toBe(405)
      await expect(metrics.listen('127.0.0.1', 0)).rejects.toThrow('already listening')
    } finally {
      await metrics.shutdown()
    }
  })

  it('exports over OTLP/HTTP with the resource attributes', async () => {
    const receiver = await startHttpReceiver()
    const metrics = createMetrics({
      instrumentationName: 'test',
      resourceAttributes,
      exporter: {
        kind: 'otlp',
        protocol: 'http',
        endpoint: receiver.endpoint,
        headers: { 'x-key': 'k' },
        intervalMs: 3_600_000,
      },
    })
    try {
      metrics.meter.createCounter('auth.signins').add(3, { grant_type: 'password' })
      metrics.meter.createHistogram('http.server.request.duration', { unit: 's' }).record(0.25)
      await expect(metrics.listen('127.0.0.1', 0)).rejects.toThrow('only a Prometheus exporter')
      await metrics.forceFlush()
      const signins = receiver.metrics.find((p) => p.name === 'auth.signins')
      expect(signins).toMatchObject({
        kind: 'sum',
        value: 3,
        attributes: { grant_type: 'password' },
        resource: { 'service.name': 'svc', 'auth.version': '1.2.3' },
      })
      expect(receiver.metrics.find((p) => p.name === 'http.server.request.duration')).toMatchObject(
        { kind: 'histogram', unit: 's', value: 1, sum: 0.25 },
      )
      expect(receiver.headers[0]?.['x-key']).toBe('k')
    } finally {
      await metrics.shutdown()
      await receiver.close()
    }
  })
})

describe('createMetrics over OTLP/gRPC', () => {
  it('exports to the gRPC MetricsService with the headers as metadata', async () => {
    const receiver = await startGrpcReceiver()
    const metrics = createMetrics({
      instrumentationName: 'test',
      resourceAttributes,
      exporter: {
        kind: 'otlp',
        protocol: 'grpc',
        endpoint: receiver.endpoint,
        headers: { 'x-key': 'g' },
        intervalMs: 3_600_000,
      },
    })
    try {
      metrics.meter.createCounter('auth.token_refreshes').add(4)
      await metrics.forceFlush()
      expect(receiver.metrics.find((p) => p.name === 'auth.token_refreshes')).toMatchObject({
        kind: 'sum',
        value: 4,
        resource: { 'auth.version': '1.2.3' },
      })
      expect(receiver.headers.some((h) => h['x-key'] === 'g')).toBe(true)
    } finally {
      await metrics.shutdown()
      await receiver.close()
    }
  })
})

describe('enableDiagnostics', () => {
  it('logs the SDK messages without their objects and with secrets redacted, until disabled', () => {
    const lines: [string, object, string][] = []
    const log =
      (level: string) =>
      (object: object, message: string): void => {
        lines.push([level, object, message])
      }
    const logger = {
      debug: log('debug'),
      info: log('info'),
      warn: log('warn'),
      error: log('error'),
    }
    const disable = enableDiagnostics(logger, ['s3cret', ''])
    try {
      diag.error('export failed with header s3cret', { headers: { authorization: 's3cret' } })
      diag.debug('debugging')
    } finally {
      disable()
    }
    diag.error('after disable')
    // The API also reports its own registering and unregistering at debug level.
    expect(lines.filter((line) => !line[2].startsWith('@opentelemetry/api:'))).toEqual([
      ['error', { component: 'opentelemetry' }, 'export failed with header [REDACTED]'],
      ['debug', { component: 'opentelemetry' }, 'debugging'],
    ])
    expect(lines.map((line) => line[2])).not.toContain('after disable')
  })
})
