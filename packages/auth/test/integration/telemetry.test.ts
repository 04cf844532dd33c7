/**
 * The auth server's telemetry end to end: the Prometheus endpoint scraped over HTTP and parsed
 * with parse-prometheus-text-format after known traffic (sign-up, password sign-in, refresh, a
 * refresh-token reuse, a mail, a 429), and OTLP/HTTP exports of spans and metrics decoded by an
 * in-test receiver with the OpenTelemetry proto definitions (span names, `http.route`,
 * `http.route.params.*`, SQL spans under the request span, `traceparent` continuation, the
 * `auth.version` resource attribute).
 */
import { once } from 'node:events'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createAuthApp, loadSettings, openDb } from '@gatehouse/auth'
import { runCli, type CliIo } from '#internal/cli.js'
import { startMailInbox, type MailInbox } from '@gatehouse/mail-inbox'
import {
  createTestSchema,
  FakeClock,
  getFreePort,
  scrape,
  series,
  startGrpcReceiver,
  startHttpReceiver,
  waitFor,
  type Family,
  type OtlpReceiver,
  type ReceivedSpan,
} from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signUp, startTestServer, testEnv, type TestServer } from '../helpers.js'

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT_ID = '00f067aa0ba902b7'

describe('Prometheus metrics (METRICS_EXPORTER=prometheus)', () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1))
  let server: TestServer
  let inbox: MailInbox
  let families: Map<string, Family>

  beforeAll(async () => {
    inbox = await startMailInbox()
    server = await startTestServer(
      'telemetry_prom',
      {
        AUTHSVC_METRICS_ENABLED: 'true',
        AUTHSVC_METRICS_EXPORTER: 'prometheus',
        OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
        OTEL_EXPORTER_PROMETHEUS_PORT: '0',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test',
        AUTHSVC_SMTP_HOST: '127.0.0.1',
        AUTHSVC_SMTP_PORT: String(inbox.smtp.port),
        AUTHSVC_SMTP_ADMIN_EMAIL: 'no-reply@example.com',
        AUTHSVC_RATE_LIMIT_PASSWORD_FAILURES: '2',
        AUTHSVC_SECURITY_REFRESH_TOKEN_ROTATION_ENABLED: 'true',
        AUTHSVC_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: '10',
      },
      clock,
    )
    // Known traffic: 2 sign-ups (each an auto-confirmed session), 1 password sign-in, 2 refreshes,
    // 1 reuse detection, 1 recovery mail, 3 wrong passwords then 1 answer 429 (the back-off).
    const first = await signUp(server, 'ann@example.com')
    await signUp(server, 'bob@example.com')
    const signIn = await server.request('POST', '/token?grant_type=password', {
      body: { email: 'ann@example.com', password: 'password123' },
    })
    expect(signIn.statusCode).toBe(200)
    const refresh = await server.request('POST', '/token?grant_type=refresh_token', {
      body: { refresh_token: first.refresh_token },
    })
    expect(refresh.statusCode).toBe(200)
    // The child is used, so its parent presented again is reuse (an unused child would be
    // returned again).
    const second = await server.request('POST', '/token?grant_type=refresh_token', {
      body: { refresh_token: refresh.json().refresh_token },
    })
    expect(second.statusCode).toBe(200)
    clock.advance(60_000) // past the reuse interval
    const reuse = await server.request('POST', '/token?grant_type=refresh_token', {
      body: { refresh_token: first.refresh_token },
    })
    expect(reuse.json().error_code).toBe('refresh_token_already_used')
    expect(
      (await server.request('POST', '/recover', { body: { email: 'ann@example.com' } })).statusCode,
    ).toBe(200)
    await inbox.store.waitFor('ann@example.com')
    const wrong = { body: { email: 'carl@example.com', password: 'wrong' } }
    for (const status of [400, 400, 400, 429]) {
      const res = await server.request('POST', '/token?grant_type=password', wrong)
      expect(res.statusCode).toBe(status)
    }
    expect((await server.request('GET', `/admin/users/${first.user.id}`)).statusCode).toBe(401)
    const url = server.app.metricsUrl
    if (url === undefined) throw new Error('no metrics endpoint')
    families = await scrape(url)
  })
  afterAll(async () => {
    await server.close()
    await inbox.close()
  })

  it('serves on the configured host and path /', () => {
    expect(server.app.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
  })

  it('counts sign-ups, sign-ins by method, refreshes, reuse detections, mails and 429s', () => {
    const value = (name: string, labels: Record<string, string> = {}) =>
      series(families, name, labels)?.value
    expect(value('auth_signups_total', { provider: 'email' })).toBe('2')
    // Each auto-confirmed sign-up starts a session too: 2 + 1 password sign-in.
    expect(value('auth_signins_total', { method: 'password' })).toBe('3')
    expect(value('auth_token_refreshes_total')).toBe('2')
    expect(value('auth_refresh_token_reuse_detections_total')).toBe('1')
    expect(value('auth_mails_sent_total', { kind: 'recovery' })).toBe('1')
    expect(
      value('auth_rate_limited_requests_total', {
        http_route: '/token',
        error_code: 'over_request_rate_limit',
      }),
    ).toBe('1')
    expect(families.get('auth_signups_total')?.type).toBe('COUNTER')
  })

  it('has the HTTP server duration histogram by route, method and status', () => {
    expect(families.get('http_server_request_duration')?.type).toBe('HISTOGRAM')
    const count = (route: string, status: string, method = 'POST') =>
      series(families, 'http_server_request_duration_count', {
        http_route: route,
        http_request_method: method,
        http_response_status_code: status,
      })?.value
    expect(count('/signup', '200')).toBe('2')
    expect(count('/token', '200')).toBe('3')
    expect(count('/token', '400')).toBe('4')
    expect(count('/token', '429')).toBe('1')
    expect(count('/recover', '200')).toBe('1')
    // The parametrized route, never the user id.
    expect(count('/admin/users/:user_id', '401', 'GET')).toBe('1')
    const labels = {
      http_route: '/signup',
      http_request_method: 'POST',
      http_response_status_code: '200',
    }
    expect(
      Number(series(families, 'http_server_request_duration_sum', labels)?.value),
    ).toBeGreaterThan(0)
    // The buckets are the HTTP convention's, in seconds.
    const le = families
      .get('http_server_request_duration_bucket')
      ?.metrics.filter((m) => m.labels?.http_route === '/signup')
      .map((m) => m.labels?.le)
    expect(le).toEqual([
      '0.005',
      '0.01',
      '0.025',
      '0.05',
      '0.075',
      '0.1',
      '0.25',
      '0.5',
      '0.75',
      '1',
      '2.5',
      '5',
      '7.5',
      '10',
      '+Inf',
    ])
    expect(
      series(families, 'http_server_request_duration_bucket', { ...labels, le: '+Inf' })?.value,
    ).toBe('2')
  })

  it('has the pool gauges and the resource as target_info with auth.version', () => {
    const count = families.get('db_client_connection_count')
    expect(count?.type).toBe('GAUGE')
    const states = new Set(count?.metrics.map((m) => m.labels?.db_client_connection_state))
    expect(states).toEqual(new Set(['idle', 'used']))
    const max = series(families, 'db_client_connection_max', {
      db_client_connection_pool_name: 'auth',
    })
    expect(Number(max?.value)).toBe(server.app.db.maxConnections)
    expect(
      series(families, 'db_client_connection_pending_requests', {
        db_client_connection_pool_name: 'auth',
      })?.value,
    ).toBe('0')
    expect(families.get('target_info')?.metrics[0]?.labels).toMatchObject({
      service_name: 'gotrue',
      auth_version: '0.1.0',
      deployment_environment: 'test',
    })
  })
})

