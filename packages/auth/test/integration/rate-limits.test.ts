/**
 * Request rate limits as upstream (per client key, 429 with Retry-After), the per-account
 * password back-off, and one budget across two auth instances through a real
 * `gatehouse-ratelimit` process on a Redis server of this file's own, killed and restarted.
 */
import {
  FakeClock,
  getFreePort,
  scrape,
  series,
  startRedisServer,
  waitFor,
  type TestRedisServer,
} from '@gatehouse/testing'
import { rateLimitServiceConfig } from '#internal/limiter/service-config.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RecordingMailer, signUp, startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'
import { startRateLimitService, type RateLimitService } from '../support/ratelimit-service.js'

/** A refresh with a malformed token: limited as `token_refresh`, then refused (400). */
function refresh(url: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/token?grant_type=refresh_token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ refresh_token: 'not-a-token' }),
  })
}

async function statuses(count: number, send: () => Promise<Response>): Promise<number[]> {
  const seen: number[] = []
  for (let i = 0; i < count; i++) seen.push((await send()).status)
  return seen
}

describe('request rate limits per client key (memory backend, as upstream)', () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1))
  let byHeader: TestServer
  let byForwardedFor: TestServer
  let unkeyed: TestServer

  beforeAll(async () => {
    ;[byHeader, byForwardedFor, unkeyed] = await Promise.all([
      startTestServer('rl_header', { AUTHSVC_RATE_LIMIT_HEADER: 'X-Real-IP' }, clock),
      startTestServer('rl_svc', { AUTHSVC_SECURITY_SVC_FORWARDED_FOR_ENABLED: 'true' }, clock),
      startTestServer('rl_none', {}, clock),
    ])
    await Promise.all([byHeader.listen(), byForwardedFor.listen(), unkeyed.listen()])
  })
  afterAll(async () => {
    await Promise.all([byHeader.close(), byForwardedFor.close(), unkeyed.close()])
  })

  it('RATE_LIMIT_HEADER: a burst of 30 per trusted value, then 429 with Retry-After', async () => {
    // The value the proxy appended is the key; what the client put before it does not count.
    const a = { 'x-real-ip': '10.0.0.1, 203.0.113.1' }
    expect(new Set(await statuses(30, () => refresh(byHeader.url, a)))).toEqual(new Set([400]))
    const limited = await refresh(byHeader.url, { 'x-real-ip': '203.0.113.1' })
    expect(limited.status).toBe(429)
    // RATE_LIMIT_TOKEN_REFRESH 150 per 5 minutes: a request every 2 seconds.
    expect(limited.headers.get('retry-after')).toBe('2')
    expect(await limited.json()).toMatchObject({
      code: 429,
      error_code: 'over_request_rate_limit',
      msg: 'Request rate limit reached',
    })
    // Another client has its own budget; the first gets one back after Retry-After.
    expect((await refresh(byHeader.url, { 'x-real-ip': '203.0.113.2' })).status).toBe(400)
    clock.advance(2_000)
    expect((await refresh(byHeader.url, a)).status).toBe(400)
    expect((await refresh(byHeader.url, a)).status).toBe(429)
  })

  it('cuts a huge client key to 256 characters (one budget, bounded state)', async () => {
    const long = 'x'.repeat(256)
    await statuses(30, () => refresh(byHeader.url, { 'x-real-ip': `${long}a` }))
    expect((await refresh(byHeader.url, { 'x-real-ip': `${long}b` })).status).toBe(429)
  })

  it('Svc-Forwarded-For keys the limit when SECURITY_SVC_FORWARDED_FOR_ENABLED', async () => {
    const a = { 'svc-forwarded-for': '198.51.100.7' }
    await statuses(30, () => refresh(byForwardedFor.url, a))
    expect((await refresh(byForwardedFor.url, a)).status).toBe(429)
    const other = { 'svc-forwarded-for': '198.51.100.8' }
    expect((await refresh(byForwardedFor.url, other)).status).toBe(400)
  })

  it('with neither configured there is no per-client limit', async () => {
    const seen = await statuses(40, () => refresh(unkeyed.url, { 'x-real-ip': '203.0.113.1' }))
    expect(seen.filter((s) => s === 429)).toEqual([])
  })
})

