import {
  getFreePort,
  redisKeyPrefix,
  sharedRedisUrl,
  startRedisServer,
  type TestRedisServer,
  waitFor,
} from '@gatehouse/testing'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import {
  INCREMENT_SCRIPT_SHA,
  SLIDING_WINDOW_SCRIPT_SHA,
  TOKEN_BUCKET_SCRIPT_SHA,
} from '#internal/redis/script.js'
import { FIXTURES } from '../fixtures.js'
import { startService, type Harness } from '../harness.js'
import { basic, healthy, minuteStart, NOW_S, one, TABLE_NOW as NOW } from './decision-table.js'
import { describeRedisDecisions } from './redis-decisions.js'

async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  const keys = await redis.keys(`${prefix}*`)
  if (keys.length > 0) await redis.del(...keys)
}

describeRedisDecisions('single Redis (REDIS_TYPE=single, the shared instance)', (prefix) => {
  const redis = new Redis(sharedRedisUrl())
  return Promise.resolve({
    env: { REDIS_SOCKET_TYPE: 'tcp', REDIS_URL: sharedRedisUrl() },
    check: redis,
    close: async () => {
      await deleteKeys(redis, prefix)
      redis.disconnect()
    },
  })
})

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

  it('runs each token bucket as one atomic script per turn (EVALSHA, reloaded after SCRIPT FLUSH), SECOND rules on the per-second Redis', async () => {
    const [main, perSecond] = await Promise.all([startRedisServer(), startRedisServer()])
    const rules = `domain: algos
descriptors:
  - key: bucket
    rate_limit: { unit: second, requests_per_unit: 2, algorithm: token_bucket, burst: 5 }
  - key: sliding
    rate_limit: { unit: second, requests_per_unit: 2, algorithm: sliding_window }
  - key: hourly
    rate_limit: { unit: hour, requests_per_unit: 1, algorithm: token_bucket }
`
    const h = await startService({
      files: { 'algos.yaml': rules },
      now: NOW,
      env: {
        BACKEND_TYPE: 'redis',
        REDIS_SOCKET_TYPE: 'tcp',
        REDIS_URL: main.hostPort,
        REDIS_PERSECOND: 'true',
        REDIS_PERSECOND_SOCKET_TYPE: 'tcp',
        REDIS_PERSECOND_URL: perSecond.hostPort,
        EXPIRATION_JITTER_MAX_SECONDS: '0',
      },
    })
    const a = new Redis(main.url)
    const b = new Redis(perSecond.url)
    const calls = async (command: string): Promise<number> => {
      const info = await b.info('commandstats')
      return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0)
    }
    const request = { domain: 'algos', descriptors: [one('bucket', 'x')] }
    try {
      await healthy(h)
      const answers = await Promise.all(
        [1, 2, 3, 4, 5, 6].map(() => h.client.shouldRateLimit(request)),
      )
      expect(answers.map((x) => x.overallCode).sort()).toEqual([
        'OK',
        'OK',
        'OK',
        'OK',
        'OK',
        'OVER_LIMIT',
      ])
      // One call for the six (the first met an empty script cache and was sent again as EVAL).
      expect([await calls('evalsha'), await calls('eval')]).toEqual([1, 1])
      expect(await b.hgetall('algos_bucket_x_tb')).toEqual({ t: '0', ts: String(NOW) })
      // An empty bucket of 5 refills in 2.5 s: it is kept that long.
      expect(await b.pttl('algos_bucket_x_tb')).toBeGreaterThan(2000)
      expect(await b.pttl('algos_bucket_x_tb')).toBeLessThanOrEqual(2500)

      await b.script('FLUSH')
      h.clock.advance(1000)
      const refilled = await h.client.shouldRateLimit(request)
      expect(refilled.statuses?.[0]?.limitRemaining).toBe(1)
      expect(await b.script('EXISTS', TOKEN_BUCKET_SCRIPT_SHA)).toEqual([1])

      await h.client.shouldRateLimit({
        domain: 'algos',
        descriptors: [one('sliding', 'x'), one('hourly', 'x')],
      })
      const second = Math.floor(h.clock.now() / 1000)
      // One script counts this second's counter and reads the previous one (creating nothing).
      expect(await b.keys('{swalgos_sliding_*')).toEqual([`{swalgos_sliding_x_}${String(second)}`])
      expect(await a.keys('*')).toEqual(['algos_hourly_x_tb'])
    } finally {
      a.disconnect()
      b.disconnect()
      await h.close()
      await Promise.all([main.stop(), perSecond.stop()])
    }
  })

  it('decides token buckets exactly as the memory backend (the script mirrors takeTokens)', async () => {
    const prefix = redisKeyPrefix('ratelimit-parity')
    const rules = `domain: parity
descriptors:
  - key: bucket
    rate_limit: { unit: minute, requests_per_unit: 7, algorithm: token_bucket, burst: 5 }
  - key: huge
    rate_limit: { unit: year, requests_per_unit: 1, algorithm: token_bucket, burst: 4294967295 }
`
    const start = (env: Record<string, string>): Promise<Harness> =>
      startService({ files: { 'parity.yaml': rules }, now: NOW, env })
    const redis = await start({
      BACKEND_TYPE: 'redis',
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_URL: sharedRedisUrl(),
      CACHE_KEY_PREFIX: prefix,
    })
    const memory = await start({ BACKEND_TYPE: 'memory' })
    const check = new Redis(sharedRedisUrl())
    try {
      await healthy(redis)
      const answers: [unknown, unknown][] = []
      // Odd steps and addends: fractional refills, refusals, a cost above the burst.
      for (let i = 0; i < 60; i++) {
        const step = (i * 7919) % 13_001
        redis.clock.advance(step)
        memory.clock.advance(step)
        const request = {
          domain: 'parity',
          descriptors: [{ ...one('bucket', 'p'), hitsAddend: { value: (i * 31) % 7 } }],
        }
        const [a, b] = await Promise.all([
          redis.client.shouldRateLimit(request),
          memory.client.shouldRateLimit(request),
        ])
        answers.push([a.statuses?.[0], b.statuses?.[0]])
      }
      // Extremes: the largest burst and hits_addend, a refill time beyond 2^52 ms.
      for (const hits of [4_294_967_295, 1, 4_294_967_295]) {
        const request = {
          domain: 'parity',
          descriptors: [{ ...one('huge', 'h'), hitsAddend: { value: hits } }],
        }
        const [a, b] = await Promise.all([
          redis.client.shouldRateLimit(request),
          memory.client.shouldRateLimit(request),
        ])
        answers.push([a.statuses?.[0], b.statuses?.[0]])
      }
      expect(answers.at(-3)?.[0]).toMatchObject({ code: 'OK' })
      expect(answers.at(-1)?.[0]).toMatchObject({ code: 'OVER_LIMIT' })
      for (const [a, b] of answers) expect(a).toEqual(b)
      const codes = new Set(answers.map(([a]) => (a as { code?: string } | undefined)?.code))
      expect(codes).toEqual(new Set(['OK', 'OVER_LIMIT']))
    } finally {
      await deleteKeys(check, prefix)
      check.disconnect()
      await Promise.all([redis.close(), memory.close()])
    }
  })

  it('counts with one EVALSHA per key and event-loop turn (same keys, TTLs and replies; one INCRBY of the summed hits) and reloads the script after SCRIPT FLUSH', async () => {
    const server = await startRedisServer()
    const h = await startService({
      files: basic,
      now: NOW,
      env: {
        BACKEND_TYPE: 'redis',
        REDIS_SOCKET_TYPE: 'tcp',
        REDIS_URL: server.hostPort,
        EXPIRATION_JITTER_MAX_SECONDS: '0',
      },
    })
    const check = new Redis(server.url)
    const calls = async (command: string): Promise<number> => {
      const info = await check.info('commandstats')
      return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0)
    }
    const request = { domain: 'another', descriptors: [one('key2', 'script')] }
    const key = `another_key2_script_${String(minuteStart)}`
    try {
      await healthy(h)
      expect((await h.client.shouldRateLimit(request)).statuses?.[0]?.limitRemaining).toBe(19)
      expect(await check.get(key)).toBe('1')
      // Without jitter the TTL is exactly the window, as upstream's EXPIRE sets it.
      expect(await check.ttl(key)).toBe(60)
      await check.expire(key, 5)
      expect((await h.client.shouldRateLimit(request)).statuses?.[0]?.limitRemaining).toBe(18)
      // EXPIRE on every hit: the TTL is refreshed, as upstream's.
      expect(await check.ttl(key)).toBe(60)
      // The first EVALSHA met an empty script cache (NOSCRIPT) and was sent again as EVAL.
      expect([await calls('evalsha'), await calls('eval')]).toEqual([2, 1])

      await check.script('FLUSH')
      const errorsBefore = h.stat('ratelimit.service.call.should_rate_limit.redis_error')
      const answers = await Promise.all([1, 2, 3].map(() => h.client.shouldRateLimit(request)))
      expect(answers.map((a) => a.statuses?.[0]?.limitRemaining).sort()).toEqual([15, 16, 17])
      expect(await check.get(key)).toBe('5')
      expect(h.stat('ratelimit.service.call.should_rate_limit.redis_error')).toBe(errorsBefore)
      // The refused EVALSHAs were sent again as EVAL, which cached the script again.
      expect(await calls('eval')).toBeGreaterThanOrEqual(2)
      expect(await check.script('EXISTS', INCREMENT_SCRIPT_SHA)).toEqual([1])
      // One call per key (never a multi-key call a sharding proxy would route by its first key).
      const before = await calls('evalsha')
      await h.client.shouldRateLimit({
        domain: 'another',
        descriptors: [one('key2', 'per-key'), one('key3', 'per-key')],
      })
      expect((await calls('evalsha')) - before).toBe(2)

      // One request, the same key three times (2, 3 and 4 hits) on a counter at 1 of 20: counted
      // in order, as three INCRBYs would (3, 6, 10), with one INCRBY of 9.
      const sumKey = `another_key2_sum_${String(minuteStart)}`
      const hits = (value: number) => ({ ...one('key2', 'sum'), hitsAddend: { value } })
      await h.client.shouldRateLimit({ domain: 'another', descriptors: [hits(1)] })
      const incrbys = await calls('incrby')
      const summed = await h.client.shouldRateLimit({
        domain: 'another',
        descriptors: [hits(2), hits(3), hits(4)],
      })
      expect(summed.statuses?.map((s) => s.limitRemaining ?? 0)).toEqual([17, 14, 10])
      expect(await check.get(sumKey)).toBe('10')
      expect((await calls('incrby')) - incrbys).toBe(1)
      expect(await check.ttl(sumKey)).toBe(60)
    } finally {
      check.disconnect()
      await h.close()
      await server.stop()
    }
  })

  it('decides a sliding window with one script call that counts this window and reads the previous one, two calls under an empty-tag prefix', async () => {
    const server = await startRedisServer()
    const rules = `domain: sw
descriptors:
  - key: k
    rate_limit: { unit: minute, requests_per_unit: 4, algorithm: sliding_window }
  - key: s
    rate_limit: { unit: minute, requests_per_unit: 100, algorithm: sliding_window }
`
    const start = (prefix: string): Promise<Harness> =>
      startService({
        files: { 'sw.yaml': rules },
        now: NOW,
        env: {
          BACKEND_TYPE: 'redis',
          REDIS_SOCKET_TYPE: 'tcp',
          REDIS_URL: server.hostPort,
          EXPIRATION_JITTER_MAX_SECONDS: '0',
          CACHE_KEY_PREFIX: prefix,
        },
      })
    const [tagged, emptyTag] = await Promise.all([start('t:'), start('e{}')])
    const check = new Redis(server.url)
    const calls = async (): Promise<Record<string, number>> => {
      const info = await check.info('commandstats')
      const out: Record<string, number> = {}
      for (const command of ['evalsha', 'eval', 'incrby', 'expire', 'get']) {
        out[command] = Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0)
      }
      return out
    }
    const delta = async (run: () => Promise<unknown>): Promise<Record<string, number>> => {
      const before = await calls()
      await run()
      const after = await calls()
      return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]))
    }
    const request = (value: string) => ({ domain: 'sw', descriptors: [one('k', value)] })
    try {
      await Promise.all([healthy(tagged), healthy(emptyTag)])
      const current = `t:{swsw_k_a_}${String(minuteStart)}`
      const previous = `t:{swsw_k_a_}${String(minuteStart - 60)}`
      // 10 s into the minute: floor(3 × 50/60) = 2 from the previous minute.
      await check.set(previous, '3', 'EX', 70)
      await tagged.client.shouldRateLimit(request('a')) // loads the script (NOSCRIPT, then EVAL)
      expect(await check.script('EXISTS', SLIDING_WINDOW_SCRIPT_SHA)).toEqual([1])
      let answer: Awaited<ReturnType<typeof tagged.client.shouldRateLimit>> | undefined
      expect(
        await delta(async () => {
          answer = await tagged.client.shouldRateLimit(request('a'))
        }),
      ).toEqual({ evalsha: 1, eval: 0, incrby: 1, expire: 1, get: 1 })
      // 3 of the previous minute weigh floor(3 × 50/60) = 2, + 2: nothing left (proto3 omits 0).
      expect(answer?.statuses?.[0]?.code).toBe('OK')
      expect(answer?.statuses?.[0]?.limitRemaining ?? 0).toBe(0)
      expect(await check.get(current)).toBe('2')
      // The current counter is the previous one during the next window: kept two units.
      expect(await check.ttl(current)).toBe(120)
      // The previous counter is read, not created and not touched.
      expect(await check.ttl(previous)).toBeLessThanOrEqual(70)
      expect(await check.exists(`t:{swsw_k_b_}${String(minuteStart - 60)}`)).toBe(0)
      await tagged.client.shouldRateLimit(request('b'))
      expect(await check.exists(`t:{swsw_k_b_}${String(minuteStart - 60)}`)).toBe(0)
      // Over the limit: refused, and the refused hit taken back.
      expect((await tagged.client.shouldRateLimit(request('a'))).overallCode).toBe('OVER_LIMIT')
      await waitFor(async () => (await check.get(current)) === '2')

      // One request, the same counter three times (2, 3 and 4 hits): counted in order, as three
      // INCRBYs would (2, 5, 9), with one INCRBY of 9 and one read of the previous counter.
      const hits = (value: number) => ({ ...one('s', 'sum'), hitsAddend: { value } })
      let summed: Awaited<ReturnType<typeof tagged.client.shouldRateLimit>> | undefined
      expect(
        await delta(async () => {
          summed = await tagged.client.shouldRateLimit({
            domain: 'sw',
            descriptors: [hits(2), hits(3), hits(4)],
          })
        }),
      ).toEqual({ evalsha: 1, eval: 0, incrby: 1, expire: 1, get: 1 })
      expect(summed?.statuses?.map((s) => s.limitRemaining ?? 0)).toEqual([98, 95, 91])
      expect(await check.get(`t:{swsw_s_sum_}${String(minuteStart)}`)).toBe('9')
      expect(await check.ttl(`t:{swsw_s_sum_}${String(minuteStart)}`)).toBe(120)

      // A previous counter that holds no integer fails the call as INCRBY would, without a crash.
      await check.set(`t:{swsw_k_c_}${String(minuteStart - 60)}`, 'not a number')
      const errorsBefore = tagged.stat('ratelimit.service.call.should_rate_limit.redis_error')
      await expect(tagged.client.shouldRateLimit(request('c'))).rejects.toThrow(/not an integer/)
      expect(tagged.stat('ratelimit.service.call.should_rate_limit.redis_error')).toBe(
        errorsBefore + 1,
      )

      // `e{}`: an empty hash tag, so Redis hashes each whole key: two single-key calls instead.
      await emptyTag.client.shouldRateLimit(request('a'))
      expect(
        await delta(async () => {
          answer = await emptyTag.client.shouldRateLimit(request('a'))
        }),
      ).toEqual({ evalsha: 2, eval: 0, incrby: 2, expire: 2, get: 0 })
      expect(answer?.statuses?.[0]).toMatchObject({ code: 'OK', limitRemaining: 2 })
      expect(await check.get(`e{}{swsw_k_a_}${String(minuteStart)}`)).toBe('2')
    } finally {
      check.disconnect()
      await Promise.all([tagged.close(), emptyTag.close()])
      await server.stop()
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
    const dir = join(FIXTURES, 'tls')
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