describe('OTLP traces and metrics (TRACING_ENABLED, METRICS_EXPORTER=opentelemetry)', () => {
  let receiver: OtlpReceiver
  let server: TestServer

  beforeAll(async () => {
    receiver = await startHttpReceiver()
    server = await startTestServer('telemetry_otlp', {
      AUTHSVC_TRACING_ENABLED: 'true',
      AUTHSVC_TRACING_EXPORTER: 'opentelemetry',
      AUTHSVC_METRICS_ENABLED: 'true',
      AUTHSVC_METRICS_EXPORTER: 'opentelemetry',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=k1',
      OTEL_METRIC_EXPORT_INTERVAL: '3600000',
      OTEL_SERVICE_NAME: 'auth-test',
    })
  })
  afterAll(async () => {
    await server.close()
    await receiver.close()
  })

  const spansOf = (traceId: string): ReceivedSpan[] =>
    receiver.spans.filter((s) => s.traceId === traceId)

  it('exports an api span per request with http.route, its params, and SQL spans under it', async () => {
    const { user } = await signUp(server, 'traced@example.com')
    const res = await server.request('GET', `/admin/users/${user.id}`, {
      token: server.serviceKey,
      headers: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
    })
    expect(res.statusCode).toBe(200)
    await server.app.flushTelemetry()
    const trace = spansOf(TRACE_ID)
    const root = trace.find((s) => s.name === 'api')
    expect(root).toMatchObject({
      kind: 2,
      parentSpanId: PARENT_ID,
      attributes: {
        'http.request.method': 'GET',
        'http.route': '/admin/users/:user_id',
        'http.route.params.user_id': user.id,
        'http.response.status_code': 200,
        'url.path': `/admin/users/${user.id}`,
      },
      resource: { 'service.name': 'auth-test', 'auth.version': '0.1.0' },
    })
    const sql = trace.filter((s) => s.attributes['db.system.name'] === 'postgresql')
    expect(sql.length).toBeGreaterThan(0)
    for (const span of sql) {
      expect(span.kind).toBe(3)
      expect(span.attributes['db.query.text']).toEqual(expect.any(String))
      expect(span.name).toBe(span.attributes['db.operation.name'])
    }
    // Statements outside a transaction are children of the request span.
    expect(sql.some((s) => s.parentSpanId === root?.spanId)).toBe(true)
    expect(receiver.headers.some((h) => h['x-collector-key'] === 'k1')).toBe(true)
  })

  it('nests the statements of a transaction under a transaction span', async () => {
    const traceId = 'a'.repeat(32)
    const res = await server.request('POST', '/signup', {
      body: { email: 'nested@example.com', password: 'password123' },
      headers: { traceparent: `00-${traceId}-${PARENT_ID}-01` },
    })
    expect(res.statusCode).toBe(200)
    await server.app.flushTelemetry()
    const trace = spansOf(traceId)
    const root = trace.find((s) => s.name === 'api')
    const tx = trace.find((s) => s.name === 'transaction')
    expect(root?.attributes['http.route']).toBe('/signup')
    expect(tx?.parentSpanId).toBe(root?.spanId)
    const inserts = trace.filter((s) => s.name === 'INSERT')
    expect(inserts.length).toBeGreaterThan(0)
    for (const insert of inserts) expect(insert.parentSpanId).toBe(tx?.spanId)
    // Parameter values are never recorded: the password hash and email stay out of the spans.
    expect(JSON.stringify(trace)).not.toContain('nested@example.com')
  })

  it('starts a new trace without traceparent, and follows an unsampled caller', async () => {
    const before = receiver.spans.length
    await server.request('GET', '/health')
    await server.request('GET', '/settings', {
      headers: { traceparent: `00-${'b'.repeat(32)}-${PARENT_ID}-00` },
    })
    await server.app.flushTelemetry()
    const added = receiver.spans.slice(before)
    const health = added.find((s) => s.attributes['http.route'] === '/health')
    expect(health?.parentSpanId).toBe('')
    expect(added.some((s) => s.traceId === 'b'.repeat(32))).toBe(false)
  })

  it('exports the metrics over OTLP/HTTP with the resource attributes', async () => {
    await server.app.flushTelemetry()
    await waitFor(() => receiver.metrics.some((p) => p.name === 'auth.signups'))
    const signups = receiver.metrics.filter((p) => p.name === 'auth.signups').at(-1)
    expect(signups).toMatchObject({
      kind: 'sum',
      value: 2,
      attributes: { provider: 'email' },
      resource: { 'service.name': 'auth-test', 'auth.version': '0.1.0' },
    })
    const duration = receiver.metrics.find(
      (p) =>
        p.name === 'http.server.request.duration' &&
        p.attributes['http.route'] === '/admin/users/:user_id',
    )
    expect(duration).toMatchObject({
      kind: 'histogram',
      unit: 's',
      value: 1,
      attributes: { 'http.request.method': 'GET', 'http.response.status_code': 200 },
    })
  })
})

