import {
  redisKeyPrefix,
  startRedisSentinel,
  waitFor,
  type TestRedisSentinel,
} from '@gatehouse/testing'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startService } from '../harness.js'
import { LOAD_FILES, loadKey, startLoad } from '../load.js'
import { healthy, one, TABLE_NOW as NOW } from './decision-table.js'
import { describeRedisDecisions } from './redis-decisions.js'

let sentinel: TestRedisSentinel
const sentinelEnv = (): Record<string, string> => ({
  REDIS_TYPE: 'sentinel',
  REDIS_URL: sentinel.url,
})
const checkClient = (): Redis =>
  new Redis({
    name: sentinel.masterName,
    sentinels: sentinel.sentinelPorts.map((port) => ({ host: '127.0.0.1', port })),
  })

beforeAll(async () => {
  sentinel = await startRedisSentinel()
}, 30_000)
afterAll(async () => {
  await sentinel.stop()
})

describeRedisDecisions('Redis Sentinel (REDIS_TYPE=sentinel)', () => {
  const check = checkClient()
  return Promise.resolve({
    env: sentinelEnv(),
    check,
    // The deployment is this file's own and is stopped after it.
    close: () => {
      check.disconnect()
      return Promise.resolve()
    },
  })
})

describe('Redis Sentinel failover', () => {
  it('keeps serving through a forced failover under load and decides on the promoted master without a restart', async () => {
    const prefix = redisKeyPrefix('ratelimit-sentinel')
    const h = await startService({
      files: LOAD_FILES,
      now: NOW,
      env: {
        BACKEND_TYPE: 'redis',
        CACHE_KEY_PREFIX: prefix,
        REDIS_CLOSE_CONNECTION_ON_READONLY_ERROR: 'true',
        ...sentinelEnv(),
      },
    })
    const key = loadKey(prefix, 'failover')
    const errorStat = 'ratelimit.service.call.should_rate_limit.redis_error'
    try {
      await healthy(h)
      const before = await sentinel.masterIndex()
      const load = startLoad(h, { domain: 'load', descriptors: [one('client', 'failover')] })
      const promoted = new Redis(sentinel.servers[1 - before]?.url ?? '')
      try {
        await load.answeredMore(100, 'answers before the failover')
        await sentinel.failover()
        const atPromotion = Number(await promoted.get(key))
        // Decisions land on the promoted master again, without a restart. (Right after the
        // promotion a few may still reach the old master until it is demoted and the
        // connections move: Redis' asynchronous replication, as with upstream.)
        await waitFor(async () => Number(await promoted.get(key)) > atPromotion, {
          what: 'decisions to be counted on the promoted master',
        })
        await load.answeredMore(100, 'answers after the failover, without a restart')
        const result = await load.stop()
        // Calls in the gap fail as upstream's do, each counted under should_rate_limit.redis_error.
        expect(h.stat(errorStat)).toBe(result.failed)
        for (const error of result.errors) expect(error).not.toBe('')
        const after = { domain: 'load', descriptors: [one('client', 'after')] }
        expect((await h.client.shouldRateLimit(after)).overallCode).toBe('OK')
        expect(await promoted.get(loadKey(prefix, 'after'))).toBe('1')
        expect(h.app.health.healthy()).toBe(true)
      } finally {
        await load.stop()
        promoted.disconnect()
      }
    } finally {
      await h.close()
    }
  }, 30_000)
})