describe('per-account back-off after failed passwords', () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1))
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer(
      'rl_backoff',
      { AUTHSVC_RATE_LIMIT_PASSWORD_FAILURES: '2' },
      clock,
    )
    await signUp(server, 'known@example.com', 'right-password')
  })
  afterAll(async () => {
    await server.close()
  })

  const signIn = async (email: string, password: string) => {
    const res = await server.request('POST', '/token?grant_type=password', {
      body: { email, password },
    })
    return {
      status: res.statusCode,
      code: res.json().error_code,
      retryAfter: res.headers['retry-after'],
    }
  }

  it('grows the delay, answers unknown accounts the same, and a success resets it', async () => {
    const journey = async (email: string) => {
      const seen = []
      for (let i = 0; i < 3; i++) seen.push(await signIn(email, 'wrong'))
      seen.push(await signIn(email, 'wrong'))
      clock.advance(1_000)
      seen.push(await signIn(email, 'wrong'))
      seen.push(await signIn(email, 'wrong'))
      clock.advance(2_000)
      return seen
    }
    const known = await journey('known@example.com')
    const unknown = await journey('nobody@example.com')
    const bad = { status: 400, code: 'invalid_credentials', retryAfter: undefined }
    const expected = [
      bad,
      bad,
      bad,
      { status: 429, code: 'over_request_rate_limit', retryAfter: '1' },
      bad,
      { status: 429, code: 'over_request_rate_limit', retryAfter: '2' },
    ]
    expect(known).toEqual(expected)
    expect(unknown).toEqual(expected)
    // The case of the address does not give a fresh budget.
    expect((await signIn('KNOWN@example.com', 'wrong')).status).toBe(400)
    expect((await signIn('known@example.com', 'right-password')).status).toBe(429)
    clock.advance(4_000)
    expect((await signIn('known@example.com', 'right-password')).status).toBe(200)
    expect((await signIn('known@example.com', 'wrong')).status).toBe(400)
    expect((await signIn('known@example.com', 'wrong')).status).toBe(400)
  })
})

