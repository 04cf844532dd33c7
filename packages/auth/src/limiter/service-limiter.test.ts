import {
  GRPC_CALL_STATUS,
  RateLimitCallError,
  type DescriptorStatus,
  type RateLimitRequest,
  type RateLimitResponse,
  type Unit,
} from '@gatehouse/ratelimit/client'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { ServiceUnavailableError } from '../errors.js'
import { loadSettings } from '../conf/settings.js'
import { InMemoryEmailSendLimiter } from './email-send-limiter.js'
import { serviceRules } from './service-config.js'
import {
  clientDescriptorValue,
  ServiceLimiter,
  type RateLimitTransport,
} from './service-limiter.js'

const SETTINGS = {
  AUTHSVC_SITE_URL: 'http://localhost:3000',
  AUTHSVC_API_EXTERNAL_URL: 'http://localhost:9999',
  AUTHSVC_JWT_SECRET: 'a-secret-of-thirty-two-bytes-or-more',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'postgres://localhost/db',
}
/** The defaults: token buckets, `verify` refilled 6 a minute, `token` 30 a minute. */
const RULES = serviceRules(loadSettings(SETTINGS))
const WINDOW_RULES = serviceRules(
  loadSettings({ ...SETTINGS, AUTHSVC_RATE_LIMIT_SERVICE_ALGORITHM: 'fixed_window' }),
)

/** A transport answering from a queue (a function per call) and recording the requests. */
function transport(...answers: (() => RateLimitResponse)[]) {
  const requests: RateLimitRequest[] = []
  const t: RateLimitTransport = {
    shouldRateLimit: (request) => {
      requests.push(request)
      const next = answers.shift()
      if (!next) return Promise.reject(new Error('no answer'))
      return new Promise((resolve) => {
        resolve(next())
      })
    },
  }
  return { t, requests }
}

/** An OK answer whose descriptors had these limits (`[requests_per_unit, unit]`). */
const okWith =
  (...limits: [number, Unit][]) =>
  (): RateLimitResponse => ({
    overallCode: 'OK',
    statuses: limits.map(([requestsPerUnit, unit]) => ({
      code: 'OK',
      currentLimit: { requestsPerUnit, unit },
      limitRemaining: 1,
      durationUntilReset: 1,
    })),
    responseHeadersToAdd: [],
  })
/** The answer to a default `verify` decision. */
const ok = okWith([6, 'MINUTE'])
const over = (): RateLimitResponse => ({
  overallCode: 'OVER_LIMIT',
  statuses: [
    {
      code: 'OVER_LIMIT',
      currentLimit: { requestsPerUnit: 6, unit: 'MINUTE' },
      limitRemaining: 0,
      durationUntilReset: 1200,
    },
  ],
  responseHeadersToAdd: [],
})
const down = (): RateLimitResponse => {
  throw Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 })
}
/** The service refused the request with this code (its `gatehouse-error-code` trailer). */
const refused = (errorCode: string) => (): RateLimitResponse => {
  throw new RateLimitCallError(GRPC_CALL_STATUS.UNKNOWN, 'refused', { errorCode })
}
/** A fresh in-process cap of `events` per hour, the fallback of a send cap. */
const perHour = (events: number) => new InMemoryEmailSendLimiter({ events, periodMs: 3_600_000 })

function logger() {
  const lines: { level: number; msg: string }[] = []
  const log = pino(
    { level: 'info' },
    { write: (line: string) => lines.push(JSON.parse(line) as { level: number; msg: string }) },
  )
  return { log, lines }
}

