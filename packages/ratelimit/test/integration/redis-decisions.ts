/**
 * Every Redis deployment (single node, Cluster, Sentinel) runs the backend-neutral decision table
 * ({@link describeDecisionTable}), read through a client of its own, and then the cases only Redis
 * has: the 2^52 counter ceiling and a command Redis refuses inside a shared write. Each test file
 * brings its own deployment.
 */
import { redisKeyPrefix, waitFor } from '@gatehouse/testing'
import type { Cluster, Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startService, type Harness } from '../harness.js'
import { describeAlgorithmTable } from './algorithm-table.js'
import {
  basic,
  describeDecisionTable,
  healthy,
  type DecisionBackend,
  minuteStart,
  one,
  TABLE_NOW,
} from './decision-table.js'

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
 * Declares the decision table and the Redis-only cases against the deployment `deploy` opens
 * (once, before the tests; its keys carry `prefix` through `CACHE_KEY_PREFIX`).
 */
export function describeRedisDecisions(
  title: string,
  deploy: (prefix: string) => Promise<RedisDeployment>,
): void {
  describe(title, () => {
    const prefix = redisKeyPrefix('ratelimit')
    let deployment: RedisDeployment
    const check = (): Redis | Cluster => deployment.check
    const redisEnv = (keyPrefix: string): Record<string, string> => ({
      BACKEND_TYPE: 'redis',
      CACHE_KEY_PREFIX: keyPrefix,
      REDIS_POOL_SIZE: '2',
      ...deployment.env,
    })

    beforeAll(async () => {
      deployment = await deploy(prefix)
    })
    afterAll(async () => {
      await deployment.close()
    })

    const backend: DecisionBackend = {
      name: title,
      env: redisEnv,
      read: async (key) => {
        const value = await check().get(key)
        return value === null ? undefined : Number(value)
      },
      write: async (key, value, ttlSeconds) => {
        await check().set(key, String(value), 'EX', ttlSeconds)
      },
      ttl: (key) => check().ttl(key),
      settle: () => Promise.resolve(),
      ready: healthy,
    }
    describeDecisionTable(backend, `${prefix}table:`)
    describeAlgorithmTable(backend, `${prefix}algos:`, { tokenBucket: true })

    describe('Redis only', () => {
      let h: Harness
      beforeAll(async () => {
        h = await startService({ files: basic, now: TABLE_NOW, env: redisEnv(prefix) })
        await healthy(h)
      })
      afterAll(async () => {
        await h.close()
      })

      it('keeps counters at or below 2^52 so that INCRBY can never overflow', async () => {
        const key = `${prefix}basic_one_per_minute_ceiling_${String(minuteStart)}`
        // As if a year-long window had been flooded with the largest hits_addend.
        await check().set(key, '4503599627370501', 'EX', 600) // 2^52 + 5
        const answer = await h.client.shouldRateLimit({
          domain: 'basic',
          descriptors: [
            { ...one('one_per_minute', 'ceiling'), hitsAddend: { value: 4_294_967_295 } },
          ],
        })
        expect(answer.overallCode).toBe('OVER_LIMIT')
        await waitFor(async () => (await check().get(key)) === String(2 ** 52), {
          what: 'the counter to be brought back to 2^52',
        })
        expect(await check().ttl(key)).toBeGreaterThan(0)
      })

      it('fails only the request whose command Redis refuses when requests share a write', async () => {
        const key = `${prefix}basic_one_per_minute_not-a-number_${String(minuteStart)}`
        await check().set(key, 'text', 'EX', 600)
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
        expect(h.stat('ratelimit.service.call.should_rate_limit.redis_error')).toBe(
          errorsBefore + 1,
        )
      })
    })
  })
}
