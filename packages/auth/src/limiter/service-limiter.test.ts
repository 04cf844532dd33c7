import type { RateLimitRequest, RateLimitResponse } from '@gatehouse/ratelimit'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { ServiceUnavailableError } from '../errors.js'
import { ServiceLimiter, type RateLimitTransport } from './service-limiter.js'

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

const ok = (): RateLimitResponse => ({
  overallCode: 'OK',
  statuses: [],
  responseHeadersToAdd: [],
})
const over = (): RateLimitResponse => ({
  overallCode: 'OVER_LIMIT',
  statuses: [
    { code: 'OK', limitRemaining: 3, durationUntilReset: 40 },
    { code: 'OVER_LIMIT', limitRemaining: 0, durationUntilReset: 1200 },
  ],
  responseHeadersToAdd: [],
})
const down = (): RateLimitResponse => {
  throw Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 })
}

function logger() {
  const lines: { level: number; msg: string }[] = []
  const log = pino(
    { level: 'info' },
    { write: (line: string) => lines.push(JSON.parse(line) as { level: number; msg: string }) },
  )
  return { log, lines }
}

describe('ServiceLimiter', () => {
  it('sends the operation and client descriptor (the token bucket), and Retry-After from the refusal', async () => {
    const { t, requests } = transport(ok, over)
    const limiter = new ServiceLimiter(t, { domain: 'gatehouse-auth', failClosed: false })
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
            { key: 'client', value: '203.0.113.1' },
          ],
        },
      ],
    })
  })

  it('with fixed_window, sends the minute and the hour descriptor', async () => {
    const { t, requests } = transport(ok)
    const limiter = new ServiceLimiter(t, {
      domain: 'gatehouse-auth',
      algorithm: 'fixed_window',
      failClosed: false,
    })
    expect((await limiter.allow('verify', '203.0.113.1')).allowed).toBe(true)
    expect(requests[0]?.descriptors).toEqual([
      {
        entries: [
          { key: 'operation', value: 'verify' },
          { key: 'client', value: '203.0.113.1' },
        ],
      },
      {
        entries: [
          { key: 'operation', value: 'verify' },
          { key: 'client', value: '203.0.113.1' },
          { key: 'window', value: 'hour' },
        ],
      },
    ])
  })

  it('counts the email cap under operation=email_sent', async () => {
    const { t, requests } = transport(ok, over)
    const email = new ServiceLimiter(t, { domain: 'd', failClosed: false }).sendLimiter(
      'email_sent',
    )
    expect(await email.take(0)).toBe(true)
    expect(await email.take(0)).toBe(false)
    expect(requests[1]?.descriptors).toEqual([
      { entries: [{ key: 'operation', value: 'email_sent' }] },
    ])
  })

  it('fails open: allows, counts, warns once, and says when the service is back', async () => {
    const { log, lines } = logger()
    const { t } = transport(down, down, ok)
    const limiter = new ServiceLimiter(t, { domain: 'd', failClosed: false, logger: log })
    expect((await limiter.allow('token', 'k')).allowed).toBe(true)
    expect((await limiter.allow('token', 'k')).allowed).toBe(true)
    expect((await limiter.allow('token', 'k')).allowed).toBe(true)
    expect(limiter.stats).toEqual({ calls: 3, failures: 2, failedOpen: 2, failedClosed: 0 })
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [40, 'rate limit service unreachable: requests are allowed (fail open)'],
      [30, 'rate limit service reachable again'],
    ])
  })

  it('fails closed with 503 under RATE_LIMIT_FAIL_CLOSED', async () => {
    const { t } = transport(down)
    const limiter = new ServiceLimiter(t, { domain: 'd', failClosed: true })
    await expect(limiter.allow('token', 'k')).rejects.toBeInstanceOf(ServiceUnavailableError)
    expect(limiter.stats.failedClosed).toBe(1)
  })
})
