import { redisKeyPrefix, startRedisCluster, type TestRedisCluster } from '@gatehouse/testing'
import { Cluster } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startService } from '../harness.js'
import { startLoad } from '../load.js'
import { NOW, describeRedisDecisions, healthy, one } from '../redis-decisions.js'

let cluster: TestRedisCluster
const clusterEnv = (): Record<string, string> => ({
  REDIS_TYPE: 'cluster',
  REDIS_URL: cluster.url,
  REDIS_PIPELINE_WINDOW: '150us',
})
const checkClient = (): Cluster =>
  new Cluster(cluster.nodes.map((node) => ({ host: node.host, port: node.port })))

beforeAll(async () => {
  cluster = await startRedisCluster({ nodes: 3 })
}, 30_000)
afterAll(async () => {
  await cluster.stop()
})

describeRedisDecisions('Redis Cluster (REDIS_TYPE=cluster): same keys, TTLs and decisions', () =>
  Promise.resolve({
    env: clusterEnv(),
    check: checkClient(),
    // The cluster is this file's own and is stopped after it.
    close: () => Promise.resolve(),
  }),
)

describe('Redis Cluster under change', () => {
  const LOAD = `domain: load
descriptors:
  - key: client
    rate_limit: { unit: hour, requests_per_unit: 100000000 }
`
  const hourStart = Math.floor(NOW / 1000 / 3600) * 3600

  it('spreads keys over the nodes, each EVALSHA on its own slot', async () => {
    const prefix = redisKeyPrefix('ratelimit-cluster')
    const h = await startService({
      files: { 'load.yaml': LOAD },
      now: NOW,
      env: { BACKEND_TYPE: 'redis', CACHE_KEY_PREFIX: prefix, ...clusterEnv() },
    })
    const check = checkClient()
    try {
      await healthy(h)
      const values = Array.from({ length: 12 }, (_, i) => `spread-${String(i)}`)
      const answer = await h.client.shouldRateLimit({
        domain: 'load',
        descriptors: values.map((value) => one('client', value)),
      })
      expect(answer.statuses?.map((s) => s.limitRemaining)).toEqual(values.map(() => 99_999_999))
      const keys = values.map((value) => `${prefix}load_client_${value}_${String(hourStart)}`)
      const owners = new Set(
        await Promise.all(keys.map(async (key) => cluster.ownerOf(await cluster.keySlot(key)))),
      )
      expect(owners.size).toBeGreaterThan(1)
      expect(await Promise.all(keys.map((key) => check.get(key)))).toEqual(keys.map(() => '1'))
    } finally {
      check.disconnect()
      await h.close()
    }
  })

  it('keeps deciding while a slot moves to another node under load, losing no decision', async () => {
    const prefix = redisKeyPrefix('ratelimit-cluster')
    const h = await startService({
      files: { 'load.yaml': LOAD },
      now: NOW,
      env: { BACKEND_TYPE: 'redis', CACHE_KEY_PREFIX: prefix, ...clusterEnv() },
    })
    const check = checkClient()
    const key = `${prefix}load_client_moving_${String(hourStart)}`
    const slot = await cluster.keySlot(key)
    const from = await cluster.ownerOf(slot)
    const to = (from + 1) % cluster.nodes.length
    const errorStat = 'ratelimit.service.call.should_rate_limit.redis_error'
    try {
      await healthy(h)
      const load = startLoad(h, { domain: 'load', descriptors: [one('client', 'moving')] })
      await load.answeredMore(100, 'answers before the move')
      await cluster.moveSlot(slot, to)
      await load.answeredMore(100, 'answers after the move, without a restart')
      const result = await load.stop()
      expect(await cluster.ownerOf(slot)).toBe(to)
      // Every failure (if any, during the move) is an error answer counted as upstream counts it.
      expect(h.stat(errorStat)).toBe(result.failed)
      // Every answered decision was counted exactly once, on whichever node held the key.
      const counter = Number(await check.get(key))
      expect(counter).toBeGreaterThanOrEqual(result.answered)
      expect(counter).toBeLessThanOrEqual(result.answered + result.failed)
      expect(await check.ttl(key)).toBeGreaterThan(3500)
    } finally {
      check.disconnect()
      await h.close()
    }
  })
})
