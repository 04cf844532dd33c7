/**
 * The decision table every Redis deployment runs (single node, Cluster, Sentinel): upstream's
 * keys, TTLs, replies and error answers, so that each `REDIS_TYPE` is shown to decide exactly
 * like a single Redis. Each test file brings its own deployment.
 */
import { redisKeyPrefix, waitFor } from '@gatehouse/testing'
import type { Cluster, Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { upstreamFixture } from './fixtures.js'
import { startService, type Harness } from './harness.js'

/** The fake clock's start: 2026-01-01 00:00:10 UTC. */
export const NOW = Date.UTC(2026, 0, 1, 0, 0, 10)
const NOW_S = NOW / 1000
const minuteStart = Math.floor(NOW_S / 60) * 60

/** Upstream's integration configs `basic.yaml` and `another.yaml`. */
export const basic = {
  'basic.yaml': upstreamFixture('integration/basic.yaml'),
  'another.yaml': upstreamFixture('integration/another.yaml'),
}

/** A descriptor of one entry. */
export const one = (key: string, value: string) => ({ entries: [{ key, value }] })

/** Resolves once the service's health check passes (the backend answered). */
export async function healthy(h: Harness): Promise<void> {
  await waitFor(() => h.app.health.healthy(), { what: 'the backend to become healthy' })
}

/** A Redis deployment under test. */
export interface RedisDeployment {
  /** Settings that select it (`REDIS_TYPE`, `REDIS_URL`, …). */
  readonly env: Record<string, string>
  /** A client on the same data, to check keys and TTLs. */
  readonly check: Redis | Cluster
  /** Removes what the tests wrote (keys under the prefix) and closes `check`. */
  close(): Promise<void>
}

/**
 * Declares the decision table against the deployment `deploy` opens (once, before the table's
 * tests; its keys carry `prefix` through `CACHE_KEY_PREFIX`).
 */
export function describeRedisDecisions(
  title: string,
  deploy: (prefix: string) => Promise<RedisDeployment>,
): void {
  describe(title, () => {
    const prefix = redisKeyPrefix('ratelimit')
    let h: Harness
    let redis: Redis | Cluster
    let deployment: RedisDeployment

    beforeAll(async () => {
      deployment = await deploy(prefix)
      redis = deployment.check
      h = await startService({
        files: basic,
        now: NOW,
        env: {
          BACKEND_TYPE: 'redis',
          CACHE_KEY_PREFIX: prefix,
          EXPIRATION_JITTER_MAX_SECONDS: '300',
          REDIS_POOL_SIZE: '2',
          ...deployment.env,
        },
      })
      await healthy(h)
    })
    afterAll(async () => {
      await h.close()
      await deployment.close()
    })

    it('keeps counters at or below 2^52 so that INCRBY can never overflow', async () => {
      const key = `${prefix}basic_one_per_minute_ceiling_${String(minuteStart)}`
      // As if a year-long window had been flooded with the largest hits_addend.
      await redis.set(key, '4503599627370501', 'EX', 600) // 2^52 + 5
      const answer = await h.client.shouldRateLimit({
        domain: 'basic',
        descriptors: [
          { ...one('one_per_minute', 'ceiling'), hitsAddend: { value: 4_294_967_295 } },
        ],
      })
      expect(answer.overallCode).toBe('OVER_LIMIT')
      await waitFor(async () => (await redis.get(key)) === String(2 ** 52), {
        what: 'the counter to be brought back to 2^52',
      })
      expect(await redis.ttl(key)).toBeGreaterThan(0)
    })

    it('fails only the request whose command Redis refuses when requests share a write', async () => {
      const key = `${prefix}basic_one_per_minute_not-a-number_${String(minuteStart)}`
      await redis.set(key, 'text', 'EX', 600)
      const errorsBefore = h.stat('ratelimit.service.call.should_rate_limit.redis_error')
      // Sent together, so that their commands leave in one pipeline.
      const [refused, ...others] = await Promise.allSettled([
        h.client.shouldRateLimit({
          domain: 'basic',
          descriptors: [one('one_per_minute', 'not-a-number')],
        }),
        ...['batch-a', 'batch-b', 'batch-c'].map((value) =>
          h.client.shouldRateLimit({
            domain: 'basic',
            descriptors: [one('one_per_minute', value)],
          }),
        ),
      ])
      expect(refused.status).toBe('rejected')
      expect(((refused as PromiseRejectedResult).reason as { details: string }).details).toBe(
        'ERR value is not an integer or out of range',
      )
      expect(others.map((o) => o.status === 'fulfilled' && o.value.overallCode)).toEqual([
        'OK',
        'OK',
        'OK',
      ])
      expect(h.stat('ratelimit.service.call.should_rate_limit.redis_error')).toBe(errorsBefore + 1)
    })

    it('stores counters under upstream cache keys with INCRBY and EXPIRE (window + jitter)', async () => {
      const answer = await h.client.shouldRateLimit({
        domain: 'basic',
        descriptors: [one('one_per_minute', 'redis')],
      })
      expect(answer.overallCode).toBe('OK')
      const key = `${prefix}basic_one_per_minute_redis_${String(minuteStart)}`
      expect(await redis.get(key)).toBe('1')
      const ttl = await redis.ttl(key)
      expect(ttl).toBeGreaterThanOrEqual(59)
      expect(ttl).toBeLessThan(360)
      expect(
        (
          await h.client.shouldRateLimit({
            domain: 'basic',
            descriptors: [one('one_per_minute', 'redis')],
          })
        ).overallCode,
      ).toBe('OVER_LIMIT')
      expect(await redis.get(key)).toBe('2')
    })

    it('continues counters written by another instance (or by upstream) on the same Redis', async () => {
      const key = `${prefix}another_key2_shared_${String(minuteStart)}`
      await redis.set(key, '18', 'EX', 60)
      const answer = await h.client.shouldRateLimit({
        domain: 'another',
        descriptors: [one('key2', 'shared')],
      })
      expect(answer.statuses?.[0]?.limitRemaining).toBe(1)
      expect(await redis.get(key)).toBe('19')
    })

    it('puts every descriptor of a request in one pipeline, in request order', async () => {
      const answer = await h.client.shouldRateLimit({
        domain: 'another',
        descriptors: [one('key3', 'multi'), one('nothing', 'x'), one('key4', 'multi')],
      })
      expect(answer.statuses?.map((s) => [s.code, s.currentLimit?.unit, s.limitRemaining])).toEqual(
        [
          ['OK', 'HOUR', 9],
          ['OK', undefined, undefined],
          ['OK', 'DAY', 19],
        ],
      )
      expect(
        await redis.get(`${prefix}another_key3_multi_${String(Math.floor(NOW_S / 3600) * 3600)}`),
      ).toBe('1')
      expect(
        await redis.get(`${prefix}another_key4_multi_${String(Math.floor(NOW_S / 86400) * 86400)}`),
      ).toBe('1')
    })

    it('moves to a new key when the window rolls over', async () => {
      const request = { domain: 'basic', descriptors: [one('one_per_minute', 'roll')] }
      await h.client.shouldRateLimit(request)
      expect((await h.client.shouldRateLimit(request)).overallCode).toBe('OVER_LIMIT')
      h.clock.advance(60_000)
      try {
        expect((await h.client.shouldRateLimit(request)).overallCode).toBe('OK')
        expect(
          await redis.get(`${prefix}basic_one_per_minute_roll_${String(minuteStart + 60)}`),
        ).toBe('1')
      } finally {
        h.clock.set(NOW)
      }
    })
  })
}
