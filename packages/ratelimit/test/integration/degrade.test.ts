/**
 * Degrade, don't fail (issue 32): with `BACKEND_FAILURE_MODE=local`, a Redis this test kills and
 * restarts under load: no error answers while it is down, the limit held at the local share, the
 * answers marked, decisions back on Redis within the check interval (measured), and the local
 * hits added to Redis' counters.
 */
import { startRedisServer, waitFor, type TestRedisServer } from '@gatehouse/testing'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RateLimitResponse } from '../../src/protocol/types.js'
import { startService, type Harness } from '../harness.js'

const NOW = Date.UTC(2026, 0, 1, 0, 0, 10)
const HOUR = Math.floor(NOW / 3_600_000) * 3600
const RULES = `domain: d
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 10 }
`
const request = {
  domain: 'd',
  descriptors: [{ entries: [{ key: 'user', value: 'u1' }] }],
  hitsAddend: 0,
}
const degraded = (answer: RateLimitResponse): boolean =>
  answer.responseHeadersToAdd.some((h) => h.key === 'x-ratelimit-degraded' && h.value === '1')

describe('BACKEND_FAILURE_MODE=local with Redis killed and restarted under load', () => {
  let server: TestRedisServer
  let h: Harness
  beforeAll(async () => {
    server = await startRedisServer()
    h = await startService({
      files: { 'd.yaml': RULES },
      now: NOW,
      env: {
        BACKEND_TYPE: 'redis',
        REDIS_SOCKET_TYPE: 'tcp',
        REDIS_URL: server.hostPort,
        REDIS_TIMEOUT: '300ms',
        BACKEND_FAILURE_MODE: 'local',
        BACKEND_FAILURE_LOCAL_SHARE: '2',
        BACKEND_FAILURE_CHECK_INTERVAL: '100ms',
        EXPIRATION_JITTER_MAX_SECONDS: '0',
      },
    })
    await waitFor(() => h.app.health.healthy(), { what: 'healthy' })
  })
  afterAll(async () => {
    await h.close()
    await server.stop()
  })

  it('answers from local counters at the share, marked, then returns to Redis with the local hits', async () => {
    const first = await h.app.service.shouldRateLimit(request)
    expect(first.statuses[0]).toMatchObject({ code: 'OK', limitRemaining: 9 })
    expect(degraded(first)).toBe(false)

    await server.kill()
    // Load while Redis is down: 3 rounds of 4 concurrent calls; none fails.
    const answers: RateLimitResponse[] = []
    for (let round = 0; round < 3; round++) {
      answers.push(
        ...(await Promise.all(
          Array.from({ length: 4 }, () => h.app.service.shouldRateLimit(request)),
        )),
      )
    }
    expect(answers.every(degraded)).toBe(true)
    // The local share: ceil(10 / 2) = 5 allowed, the rest over the limit.
    expect(answers.filter((a) => a.overallCode === 'OK')).toHaveLength(5)
    expect(answers.map((a) => a.statuses[0]?.currentLimit?.requestsPerUnit)).toEqual(
      answers.map(() => 5),
    )
    expect(h.stat('ratelimit.service.backend_degraded')).toBe(12)
    expect(h.stat('ratelimit.service.call.should_rate_limit.redis_error')).toBe(0)

    await server.restart()
    const restarted = performance.now()
    await waitFor(
      async () => !degraded(await h.app.service.shouldRateLimit({ ...request, hitsAddend: 0 })),
      { what: 'decisions back on Redis', timeout: 5000, interval: 20 },
    )
    const recoveryMs = performance.now() - restarted
    // Within the check interval plus the reconnection (ioredis retries), well under a second.
    expect(recoveryMs).toBeLessThan(3000)
    console.info(`degrade mode: back on Redis ${recoveryMs.toFixed(0)} ms after the restart`)

    const check = new Redis(server.url)
    try {
      // The restarted Redis lost everything: it holds the 12 local hits, added once, plus the
      // hits of the calls decided on it since (each of those is one).
      const value = Number(await check.get(`d_user_u1_${String(HOUR)}`))
      const sinceBack = h.stat('ratelimit.service.rate_limit.d.user.total_hits') - 1 - 12
      expect(value).toBe(12 + sinceBack)
    } finally {
      check.disconnect()
    }
  })
})
