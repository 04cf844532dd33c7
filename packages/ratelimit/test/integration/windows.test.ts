/**
 * Issue 32's decisions on every backend against the reference model (`../windows-model.ts`):
 * windows of several units (`unit_multiplier`) and several windows per rule, for the fixed
 * window, the sliding window and the token bucket, on an injected clock. One service per backend;
 * the Redis Cluster and memcached are this file's own.
 */
import {
  redisKeyPrefix,
  sharedRedisUrl,
  startMemcached,
  startRedisCluster,
  type TestMemcached,
  type TestRedisCluster,
} from '@gatehouse/testing'
import { afterAll, beforeAll, describe, it } from 'vitest'
import { MemcacheCounterStore } from '../../src/memcache/memcache-store.js'
import { startService, type Harness } from '../harness.js'
import { checkAgainstModel, MODEL_EPOCH_MS } from '../windows-model.js'

/** Empty at start: each case loads its own rule. */
const FILES = { 'windows.yaml': 'domain: windows\n' }

/**
 * Lifetimes far beyond the test (a constant jitter near its maximum): counters of the fake
 * clock's windows must not expire in real time while a case runs.
 */
const LONG_LIVED = { EXPIRATION_JITTER_MAX_SECONDS: '3600' }
const deps = { random: () => 0.99 }

interface Backend {
  readonly name: string
  readonly tokenBucket: boolean
  env(): Record<string, string>
  settle(h: Harness): Promise<void>
}

let cluster: TestRedisCluster
let memcached: TestMemcached
beforeAll(async () => {
  ;[cluster, memcached] = await Promise.all([startRedisCluster({ nodes: 3 }), startMemcached()])
}, 60_000)
afterAll(async () => {
  await Promise.all([cluster.stop(), memcached.stop()])
})

const BACKENDS: readonly Backend[] = [
  {
    name: 'memory',
    tokenBucket: true,
    env: () => ({ BACKEND_TYPE: 'memory' }),
    settle: () => Promise.resolve(),
  },
  {
    name: 'Redis',
    tokenBucket: true,
    env: () => ({
      BACKEND_TYPE: 'redis',
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_URL: sharedRedisUrl(),
      // One connection: a refused sliding-window hit's background release is ordered before the
      // next request's step.
      REDIS_POOL_SIZE: '1',
      CACHE_KEY_PREFIX: redisKeyPrefix('ratelimit-windows'),
    }),
    settle: () => Promise.resolve(),
  },
  {
    name: 'Redis Cluster',
    tokenBucket: true,
    env: () => ({
      BACKEND_TYPE: 'redis',
      REDIS_TYPE: 'cluster',
      REDIS_URL: cluster.url,
      REDIS_PIPELINE_WINDOW: '150us',
      CACHE_KEY_PREFIX: 'w:',
    }),
    settle: () => Promise.resolve(),
  },
  {
    name: 'memcache',
    tokenBucket: false,
    env: () => ({
      BACKEND_TYPE: 'memcache',
      MEMCACHE_HOST_PORT: memcached.hostPort,
      CACHE_KEY_PREFIX: 'w:',
    }),
    settle: (h) => {
      const store = h.app.store
      if (!(store instanceof MemcacheCounterStore)) throw new Error('not the memcache backend')
      return store.flush()
    },
  },
]

for (const backend of BACKENDS) {
  describe(`windows on ${backend.name}`, () => {
    let h: Harness
    beforeAll(async () => {
      h = await startService({
        files: FILES,
        now: MODEL_EPOCH_MS,
        env: { ...backend.env(), ...LONG_LIVED },
        deps,
      })
      await h.app.store.ready()
    })
    afterAll(async () => {
      await h.close()
    })

    it('decides windows of several units (unit_multiplier) as the model does', async () => {
      await checkAgainstModel(h, () => backend.settle(h), {
        maxWindows: 1,
        tokenBucket: backend.tokenBucket,
        runs: 100,
      })
    })
  })
}