describe('RATE_LIMIT_BACKEND=ratelimit: two instances, one budget, a service that dies', () => {
  let redis: TestRedisServer
  let service: RateLimitService | undefined
  let open: TestServer
  let closed: TestServer
  /** `RATE_LIMIT_SERVICE_ALGORITHM=fixed_window`, a domain of its own. */
  let windows: TestServer
  /** The mails of `open` (password resets). */
  const mailer = new RecordingMailer()

  beforeAll(async () => {
    redis = await startRedisServer()
    const grpcPort = await getFreePort()
    const env = {
      AUTHSVC_RATE_LIMIT_BACKEND: 'ratelimit',
      AUTHSVC_RATE_LIMIT_SERVICE_ADDRESS: `127.0.0.1:${String(grpcPort)}`,
      AUTHSVC_RATE_LIMIT_SERVICE_TIMEOUT: '3s',
      AUTHSVC_RATE_LIMIT_HEADER: 'X-Real-IP',
      // 1 per 5 minutes: a client's bucket holds the burst of 30, refilled every 5 minutes.
      AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: '1',
    }
    // Both shared instances serve Prometheus metrics (the limiter's counters among them).
    const metrics = {
      AUTHSVC_METRICS_ENABLED: 'true',
      AUTHSVC_METRICS_EXPORTER: 'prometheus',
      OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
      OTEL_EXPORTER_PROMETHEUS_PORT: '0',
    }
    ;[open, closed, windows] = await Promise.all([
      startTestServer('rl_shared_a', { ...env, ...metrics }, undefined, { deps: { mailer } }),
      startTestServer('rl_shared_b', {
        ...env,
        ...metrics,
        AUTHSVC_RATE_LIMIT_FAIL_CLOSED: 'true',
      }),
      startTestServer('rl_shared_w', {
        ...env,
        AUTHSVC_RATE_LIMIT_SERVICE_ALGORITHM: 'fixed_window',
        AUTHSVC_RATE_LIMIT_DOMAIN: 'gatehouse-auth-windows',
      }),
    ])
    await Promise.all([open.listen(), closed.listen(), windows.listen()])
    service = await startRateLimitService(
      redis,
      {
        'auth.yaml': rateLimitServiceConfig(open.settings),
        'auth-windows.yaml': rateLimitServiceConfig(windows.settings),
      },
      { grpcPort },
    )
  }, 120_000)
  afterAll(async () => {
    await service?.close()
    await Promise.all([open.close(), closed.close(), windows.close()])
    await redis.stop()
  })

  it('counts concurrent requests exactly while coalescing their decisions into fewer calls', async () => {
    const concurrently = (headers: Record<string, string>) =>
      Promise.all(Array.from({ length: 40 }, async () => (await refresh(open.url, headers)).status))
    // Another client's requests open the connections (and the first answer tells the auth
    // server that the service allows coalescing), so the measured ones arrive together.
    await concurrently({ 'x-real-ip': '192.0.2.78' })
    // Whether requests reach the limiter in one event-loop turn depends on how they arrive, so a
    // burst may be decided call by call; each burst (a client of its own) must count exactly,
    // and one of at most five must be coalesced.
    let fewest = Infinity
    for (let burst = 0; burst < 5 && fewest >= 40; burst++) {
      const before = open.app.rateLimitClientCounts
      const seen = await concurrently({ 'x-real-ip': `192.0.2.${String(100 + burst)}` })
      // The burst of 30, whatever the batching.
      expect(seen.filter((status) => status === 400)).toHaveLength(30)
      expect(seen.filter((status) => status === 429)).toHaveLength(10)
      const after = open.app.rateLimitClientCounts
      expect((after?.requests ?? 0) - (before?.requests ?? 0)).toBe(40)
      fewest = Math.min(fewest, (after?.calls ?? 0) - (before?.calls ?? 0))
    }
    expect(fewest).toBeLessThan(40)
    // The service applied the generated config's token bucket to every decision.
    expect(open.app.rateLimitStats?.configMismatches).toBe(0)
  })

  it('with fixed_window, holds a client to the hourly window (12 for 1 per 5 minutes)', async () => {
    const client = { 'x-real-ip': '192.0.2.90' }
    const seen = await Promise.all(
      Array.from({ length: 40 }, async () => (await refresh(windows.url, client)).status),
    )
    expect(seen.filter((status) => status === 400)).toHaveLength(12)
    expect(seen.filter((status) => status === 429)).toHaveLength(28)
    // The hour window refused: Retry-After is the rest of the hour, not the minute's.
    const limited = await refresh(windows.url, client)
    expect(limited.status).toBe(429)
    const retryAfter = Number(limited.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(3600)
    expect(windows.app.rateLimitStats?.configMismatches).toBe(0)
  })

  it('a password reset lets an account locked by failed sign-ins in at once; without one it stays locked', async () => {
    // Every call below carries a client key, so the shared limiter decides each one; the
    // account's back-off is in the database, and the reset clears it there.
    const client = () => authJsClient(open.url, { headers: { 'x-real-ip': '192.0.2.61' } })
    const locked = async (email: string) => {
      expect(await signUp(open, email)).toMatchObject({ user: { email } })
      const signIn = (password: string) => client().signInWithPassword({ email, password })
      // RATE_LIMIT_PASSWORD_FAILURES (5) free failures, then each one doubles the wait.
      for (let i = 0; i < 8; i++) await signIn(`wrong-${String(i)}`)
      const refused = await signIn('password123')
      expect({ status: refused.error?.status, code: refused.error?.code }).toEqual({
        status: 429,
        code: 'over_request_rate_limit',
      })
      return signIn
    }
    const calls = open.app.rateLimitStats?.calls ?? 0
    const reset = 'locked-reset@example.com'
    const signInReset = await locked(reset)
    const kept = 'locked-kept@example.com'
    const signInKept = await locked(kept)
    const auth = client()
    expect((await auth.resetPasswordForEmail(reset)).error).toBeNull()
    const code = (await mailer.waitFor(reset, 'recovery')).token
    expect((await auth.verifyOtp({ email: reset, token: code, type: 'recovery' })).error).toBeNull()
    expect((await auth.updateUser({ password: 'after-reset-1' })).error).toBeNull()
    // The clock has not moved: the reset alone ended the back-off.
    const after = await signInReset('after-reset-1')
    expect(after.error).toBeNull()
    expect(after.data.session?.access_token).toEqual(expect.any(String))
    // The account that was not reset is still refused, even with its right password.
    expect((await signInKept('password123')).error?.status).toBe(429)
    // The service decided every request of the client (and applied the generated rules).
    expect((open.app.rateLimitStats?.calls ?? 0) - calls).toBeGreaterThanOrEqual(22)
    expect(open.app.rateLimitStats?.configMismatches).toBe(0)
  })

  it('holds one budget across both instances, fails open or closed, and recovers', async () => {
    const client = { 'x-real-ip': '192.0.2.44' }
    const both = async () => [
      (await refresh(open.url, client)).status,
      (await refresh(closed.url, client)).status,
    ]
    const seen: number[] = []
    for (let i = 0; i < 15; i++) seen.push(...(await both()))
    expect(seen).toEqual(Array<number>(30).fill(400))
    const limited = await refresh(closed.url, client)
    expect(limited.status).toBe(429)
    // The next token comes 5 minutes after the first request took one.
    const retryAfter = Number(limited.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThan(240)
    expect(retryAfter).toBeLessThanOrEqual(300)
    expect((await refresh(open.url, client)).status).toBe(429)
    // Another client is not affected.
    expect((await refresh(open.url, { 'x-real-ip': '192.0.2.45' })).status).toBe(400)

    await service?.stop('SIGKILL')
    const failedOpen = open.app.rateLimitStats?.failedOpen ?? 0
    // Fail open: the over-budget client passes, and it is counted.
    expect((await refresh(open.url, client)).status).toBe(400)
    expect(open.app.rateLimitStats?.failedOpen).toBe(failedOpen + 1)
    // RATE_LIMIT_FAIL_CLOSED: 503, retryable for auth-js.
    const refused = await refresh(closed.url, { 'x-real-ip': '192.0.2.46' })
    expect(refused.status).toBe(503)
    expect(closed.app.rateLimitStats?.failedClosed).toBe(1)
    // The same counters, as metrics.
    const failures = async (server: TestServer, mode: string) => {
      const families = await scrape(server.app.metricsUrl ?? '')
      return series(families, 'auth_rate_limit_service_failures_total', {
        auth_rate_limit_service_fail_mode: mode,
      })?.value
    }
    expect(await failures(open, 'open')).toBe(String(open.app.rateLimitStats?.failedOpen))
    expect(await failures(closed, 'closed')).toBe('1')
    const families = await scrape(open.app.metricsUrl ?? '')
    expect(Number(families.get('auth_rate_limit_service_decisions_total')?.metrics[0]?.value)).toBe(
      open.app.rateLimitStats?.calls,
    )
    expect(families.get('auth_rate_limit_service_config_mismatches_total')?.metrics[0]?.value).toBe(
      '0',
    )
    // No answer of the (killed) service was decided from its local counters.
    expect(families.get('auth_rate_limit_service_degraded_total')?.metrics[0]?.value).toBe('0')

    await service?.start()
    // Back: the budget kept in Redis applies again on both instances.
    await waitFor(async () => (await refresh(open.url, client)).status === 429, {
      what: 'the auth server to reach the restarted rate limit service',
      timeout: 30_000,
    })
    expect((await refresh(closed.url, client)).status).toBe(429)
  }, 90_000)
})
