/**
 * Every backend of the service for tests that run the same cases on each (issue 32): memory, the
 * shared Redis, a Redis Cluster and a memcached of the file's own (started by
 * {@link startBackends}, stopped by its `stop`).
 */
import {
  redisKeyPrefix,
  sharedRedisUrl,
  startMemcached,
  startRedisCluster,
  type TestMemcached,
  type TestRedisCluster,
} from '@gatehouse/testing'
import { MemcacheCounterStore } from '../src/memcache/memcache-store.js'
import type { Harness } from './harness.js'

/** One backend: the settings that select it and how to wait for its background writes. */
export interface TestBackend {
  readonly name: string
  /** It runs `token_bucket` rules (memcache does not). */
  readonly tokenBucket: boolean
  /** Settings that select it, keys under a prefix of their own. */
  env(): Record<string, string>
  /** Resolves once the service's background writes are done (memcache's increments). */
  settle(h: Harness): Promise<void>
}

/** The backends, and how to stop the servers started for them. */
export interface TestBackends {
  readonly all: readonly TestBackend[]
  stop(): Promise<void>
}

/** Starts a Redis Cluster and a memcached (the shared Redis is already there). */
export async function startBackends(label: string): Promise<TestBackends> {
  const [cluster, memcached]: [TestRedisCluster, TestMemcached] = await Promise.all([
    startRedisCluster({ nodes: 3 }),
    startMemcached(),
  ])
  const resolved = (): Promise<void> => Promise.resolve()
  return {
    all: [
      {
        name: 'memory',
        tokenBucket: true,
        env: () => ({ BACKEND_TYPE: 'memory' }),
        settle: resolved,
      },
      {
        name: 'Redis',
        tokenBucket: true,
        env: () => ({
          BACKEND_TYPE: 'redis',
          REDIS_SOCKET_TYPE: 'tcp',
          REDIS_URL: sharedRedisUrl(),
          // One connection: a background write (a refused sliding-window hit's release) is
          // ordered before the next request's.
          REDIS_POOL_SIZE: '1',
          CACHE_KEY_PREFIX: redisKeyPrefix(label),
        }),
        settle: resolved,
      },
      {
        name: 'Redis Cluster',
        tokenBucket: true,
        env: () => ({
          BACKEND_TYPE: 'redis',
          REDIS_TYPE: 'cluster',
          REDIS_URL: cluster.url,
          REDIS_PIPELINE_WINDOW: '150us',
          CACHE_KEY_PREFIX: `${label}:`,
        }),
        settle: resolved,
      },
      {
        name: 'memcache',
        tokenBucket: false,
        env: () => ({
          BACKEND_TYPE: 'memcache',
          MEMCACHE_HOST_PORT: memcached.hostPort,
          CACHE_KEY_PREFIX: `${label}:`,
        }),
        settle: (h) => {
          const store = h.app.store
          if (!(store instanceof MemcacheCounterStore)) throw new Error('not the memcache backend')
          return store.flush()
        },
      },
    ],
    stop: async () => {
      await Promise.all([cluster.stop(), memcached.stop()])
    },
  }
}
