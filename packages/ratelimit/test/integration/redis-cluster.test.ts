import { redisKeyPrefix, startRedisCluster, type TestRedisCluster } from '@gatehouse/testing'
import { Cluster } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { slidingWindowKeys } from '#internal/limiter/sliding-window.js'
import { startService, type Harness } from '../harness.js'
import { LOAD_FILES, loadKey, startLoad } from '../load.js'
import { healthy, one, TABLE_NOW as NOW } from './decision-table.js'
import { describeRedisDecisions } from './redis-decisions.js'

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

describeRedisDecisions('Redis Cluster (REDIS_TYPE=cluster)', () => {
  const check = checkClient()
  return Promise.resolve({
    env: clusterEnv(),
    check,
    // The cluster is this file's own and is stopped after it.
    close: () => {
      check.disconnect()
      return Promise.resolve()
    },
  })
})

describe('Redis Cluster under change', () => {
  const prefix = redisKeyPrefix('ratelimit-cluster')
  let h: Harness
  let check: Cluster
  beforeAll(async () => {
    h = await startService({
      files: LOAD_FILES,
      now: NOW,
      env: { BACKEND_TYPE: 'redis', CACHE_KEY_PREFIX: prefix, ...clusterEnv() },
    })
    check = checkClient()
    await healthy(h)
  })
  afterAll(async () => {
    check.disconnect()
    await h.close()
  })

  it('spreads keys over the nodes, each EVALSHA on its own slot', async () => {
    const values = Array.from({ length: 12 }, (_, i) => `spread-${String(i)}`)
    const answer = await h.client.shouldRateLimit({
      domain: 'load',
      descriptors: values.map((value) => one('client', value)),
    })
    expect(answer.statuses?.map((s) => s.limitRemaining)).toEqual(values.map(() => 99_999_999))
    const keys = values.map((value) => loadKey(prefix, value))
    const placement = await Promise.all(
      keys.map(async (key) => {
        const slot = await cluster.keySlot(key)
        return { key, slot, owner: await cluster.ownerOf(slot) }
      }),
    )
    // A precondition, not the service's doing: twelve random keys all on one of three nodes has a
    // chance of 6 in a million. Should it fail, the message shows what the cluster reported.
    expect(
      new Set(placement.map((p) => p.owner)).size,
      `slots and owners reported: ${JSON.stringify(placement)}`,
    ).toBeGreaterThan(1)
    expect(await Promise.all(keys.map((key) => check.get(key)))).toEqual(keys.map(() => '1'))
  })

  it("puts a sliding window's two counters in one slot (their hash tag), spread over the nodes", async () => {
    const values = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', '}', '{}', '}{', 'x}y']
    const slots = await Promise.all(
      values.map(async (value) => {
        const keys = slidingWindowKeys(
          prefix,
          'load',
          one('client', value),
          { unit: 'MINUTE', sharePatterns: undefined },
          NOW,
        )
        expect(keys.oneSlot).toBe(true)
        return [await cluster.keySlot(keys.current), await cluster.keySlot(keys.previous)]
      }),
    )
    for (const [current, previous] of slots) expect(current).toBe(previous)
    const owners = new Set(
      await Promise.all(slots.map(([slot]) => cluster.ownerOf(slot as number))),
    )
    expect(owners.size).toBeGreaterThan(1)
  })

  it('keeps deciding while a slot moves to another node under load, losing no decision', async () => {
    const key = loadKey(prefix, 'moving')
    const slot = await cluster.keySlot(key)
    const to = ((await cluster.ownerOf(slot)) + 1) % cluster.nodes.length
    const errorsBefore = h.stat('ratelimit.service.call.should_rate_limit.redis_error')
    const load = startLoad(h, { domain: 'load', descriptors: [one('client', 'moving')] })
    await load.answeredMore(100, 'answers before the move')
    await cluster.moveSlot(slot, to)
    await load.answeredMore(100, 'answers after the move, without a restart')
    const result = await load.stop()
    expect(await cluster.ownerOf(slot)).toBe(to)
    // Every failure (if any, during the move) is an error answer counted as upstream counts it.
    expect(h.stat('ratelimit.service.call.should_rate_limit.redis_error') - errorsBefore).toBe(
      result.failed,
    )
    // Every answered decision was counted exactly once, on whichever node held the key.
    const counter = Number(await check.get(key))
    expect(counter).toBeGreaterThanOrEqual(result.answered)
    expect(counter).toBeLessThanOrEqual(result.answered + result.failed)
    expect(await check.ttl(key)).toBeGreaterThan(3500)
  })
})
