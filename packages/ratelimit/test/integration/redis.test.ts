import {
  getFreePort,
  redisKeyPrefix,
  sharedRedisUrl,
  startRedisServer,
  waitFor,
  type TestRedisServer,
} from '@gatehouse/testing'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OWN_FIXTURES } from '../fixtures.js'
import { startService, type Harness } from '../harness.js'
import {
  basic,
  describeDecisionTable,
  healthy,
  minuteStart,
  NOW_S,
  one,
  TABLE_NOW,
} from './decision-table.js'

const NOW = TABLE_NOW

async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  const keys = await redis.keys(`${prefix}*`)
  if (keys.length > 0) await redis.del(...keys)
}

const tablePrefix = redisKeyPrefix('ratelimit-table')
const tableRedis = new Redis(sharedRedisUrl(), { lazyConnect: true })
afterAll(async () => {
  await deleteKeys(tableRedis, tablePrefix)
  tableRedis.disconnect()
})

describe('Redis backend on the shared Redis (upstream-compatible keys)', () => {
  const prefix = redisKeyPrefix('ratelimit')
  let h: Harness
  let redis: Redis

  beforeAll(async () => {
    redis = new Redis(sharedRedisUrl())
    h = await startService({
      files: basic,
      now: NOW,
      env: {
        BACKEND_TYPE: 'redis',
        REDIS_SOCKET_TYPE: 'tcp',
        REDIS_URL: sharedRedisUrl(),
        CACHE_KEY_PREFIX: prefix,
        EXPIRATION_JITTER_MAX_SECONDS: '300',
        REDIS_POOL_SIZE: '2',
      },
    })
    await healthy(h)
  })
  afterAll(async () => {
    await h.close()
    await deleteKeys(redis, prefix)
    redis.disconnect()
  })

  it('keeps counters at or below 2^52 so that INCRBY can never overflow', async () => {
    const key = `${prefix}basic_one_per_minute_ceiling_${String(minuteStart)}`
    // As if a year-long window had been flooded with the largest hits_addend.
    await redis.set(key, '4503599627370501', 'EX', 600) // 2^52 + 5
    const answer = await h.client.shouldRateLimit({
      domain: 'basic',
      descriptors: [{ ...one('one_per_minute', 'ceiling'), hitsAddend: { value: 4_294_967_295 } }],
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
        h.client.shouldRateLimit({ domain: 'basic', descriptors: [one('one_per_minute', value)] }),
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
})

describeDecisionTable(
  {
    name: 'single Redis',
    env: (keyPrefix) => ({
      BACKEND_TYPE: 'redis',
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_URL: sharedRedisUrl(),
      CACHE_KEY_PREFIX: keyPrefix,
      REDIS_POOL_SIZE: '2',
    }),
    read: async (key) => {
      const value = await tableRedis.get(key)
      return value === null ? undefined : Number(value)
    },
    write: async (key, value, ttlSeconds) => {
      await tableRedis.set(key, String(value), 'EX', ttlSeconds)
    },
    ttl: (key) => tableRedis.ttl(key),
    settle: () => Promise.resolve(),
    ready: healthy,
  },
  tablePrefix,
)

describe('Redis backend options', () => {
  it('skips Redis for keys in the local over-limit cache and stops counting with STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT', async () => {
    const prefix = redisKeyPrefix('ratelimit-local')
    const redis = new Redis(sharedRedisUrl())
    const h = await startService({
      files: basic,
      now: NOW,
      env: {
        BACKEND_TYPE: 'redis',
        REDIS_URL: sharedRedisUrl(),
        CACHE_KEY_PREFIX: prefix,
        LOCAL_CACHE_SIZE_IN_BYTES: '1000000',
        STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: 'true',
        REDIS_POOL_SIZE: '1',
      },
    })
    try {
      await healthy(h)
      const request = {
        domain: 'basic',
        descriptors: [one('one_per_minute', 'local'), one('key1_local', 'k')],
      }
      expect((await h.client.shouldRateLimit(request)).overallCode).toBe('OK')
      expect((await h.client.shouldRateLimit(request)).overallCode).toBe('OVER_LIMIT')
      expect((await h.client.shouldRateLimit(request)).overallCode).toBe('OVER_LIMIT')
      const key = `${prefix}basic_one_per_minute_local_${String(minuteStart)}`
      // The second call would exceed: only that key was incremented; the third never reached Redis.
      expect(await redis.get(key)).toBe('2')
      expect(await redis.get(`${prefix}basic_key1_local_k_${String(NOW_S)}`)).toBe('1')
      expect(
        h.stat('ratelimit.service.rate_limit.basic.one_per_minute.over_limit_with_local_cache'),
      ).toBe(1)
      expect(h.stat('ratelimit.localcache.hitCount')).toBe(1)
    } finally {
      await h.close()
      await deleteKeys(redis, prefix)
      redis.disconnect()
    }
  })

  it('routes SECOND limits to the per-second Redis (REDIS_PERSECOND)', async () => {
    const [main, perSecond] = await Promise.all([startRedisServer(), startRedisServer()])
    const h = await startService({
      files: basic,
      now: NOW,
      env: {
        BACKEND_TYPE: 'redis',
        KVSTORE_SOCKET_TYPE: 'tcp',
        KVSTORE_URL: main.hostPort,
        KVSTORE_PERSECOND: 'true',
        KVSTORE_PERSECOND_SOCKET_TYPE: 'tcp',
        KVSTORE_PERSECOND_URL: perSecond.hostPort,
      },
    })
    const a = new Redis(main.url)
    const b = new Redis(perSecond.url)
    try {
      await healthy(h)
      await h.client.shouldRateLimit({
        domain: 'basic',
        descriptors: [one('key1', 'x'), one('one_per_minute', 'y')],
      })
      expect(await a.keys('*')).toEqual([`basic_one_per_minute_y_${String(minuteStart)}`])
      expect(await b.keys('*')).toEqual([`basic_key1_x_${String(NOW_S)}`])
    } finally {
      a.disconnect()
      b.disconnect()
      await h.close()
      await Promise.all([main.stop(), perSecond.stop()])
    }
  })

  it('authenticates with REDIS_AUTH and connects over a unix socket', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ratelimit-redis-'))
    const socket = join(dir, 'redis.sock')
    const server = await startRedisServer({
      args: ['--requirepass', 'sekret', '--unixsocket', socket, '--unixsocketperm', '700'],
    })
    const h = await startService({
      files: basic,
      now: NOW,
      env: {
        BACKEND_TYPE: 'redis',
        REDIS_SOCKET_TYPE: 'unix',
        REDIS_URL: socket,
        REDIS_AUTH: 'sekret',
      },
    })
    const check = new Redis({ path: socket, password: 'sekret' })
    try {
      await healthy(h)
      expect(
        (await h.client.shouldRateLimit({ domain: 'basic', descriptors: [one('key1', 'unix')] }))
          .overallCode,
      ).toBe('OK')
      expect(await check.get(`basic_key1_unix_${String(NOW_S)}`)).toBe('1')
    } finally {
      check.disconnect()
      await h.close()
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('connects over TLS with a client certificate and a private CA', async () => {
    const dir = join(OWN_FIXTURES, 'tls')
    const tlsPort = await getFreePort()
    let server: TestRedisServer | undefined
    let h: Harness | undefined
    try {
      server = await startRedisServer({
        args: [
          '--tls-port',
          String(tlsPort),
          '--tls-cert-file',
          join(dir, 'server.crt'),
          '--tls-key-file',
          join(dir, 'server.key'),
          '--tls-ca-cert-file',
          join(dir, 'ca.crt'),
          '--tls-auth-clients',
          'yes',
        ],
      })
      h = await startService({
        files: basic,
        now: NOW,
        env: {
          BACKEND_TYPE: 'redis',
          REDIS_SOCKET_TYPE: 'tcp',
          REDIS_URL: `127.0.0.1:${String(tlsPort)}`,
          REDIS_TLS: 'true',
          REDIS_TLS_CACERT: join(dir, 'ca.crt'),
          REDIS_TLS_CLIENT_CERT: join(dir, 'client.crt'),
          REDIS_TLS_CLIENT_KEY: join(dir, 'client.key'),
          // The server certificate names "server", not 127.0.0.1: verify the chain only.
          REDIS_TLS_SKIP_HOSTNAME_VERIFICATION: 'true',
        },
      })
      await healthy(h)
      expect(
        (await h.client.shouldRateLimit({ domain: 'basic', descriptors: [one('key1', 'tls')] }))
          .overallCode,
      ).toBe('OK')
      const check = new Redis(server.url)
      expect(await check.get(`basic_key1_tls_${String(NOW_S)}`)).toBe('1')
      check.disconnect()
    } finally {
      await h?.close()
      await server?.stop()
    }
  })
})
