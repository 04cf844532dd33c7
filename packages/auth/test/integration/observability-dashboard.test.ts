/**
 * `examples/observability/grafana-dashboard.json` works against the names both servers export:
 * every metric name its PromQL queries select exists in a real scrape of the rate limit service
 * (USE_PROMETHEUS) and of the auth server (METRICS_EXPORTER=prometheus) after traffic.
 */
import { readFileSync } from 'node:fs'
import { startMailInbox, type MailInbox } from '@gatehouse/mail-inbox'
import { rateLimitServiceConfig } from '#internal/limiter/service-config.js'
import { FakeClock, scrape, waitFor, type Family } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../../../ratelimit/test/fixtures.js'
import { startService, type Harness } from '../../../ratelimit/test/harness.js'
import { signUp, startTestServer, type TestServer } from '../helpers.js'

const DASHBOARD = new URL(
  '../../../../examples/observability/grafana-dashboard.json',
  import.meta.url,
)

interface Panel {
  readonly title?: string
  readonly targets?: readonly { readonly expr: string }[]
  readonly panels?: readonly Panel[]
}

/** Every PromQL expression of the dashboard, rows included. */
function expressions(panels: readonly Panel[]): string[] {
  return panels.flatMap((p) => [
    ...(p.targets ?? []).map((t) => t.expr),
    ...expressions(p.panels ?? []),
  ])
}

/**
 * The metric names a PromQL expression selects: each name directly followed by a label matcher
 * `{…}` or a range `[…]` (function names are followed by `(`, labels of `by (…)` by `,` or `)`).
 */
function selectedMetrics(expr: string): string[] {
  return [...expr.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)\s*[{[]/g)].map((m) => m[1] ?? '')
}

describe('the Grafana dashboard', () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1))
  let ratelimit: Harness
  let auth: TestServer
  let inbox: MailInbox
  let families: Map<string, Family>

  beforeAll(async () => {
    ratelimit = await startService({
      files: { 'basic.yaml': fixture('integration/basic.yaml') },
      env: { USE_PROMETHEUS: 'true', PROMETHEUS_ADDR: '127.0.0.1:0' },
      deps: { statsSink: undefined },
    })
    inbox = await startMailInbox()
    auth = await startTestServer(
      'dashboard',
      {
        AUTHSVC_METRICS_ENABLED: 'true',
        AUTHSVC_METRICS_EXPORTER: 'prometheus',
        OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
        OTEL_EXPORTER_PROMETHEUS_PORT: '0',
        AUTHSVC_RATE_LIMIT_PASSWORD_FAILURES: '2',
        // Decisions asked of the rate limit service above (the send cap, here).
        AUTHSVC_RATE_LIMIT_BACKEND: 'ratelimit',
        AUTHSVC_RATE_LIMIT_SERVICE_ADDRESS: ratelimit.grpcAddress,
        AUTHSVC_SMTP_HOST: '127.0.0.1',
        AUTHSVC_SMTP_PORT: String(inbox.smtp.port),
        AUTHSVC_SMTP_ADMIN_EMAIL: 'no-reply@example.com',
      },
      clock,
    )
    ratelimit.writeConfig('auth.yaml', rateLimitServiceConfig(auth.settings))
    await waitFor(() => ratelimit.app.service.config?.domains.includes('gatehouse-auth'), {
      what: "the auth server's domain config",
    })
    // Rate limit traffic: decisions within and over the limit, over HTTP and gRPC, a request
    // without a domain (service_error) and a configuration that does not load.
    const request = { domain: 'basic', descriptors: [{ entries: [{ key: 'one_per_minute' }] }] }
    for (let i = 0; i < 2; i++) await ratelimit.json(request)
    await ratelimit.client.shouldRateLimit(request)
    expect((await ratelimit.json({ ...request, domain: '' })).status).not.toBe(200)
    ratelimit.writeConfig('broken.yaml', 'domain: broken\nnonsense: 1\n')
    await waitFor(() => ratelimit.stat('ratelimit.service.config_load_error') >= 1, {
      what: 'a failed reload',
    })
    ratelimit.app.flushStats()
    // Auth traffic: sign-up, refresh, reuse, a mail, wrong passwords (4xx) and a 429.
    const first = await signUp(auth, 'dash@example.com')
    const child = await auth.request('POST', '/token?grant_type=refresh_token', {
      body: { refresh_token: first.refresh_token },
    })
    // The child used, its parent presented again is reuse.
    await auth.request('POST', '/token?grant_type=refresh_token', {
      body: { refresh_token: child.json().refresh_token },
    })
    clock.advance(60_000)
    await auth.request('POST', '/token?grant_type=refresh_token', {
      body: { refresh_token: first.refresh_token },
    })
    await auth.request('POST', '/recover', { body: { email: 'dash@example.com' } })
    await inbox.store.waitFor('dash@example.com')
    for (let i = 0; i < 4; i++) {
      await auth.request('POST', '/token?grant_type=password', {
        body: { email: 'dash@example.com', password: 'wrong' },
      })
    }
    const address = ratelimit.app.prometheusServer?.address()
    if (address === null || typeof address !== 'object') throw new Error('no ratelimit metrics')
    if (auth.app.metricsUrl === undefined) throw new Error('no auth metrics')
    families = new Map([
      ...(await scrape(`http://127.0.0.1:${String(address.port)}/metrics`)),
      ...(await scrape(auth.app.metricsUrl)),
    ])
  })
  afterAll(async () => {
    await auth.close()
    await inbox.close()
    await ratelimit.close()
  })

  it('selects metrics in every query', () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] }
    const exprs = expressions(dashboard.panels)
    expect(exprs.length).toBeGreaterThan(8)
    for (const expr of exprs) expect(selectedMetrics(expr), expr).not.toEqual([])
  })

  it('uses only names the two servers export after traffic', () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] }
    const names = new Set(expressions(dashboard.panels).flatMap(selectedMetrics))
    expect(names).toContain('auth_signins_total')
    expect(names).toContain('http_server_request_duration_bucket')
    expect([...names].filter((name) => !families.has(name))).toEqual([])
  })
})