describe('ServiceLimiter', () => {
  it("counts the service's degraded answers (its local counters) and decides by them, without a config mismatch", async () => {
    // The service's instance share of 6 per minute (BACKEND_FAILURE_LOCAL_SHARE=2): 3.
    const degradedOver = (): RateLimitResponse => ({
      ...over(),
      statuses: [
        {
          ...(over().statuses[0] as DescriptorStatus),
          currentLimit: { requestsPerUnit: 3, unit: 'MINUTE' },
        },
      ],
      responseHeadersToAdd: [{ key: 'x-ratelimit-degraded', value: '1' }],
    })
    const { t } = transport(degradedOver)
    const limiter = new ServiceLimiter(t, {
      domain: 'gatehouse-auth',
      rules: RULES,
      failClosed: false,
    })
    expect(await limiter.allow('verify', '203.0.113.1')).toEqual({
      allowed: false,
      retryAfterSeconds: 1200,
    })
    expect(limiter.stats).toMatchObject({ calls: 1, degraded: 1, configMismatches: 0, failures: 0 })
  })

  it('sends the operation and client descriptor (the token bucket), and Retry-After from the refusal', async () => {
    const { t, requests } = transport(ok, over)
    const limiter = new ServiceLimiter(t, {
      domain: 'gatehouse-auth',
      rules: RULES,
      failClosed: false,
    })
    expect(await limiter.allow('verify', '203.0.113.1')).toEqual({
      allowed: true,
      retryAfterSeconds: 0,
    })
    expect(await limiter.allow('verify', '203.0.113.1')).toEqual({
      allowed: false,
      retryAfterSeconds: 1200,
    })
    expect(requests[0]).toEqual({
      domain: 'gatehouse-auth',
      hitsAddend: 1,
      descriptors: [
        {
          entries: [
            { key: 'operation', value: 'verify' },
            { key: 'client', value: clientDescriptorValue('203.0.113.1') },
          ],
        },
      ],
    })
  })

  it('with fixed_window, sends the minute and the hour descriptor', async () => {
    const { t, requests } = transport(okWith([30, 'MINUTE'], [72, 'HOUR']))
    const limiter = new ServiceLimiter(t, {
      domain: 'gatehouse-auth',
      rules: WINDOW_RULES,
      failClosed: false,
    })
    expect((await limiter.allow('verify', '203.0.113.1')).allowed).toBe(true)
    expect(requests[0]?.descriptors).toEqual([
      {
        entries: [
          { key: 'operation', value: 'verify' },
          { key: 'client', value: clientDescriptorValue('203.0.113.1') },
        ],
      },
      {
        entries: [
          { key: 'operation', value: 'verify' },
          { key: 'client', value: clientDescriptorValue('203.0.113.1') },
          { key: 'window', value: 'hour' },
        ],
      },
    ])
  })

  it('counts the email cap under operation=email_sent', async () => {
    const { t, requests } = transport(okWith([30, 'HOUR']), over)
    const email = new ServiceLimiter(t, {
      domain: 'd',
      rules: RULES,
      failClosed: false,
    }).sendLimiter('email_sent', perHour(30))
    expect(await email.take(0)).toBe(true)
    expect(await email.take(0)).toBe(false)
    expect(requests[1]?.descriptors).toEqual([
      { entries: [{ key: 'operation', value: 'email_sent' }] },
    ])
  })

  it('fails open: allows, counts, warns once, and says when the service is back', async () => {
    const { log, lines } = logger()
    const { t } = transport(down, down, okWith([30, 'MINUTE']))
    const limiter = new ServiceLimiter(t, {
      domain: 'd',
      rules: RULES,
      failClosed: false,
      logger: log,
    })
    expect((await limiter.allow('token', 'k')).allowed).toBe(true)
    expect((await limiter.allow('token', 'k')).allowed).toBe(true)
    expect((await limiter.allow('token', 'k')).allowed).toBe(true)
    expect(limiter.stats).toEqual({
      calls: 3,
      failures: 2,
      failedOpen: 2,
      failedClosed: 0,
      configMismatches: 0,
      refused: 0,
      sendFallbacks: 0,
      degraded: 0,
    })
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [
        40,
        'rate limit service unreachable: requests are allowed (fail open); send caps are counted in this process',
      ],
      [30, 'rate limit service reachable again'],
    ])
  })

  it('fails closed with 503 under RATE_LIMIT_FAIL_CLOSED', async () => {
    const { t } = transport(down)
    const limiter = new ServiceLimiter(t, { domain: 'd', rules: RULES, failClosed: true })
    await expect(limiter.allow('token', 'k')).rejects.toBeInstanceOf(ServiceUnavailableError)
    expect(limiter.stats.failedClosed).toBe(1)
  })

  it('warns once per operation when the service applies another limit than the settings give', async () => {
    const { log, lines } = logger()
    const none = (): RateLimitResponse => ({
      overallCode: 'OK',
      statuses: [{ code: 'OK', limitRemaining: 0 }],
      responseHeadersToAdd: [],
    })
    // No rule at all (the domain config is missing), twice; then a stale rule for `token`; then
    // the rules' limit, also with a second status, which no rule covers.
    const { t } = transport(
      none,
      none,
      okWith([20, 'MINUTE']),
      ok,
      okWith([6, 'MINUTE'], [1, 'HOUR']),
    )
    const limiter = new ServiceLimiter(t, {
      domain: 'd',
      rules: RULES,
      failClosed: false,
      logger: log,
    })
    for (const operation of ['verify', 'verify', 'token', 'verify', 'verify'] as const) {
      expect((await limiter.allow(operation, 'k')).allowed).toBe(true)
    }
    expect(limiter.stats.configMismatches).toBe(3)
    const warnings = lines as unknown as Record<string, unknown>[]
    expect(
      warnings.map(({ operation, expected, applied }) => ({ operation, expected, applied })),
    ).toEqual([
      { operation: 'verify', expected: '6 per MINUTE', applied: 'none' },
      { operation: 'token', expected: '30 per MINUTE', applied: '20 per MINUTE' },
    ])
    expect(lines[0]?.msg).toContain('gatehouse-auth ratelimit-config')
  })

  it('checks the send caps against their window', async () => {
    const { t } = transport(okWith([30, 'HOUR']), okWith([30, 'MINUTE']))
    const limiter = new ServiceLimiter(t, { domain: 'd', rules: RULES, failClosed: false })
    const sms = limiter.sendLimiter('sms_sent', perHour(30))
    expect(await sms.take(0)).toBe(true)
    expect(limiter.stats.configMismatches).toBe(0)
    expect(await sms.take(0)).toBe(true)
    expect(limiter.stats.configMismatches).toBe(1)
  })

  /** @see issue 24, item 6 */
  describe('hardening of issue 24', () => {
    it('hashes client keys into short descriptor values every backend can hold', async () => {
      const hostile = ['x'.repeat(300), 'a b\r\nSET k 0', 'ключ:😀', '', '203.0.113.1']
      const values = hostile.map(clientDescriptorValue)
      for (const value of values) expect(value).toMatch(/^[A-Za-z0-9_-]{22}$/)
      expect(new Set(values).size).toBe(hostile.length)
      expect(clientDescriptorValue('203.0.113.1')).toBe(values[4])
      const { t, requests } = transport(ok)
      await new ServiceLimiter(t, { domain: 'd', rules: RULES, failClosed: false }).allow(
        'verify',
        hostile[1] as string,
      )
      expect(requests[0]?.descriptors[0]?.entries[1]).toEqual({
        key: 'client',
        value: values[1],
      })
    })

    it.each(['ERR_BACKEND_KEY', 'ERR_SERVICE', 'ERR_REQUEST_TOO_LARGE'])(
      'refuses a request the service refuses with %s, even failing open',
      async (code) => {
        const { log, lines } = logger()
        const { t } = transport(refused(code), refused(code))
        const limiter = new ServiceLimiter(t, {
          domain: 'd',
          rules: RULES,
          failClosed: false,
          logger: log,
        })
        await expect(limiter.allow('token', 'k')).rejects.toBeInstanceOf(ServiceUnavailableError)
        expect(await limiter.sendLimiter('sms_sent', perHour(30)).take(0)).toBe(false)
        expect(limiter.stats).toMatchObject({ refused: 2, failedOpen: 0, sendFallbacks: 0 })
        expect(lines.map((l) => l.msg)).toEqual([
          expect.stringContaining('rate limit service refused'),
          expect.stringContaining('rate limit service refused'),
        ])
      },
    )

    it('send caps never fail open: the in-process cap decides while the service is down', async () => {
      const { log, lines } = logger()
      const { t } = transport(down, down, down, down)
      const limiter = new ServiceLimiter(t, {
        domain: 'd',
        rules: RULES,
        failClosed: false,
        logger: log,
      })
      const sms = limiter.sendLimiter('sms_sent', perHour(2))
      const taken = []
      for (let i = 0; i < 4; i++) taken.push(await sms.take(1_000))
      expect(taken).toEqual([true, true, false, false])
      expect(limiter.stats).toMatchObject({ failures: 4, failedOpen: 0, sendFallbacks: 4 })
      expect(lines.map((l) => l.msg)).toEqual([
        expect.stringContaining('send caps are counted in this process'),
      ])
    })

    it('the in-process cap also counts what the service allowed, so an outage starts from there', async () => {
      const { t } = transport(okWith([2, 'HOUR']), okWith([2, 'HOUR']), down)
      const limiter = new ServiceLimiter(t, { domain: 'd', rules: RULES, failClosed: false })
      const email = limiter.sendLimiter('email_sent', perHour(2))
      expect([await email.take(0), await email.take(0), await email.take(0)]).toEqual([
        true,
        true,
        false,
      ])
    })
  })
})