describe('OTLP over gRPC (OTEL_EXPORTER_OTLP_PROTOCOL=grpc)', () => {
  it('exports the spans and the metrics to the gRPC services', async () => {
    const receiver = await startGrpcReceiver()
    const server = await startTestServer('telemetry_grpc', {
      AUTHSVC_TRACING_ENABLED: 'true',
      AUTHSVC_METRICS_ENABLED: 'true',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_METRIC_EXPORT_INTERVAL: '3600000',
    })
    try {
      expect((await server.request('GET', '/settings')).statusCode).toBe(200)
      await server.app.flushTelemetry()
      expect(receiver.spans.find((s) => s.name === 'api')?.attributes['http.route']).toBe(
        '/settings',
      )
      expect(
        receiver.metrics.find(
          (p) =>
            p.name === 'http.server.request.duration' && p.attributes['http.route'] === '/settings',
        )?.value,
      ).toBe(1)
    } finally {
      await server.close()
      await receiver.close()
    }
  })
})

describe('telemetry off (the defaults)', () => {
  it('adds no hook, no database wrapper and no endpoint', async () => {
    const schema = await createTestSchema('auth_telemetry_off')
    const db = await openDb(schema.url, '', 2)
    const env = (overrides: Record<string, string> = {}) =>
      loadSettings(testEnv(schema.url, overrides))
    const off = await createAuthApp(env(), { db })
    const on = await createAuthApp(env({ AUTHSVC_TRACING_ENABLED: 'true' }), { db })
    try {
      expect(off.metricsUrl).toBeUndefined()
      expect(off.server.hasRequestDecorator('traceSpan')).toBe(false)
      // The services get the database itself: no wrapper between them and pg.
      expect(off.db).toBe(db)
      expect(on.db).not.toBe(db)
      expect(on.server.hasRequestDecorator('traceSpan')).toBe(true)
      expect((await off.server.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200)
    } finally {
      await off.close()
      await on.close()
      await db.close()
      await schema.drop()
    }
  })
})

describe('gatehouse-auth serve with telemetry', () => {
  it('prints the Prometheus URL, and DEBUG=true logs SDK diagnostics without the OTLP headers', async () => {
    const schema = await createTestSchema('auth_telemetry_cli')
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-auth-debug-'))
    const logFile = join(dir, 'auth.log')
    // A collector that refuses every export with 503 and `Retry-After: 10`: the exporter's retry
    // would come after its 5 s timeout, so it gives up at once and says so in a diagnostic
    // (deterministic, unlike a closed port, where a loaded machine can hit the timeout first).
    const authorizations: (string | undefined)[] = []
    const collector = createServer((req, res) => {
      authorizations.push(req.headers.authorization)
      req.resume()
      req.on('end', () => res.writeHead(503, { 'retry-after': '10' }).end())
    })
    collector.listen(0, '127.0.0.1')
    await once(collector, 'listening')
    const collectorPort = (collector.address() as AddressInfo).port
    const out: string[] = []
    let stop: ((signal: string) => void) | undefined
    const io: CliIo = {
      out: (line) => out.push(line),
      err: (line) => out.push(line),
      onSignal: (handler) => {
        stop = handler
      },
    }
    try {
      const port = await getFreePort()
      const running = runCli(
        [],
        testEnv(schema.url, {
          PORT: String(port),
          AUTHSVC_API_HOST: '127.0.0.1',
          AUTHSVC_LOG_FILE: logFile,
          AUTHSVC_METRICS_ENABLED: 'true',
          AUTHSVC_METRICS_EXPORTER: 'prometheus',
          OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
          OTEL_EXPORTER_PROMETHEUS_PORT: '0',
          AUTHSVC_TRACING_ENABLED: 'true',
          OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${String(collectorPort)}`,
          OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20collector-secret-42',
          OTEL_EXPORTER_OTLP_TIMEOUT: '5000',
          DEBUG: 'true',
        }),
        io,
      )
      await waitFor(() => out.some((line) => line.includes('Prometheus metrics on')), {
        what: 'the server',
      })
      const metrics = /Prometheus metrics on (http:\/\/127\.0\.0\.1:\d+\/)$/.exec(
        out.find((line) => line.includes('Prometheus metrics on')) ?? '',
      )?.[1]
      expect(metrics).toBeDefined()
      expect((await fetch(`http://127.0.0.1:${String(port)}/health`)).status).toBe(200)
      expect((await fetch(metrics ?? '')).status).toBe(200)
      stop?.('SIGTERM') // the shutdown exports the span, which fails
      expect(await running).toBe(0)
      // LOG_FILE is written asynchronously: wait for the shutdown's last lines to reach it.
      let log = ''
      await waitFor(
        async () => {
          log = await readFile(logFile, 'utf8')
          return log.includes('telemetry not exported at shutdown') && log.includes('Export retry')
        },
        { what: 'the shutdown lines in LOG_FILE' },
      )
      const diagnostics = log
        .split('\n')
        .filter((line) => line.includes('"component":"opentelemetry"'))
      expect(diagnostics.join('\n')).toMatch(/Export retry time \d+ms exceeds remaining timeout/)
      // The export carried the configured header; the logs never do.
      expect(authorizations).toContain('Bearer collector-secret-42')
      // The failed export is logged, and does not fail the shutdown (exit 0 above).
      expect(log).toContain('telemetry not exported at shutdown')
      expect(log).not.toContain('collector-secret-42')
    } finally {
      collector.close()
      await rm(dir, { recursive: true, force: true })
      await schema.drop()
    }
  })
})
