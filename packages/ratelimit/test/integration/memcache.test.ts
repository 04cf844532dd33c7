import { Resolver } from 'node:dns/promises'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect } from 'node:tls'
import { fileURLToPath } from 'node:url'
import {
  FakeClock,
  getFreePort,
  startDnsServer,
  startMemcached,
  startProcess,
  waitFor,
  type TestDnsServer,
  type TestMemcached,
} from '@gatehouse/testing'
import { MemcacheClient } from 'memcache-client'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RateLimitClient, serviceErrorCode } from '@gatehouse/ratelimit/client'
import { systemClock, type Every } from '#internal/clock.js'
import { MemcacheCounterStore } from '#internal/memcache/memcache-store.js'
import { pickServer } from '#internal/memcache/servers.js'
import { StatsStore } from '#internal/stats/store.js'
import { FIXTURES } from '../fixtures.js'
import { grpcError, startService, type Harness } from '../harness.js'
import {
  basic,
  describeDecisionTable,
  type DecisionBackend,
  healthy,
  minuteStart,
  NOW_S,
  one,
  TABLE_NOW,
} from './decision-table.js'
import { describeAlgorithmTable } from './algorithm-table.js'

const silent = pino({ level: 'silent' })
const MAIN = new URL('../../src/main.ts', import.meta.url)

let memcached: TestMemcached
let raw: MemcacheClient

/** A plain client on `server`, to look at what the service stored. */
function rawClient(server: TestMemcached): MemcacheClient {
  return new MemcacheClient({ server: server.hostPort, cmdTimeout: 2000 })
}

async function readCounter(client: MemcacheClient, key: string): Promise<number | undefined> {
  // memcache-client answers undefined for a missing key (its types do not say so).
  const result = (await client.get<string>(key)) as { value: string } | undefined
  return result === undefined ? undefined : Number(result.value)
}

function store(h: Harness): MemcacheCounterStore {
  const { store } = h.app
  if (!(store instanceof MemcacheCounterStore)) throw new Error('not the memcache backend')
  return store
}

const memcacheEnv = (server: TestMemcached, prefix = 'rl:') => ({
  BACKEND_TYPE: 'memcache',
  MEMCACHE_HOST_PORT: server.hostPort,
  CACHE_KEY_PREFIX: prefix,
})

beforeAll(async () => {
  memcached = await startMemcached()
  raw = rawClient(memcached)
})
afterAll(async () => {
  raw.shutdown()
  await memcached.stop()
})

const memcacheBackend: DecisionBackend = {
  name: 'memcache',
  env: (prefix) => memcacheEnv(memcached, prefix),
  read: (key) => readCounter(raw, key),
  write: async (key, value, ttlSeconds) => {
    await raw.set(key, String(value), { lifetime: ttlSeconds })
  },
  // Upstream's integration tests flush the background increments the same way.
  settle: (h) => store(h).flush(),
  ready: healthy,
}

describeDecisionTable(memcacheBackend, 'table:')
describeAlgorithmTable(memcacheBackend, 'algos:', { tokenBucket: false })

describe('memcache backend', () => {
  let h: Harness

  beforeAll(async () => {
    h = await startService({ files: basic, now: TABLE_NOW, env: memcacheEnv(memcached, 'mc:') })
    await healthy(h)
  })
  afterAll(async () => {
    await h.close()
  })

  it('decides on the value read, then increments in the background (incr, or add on a miss)', async () => {
    const key = `mc:another_key2_async_${String(minuteStart)}`
    const request = { domain: 'another', descriptors: [one('key2', 'async')] }
    const first = await h.client.shouldRateLimit(request)
    expect(first.statuses?.[0]?.limitRemaining).toBe(19)
    await store(h).flush()
    expect(await readCounter(raw, key)).toBe(1)
    expect(h.stat('ratelimit.memcache.increment.__code=miss')).toBeGreaterThanOrEqual(1)
    expect(h.stat('ratelimit.memcache.add.__code=success')).toBeGreaterThanOrEqual(1)
    const before = h.stat('ratelimit.memcache.increment.__code=success')
    await h.client.shouldRateLimit(request)
    await store(h).flush()
    expect(await readCounter(raw, key)).toBe(2)
    expect(h.stat('ratelimit.memcache.increment.__code=success')).toBe(before + 1)
    expect(h.stat('ratelimit.memcache.keys_found')).toBeGreaterThanOrEqual(1)
  })

  it('refuses, per descriptor, keys memcache cannot take: over 250 bytes or with whitespace', async () => {
    const errors = h.stat('ratelimit.service.call.should_rate_limit.redis_error')
    const long = await grpcError(
      h.client.shouldRateLimit({
        domain: 'basic',
        descriptors: [one('key1', 'fine'), one('one_per_minute', 'x'.repeat(240))],
      }),
    )
    expect(long.code).toBe(2)
    expect(long.details).toBe(
      "descriptor 1: the memcache cache key would be 275 bytes, over memcache's limit of 250; shorten the domain, the entries or CACHE_KEY_PREFIX",
    )
    const spaced = await h.json({
      domain: 'basic',
      descriptors: [one('one_per_minute', 'two words')],
    })
    expect(spaced.status).toBe(400)
    expect(spaced.headers.get('x-gatehouse-error')).toBe(
      'descriptor 0: the memcache backend cannot store a key with whitespace or control characters (found U+0020 in the domain or an entry)',
    )
    expect(spaced.headers.get('x-gatehouse-error-code')).toBe('ERR_BACKEND_KEY')
    expect(serviceErrorCode(long)).toBe('ERR_BACKEND_KEY')
    expect(h.stat('ratelimit.service.call.should_rate_limit.redis_error')).toBe(errors + 2)
    // Nothing of a refused request is counted, not even its acceptable descriptors.
    await store(h).flush()
    expect(await readCounter(raw, `mc:basic_key1_fine_${String(NOW_S)}`)).toBeUndefined()
    // A 250-byte key is accepted, and multi-byte characters are not whitespace.
    const fits = await h.client.shouldRateLimit({
      domain: 'basic',
      descriptors: [one('one_per_minute', `é${'x'.repeat(210)}`)],
    })
    expect(fits.overallCode).toBe('OK')
  })

  it('refuses only the coalescing caller whose key memcache cannot take', async () => {
    const client = new RateLimitClient(h.grpcAddress, { timeoutMs: 5_000, coalesce: true })
    try {
      const decision = (value: string) => ({
        domain: 'basic',
        descriptors: [one('key1', value)],
        hitsAddend: 1,
      })
      // The first answer allows coalescing.
      expect((await client.shouldRateLimit(decision('first'))).overallCode).toBe('OK')
      const calls = client.counts.calls
      const [good, spaced] = await Promise.allSettled([
        client.shouldRateLimit(decision('good')),
        client.shouldRateLimit(decision('two words')),
      ])
      // The merged call, refused before counting, then each caller alone.
      expect(client.counts.calls - calls).toBe(3)
      expect(good).toMatchObject({ status: 'fulfilled', value: { overallCode: 'OK' } })
      expect(spaced.status).toBe('rejected')
      expect(serviceErrorCode((spaced as PromiseRejectedResult).reason)).toBe('ERR_BACKEND_KEY')
    } finally {
      client.close()
    }
  })

  it('ignores STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT, as upstream does with memcache', async () => {
    const stop = await startService({
      files: basic,
      now: TABLE_NOW,
      env: { ...memcacheEnv(memcached, 'stop:'), STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: 'true' },
    })
    try {
      await healthy(stop)
      const request = {
        domain: 'basic',
        descriptors: [one('one_per_minute', 'stop'), one('key1', 'stop')],
      }
      for (let i = 0; i < 3; i++) {
        await stop.client.shouldRateLimit(request)
        await store(stop).flush()
      }
      expect(await readCounter(raw, `stop:basic_key1_stop_${String(NOW_S)}`)).toBe(3)
    } finally {
      await stop.close()
    }
  })

  it('answers a clear, counted error while memcached is down and recovers when it is back', async () => {
    const own = await startMemcached()
    const down = await startService({ files: basic, now: TABLE_NOW, env: memcacheEnv(own) })
    try {
      await healthy(down)
      const request = { domain: 'basic', descriptors: [one('one_per_minute', 'down')] }
      expect((await down.client.shouldRateLimit(request)).overallCode).toBe('OK')
      await store(down).flush()
      await own.stop()
      const errors = down.stat('ratelimit.service.call.should_rate_limit.redis_error')
      for (let i = 0; i < 3; i++) {
        const error = await grpcError(down.client.shouldRateLimit(request))
        expect(error.code).toBe(2)
        expect(error.details).toMatch(/^memcache: .*(ECONNREFUSED|socket|connect)/)
      }
      expect(down.stat('ratelimit.service.call.should_rate_limit.redis_error')).toBe(errors + 3)
      expect(down.stat('ratelimit.memcache.multiget.__code=error')).toBeGreaterThanOrEqual(3)
      await own.restart()
      // Back (empty, as a restarted memcached is): the first call reconnects and counts again.
      await waitFor(
        async () => {
          try {
            await down.client.shouldRateLimit(request)
            return true
          } catch {
            return false
          }
        },
        { what: 'the service to use memcached again' },
      )
      await store(down).flush()
      const check = rawClient(own)
      expect(await readCounter(check, `rl:basic_one_per_minute_down_${String(minuteStart)}`)).toBe(
        1,
      )
      check.shutdown()
    } finally {
      await down.close()
      await own.stop()
    }
  })
})

describe('memcache backend with one of two servers down', () => {
  it('starts, serves the keys of the server that answers, and fails only the others', async () => {
    const down = `127.0.0.1:${String(await getFreePort())}`
    const servers = [memcached.hostPort, down]
    const h = await startService({
      files: basic,
      now: TABLE_NOW,
      env: { BACKEND_TYPE: 'memcache', MEMCACHE_HOST_PORT: servers.join(',') },
    })
    try {
      await healthy(h)
      const keyOf = (v: string) => `basic_one_per_minute_${v}_${String(minuteStart)}`
      const values = Array.from({ length: 16 }, (_, i) => `half${String(i)}`)
      const up = values.find((v) => pickServer(servers, keyOf(v)) === memcached.hostPort)
      const gone = values.find((v) => pickServer(servers, keyOf(v)) === down)
      if (up === undefined || gone === undefined) throw new Error('no key for each server')
      const request = (v: string) => ({ domain: 'basic', descriptors: [one('one_per_minute', v)] })
      expect((await h.client.shouldRateLimit(request(up))).overallCode).toBe('OK')
      const error = await grpcError(h.client.shouldRateLimit(request(gone)))
      expect(error.details).toMatch(/^memcache: .*ECONNREFUSED/)
      await store(h).flush()
      expect(await readCounter(raw, keyOf(up))).toBe(1)
    } finally {
      await h.close()
    }
  })
})

describe('the gatehouse-ratelimit executable on memcache', () => {
  it('shares the counters of its two workers in memcached', async () => {
    const root = mkdtempSync(join(tmpdir(), 'ratelimit-mc-exe-'))
    mkdirSync(join(root, 'config'))
    writeFileSync(join(root, 'config', 'another.yaml'), basic['another.yaml'])
    const port = await getFreePort()
    const p = await startProcess(
      process.execPath,
      ['--import', 'tsx', '--conditions', 'dev-source', fileURLToPath(MAIN)],
      {
        env: {
          ...process.env,
          HOST: '127.0.0.1',
          PORT: String(port),
          GRPC_HOST: '127.0.0.1',
          GRPC_PORT: String(await getFreePort()),
          DEBUG_HOST: '127.0.0.1',
          DEBUG_PORT: String(await getFreePort()),
          RUNTIME_ROOT: root,
          RUNTIME_WATCH_ROOT: 'false',
          DISABLE_STATS: 'true',
          RATELIMIT_WORKERS: '2',
          ...memcacheEnv(memcached, 'exe:'),
        },
      },
    )
    try {
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${String(port)}/healthcheck`)).status === 200,
        { what: () => `the workers to listen (output: ${p.output()})`, timeout: 20_000 },
      )
      // A DAY limit of 20, filled by the first call: no window boundary in the way.
      const post = async (hitsAddend: number) =>
        (
          await fetch(`http://127.0.0.1:${String(port)}/json`, {
            method: 'POST',
            body: JSON.stringify({
              domain: 'another',
              descriptors: [one('key4', 'exe')],
              hitsAddend,
            }),
          })
        ).status
      expect(await post(20)).toBe(200)
      // Increments are asynchronous: wait until the first one is stored before the next calls.
      const key = `exe:another_key4_exe_${String(Math.floor(Date.now() / 86_400_000) * 86_400)}`
      await waitFor(async () => (await readCounter(raw, key)) === 20, { what: 'the increment' })
      const statuses = [await post(1), await post(1), await post(1)]
      expect(statuses, `statuses (output: ${p.output()})`).toEqual([429, 429, 429])
    } finally {
      await p.stop()
      rmSync(root, { recursive: true, force: true })
    }
  })
})

describe('memcache store', () => {
  const statsOf = () => new StatsStore()

  it('adds each new key once and increments after a lost race, across instances', async () => {
    const stores = [statsOf(), statsOf()].map(
      (stats) =>
        [
          stats,
          new MemcacheCounterStore({
            servers: [memcached.hostPort],
            maxIdleConns: 1,
            clock: systemClock,
            logger: silent,
            stats,
          }),
        ] as const,
    )
    const stat = (name: string): number =>
      stores.reduce(
        (sum, [stats]) => sum + (stats.snapshot().find((s) => s.name === name)?.value ?? 0),
        0,
      )
    try {
      const keys = Array.from({ length: 20 }, (_, i) => `race_${String(Date.now())}_${String(i)}`)
      const answers = await Promise.all(
        keys.flatMap((key) =>
          stores.map(([, mc]) =>
            mc.increment([{ key, addend: 2, expireSeconds: 60, perSecond: false }]),
          ),
        ),
      )
      expect(answers.every(([after]) => after === 2 || after === 4)).toBe(true)
      await Promise.all(stores.map(([, mc]) => mc.flush()))
      for (const key of keys) expect(await readCounter(raw, key)).toBe(4)
      // Exactly one instance created each key; every other miss ended in NOT_STORED and incr.
      expect(stat('ratelimit.memcache.add.__code=success')).toBe(keys.length)
      expect(stat('ratelimit.memcache.increment.__code=miss')).toBe(
        keys.length + stat('ratelimit.memcache.add.__code=not_stored'),
      )
      expect(stat('ratelimit.memcache.increment.__code=error')).toBe(0)
    } finally {
      await Promise.all(stores.map(([, mc]) => mc.close()))
    }
  })

  it('sends the reads of one turn as one get per server and one incr per key', async () => {
    const stats = statsOf()
    const mc = new MemcacheCounterStore({
      servers: [memcached.hostPort],
      clock: systemClock,
      logger: silent,
      stats,
    })
    try {
      const key = `turn_${String(Date.now())}`
      const op = { key, addend: 1, expireSeconds: 60, perSecond: false }
      await raw.set(key, '10', { lifetime: 60 })
      const before = await raw.cmd<{ STAT: string[][] }>('stats')
      const answers = await Promise.all(Array.from({ length: 10 }, () => mc.increment([op])))
      expect(answers).toEqual(Array.from({ length: 10 }, () => [11]))
      await mc.flush()
      const after = await raw.cmd<{ STAT: string[][] }>('stats')
      expect(await readCounter(raw, key)).toBe(20)
      const count = (s: { STAT: string[][] }, name: string): number =>
        Number(s.STAT.find(([n]) => n === name)?.[1])
      expect(count(after, 'cmd_get') - count(before, 'cmd_get')).toBe(1)
      expect(count(after, 'incr_hits') - count(before, 'incr_hits')).toBe(1)
    } finally {
      await mc.close()
    }
  })

  it('sends lifetimes beyond 30 days as an absolute time, so MONTH and YEAR counters live', async () => {
    const mc = new MemcacheCounterStore({
      servers: [memcached.hostPort],
      clock: systemClock,
      logger: silent,
      stats: statsOf(),
    })
    try {
      const key = `month_${String(Date.now())}`
      await mc.increment([{ key, addend: 1, expireSeconds: 2_592_000 + 120, perSecond: false }])
      await mc.flush()
      // Sent as a relative 30-days-plus, memcached would have expired it at once.
      expect(await readCounter(raw, key)).toBe(1)
    } finally {
      await mc.close()
    }
  })

  it('connects over TLS with a client certificate (MEMCACHE_TLS*)', async () => {
    const tls = join(FIXTURES, 'tls')
    const secure = await startMemcached({
      args: [
        '-Z',
        '-o',
        `ssl_chain_cert=${join(tls, 'server.crt')},ssl_key=${join(tls, 'server.key')},ssl_ca_cert=${join(tls, 'ca.crt')},ssl_verify_mode=2`,
      ],
      probe: (host, port) => tlsVersion(host, port, tls),
    })
    const h = await startService({
      files: basic,
      now: TABLE_NOW,
      env: {
        ...memcacheEnv(secure),
        MEMCACHE_TLS: 'true',
        MEMCACHE_TLS_CACERT: join(tls, 'ca.crt'),
        MEMCACHE_TLS_CLIENT_CERT: join(tls, 'client.crt'),
        MEMCACHE_TLS_CLIENT_KEY: join(tls, 'client.key'),
        // The certificate names "server", not 127.0.0.1: verify the chain only.
        MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION: 'true',
      },
    })
    try {
      await healthy(h)
      const request = { domain: 'basic', descriptors: [one('one_per_minute', 'tls')] }
      expect((await h.client.shouldRateLimit(request)).overallCode).toBe('OK')
      await store(h).flush()
      expect((await h.client.shouldRateLimit(request)).overallCode).toBe('OVER_LIMIT')
    } finally {
      await h.close()
      await secure.stop()
    }
  })
})

/** Resolves true once a TLS memcached answers `version` to a client with the test certificate. */
function tlsVersion(host: string, port: number, dir: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({
      host,
      port,
      ca: readFileSync(join(dir, 'ca.crt')),
      cert: readFileSync(join(dir, 'client.crt')),
      key: readFileSync(join(dir, 'client.key')),
      checkServerIdentity: () => undefined,
    })
    const done = (ok: boolean): void => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(1000, () => {
      done(false)
    })
    socket.once('error', () => {
      done(false)
    })
    socket.once('secureConnect', () => socket.write('version\r\n'))
    socket.once('data', (data: Buffer) => {
      done(data.toString().startsWith('VERSION'))
    })
  })
}

describe('MEMCACHE_SRV', () => {
  const name = '_memcache._tcp.ratelimit.test'
  let dns: TestDnsServer
  let a: TestMemcached
  let b: TestMemcached
  let resolver: Resolver

  beforeAll(async () => {
    ;[dns, a, b] = await Promise.all([startDnsServer(), startMemcached(), startMemcached()])
    resolver = new Resolver({ timeout: 1000, tries: 1 })
    resolver.setServers([dns.address])
  })
  afterAll(async () => {
    await Promise.all([dns.close(), a.stop(), b.stop()])
  })

  /** An `Every` whose task the test runs. */
  function manualEvery(): { every: Every; intervals: number[]; run(): void } {
    const tasks: (() => void)[] = []
    const intervals: number[] = []
    return {
      every: (ms, task) => {
        intervals.push(ms)
        tasks.push(task)
        return () => tasks.splice(tasks.indexOf(task), 1)
      },
      intervals,
      run: () => {
        for (const task of tasks) task()
      },
    }
  }

  it('uses the SRV targets, sorted, spreading keys as gomemcache does', async () => {
    dns.setSrv(name, [
      { target: '127.0.0.1', port: b.port },
      { target: '127.0.0.1', port: a.port },
    ])
    const h = await startService({
      files: basic,
      now: TABLE_NOW,
      env: { BACKEND_TYPE: 'memcache', MEMCACHE_SRV: name },
      deps: { resolver },
    })
    const clients = [rawClient(a), rawClient(b)]
    try {
      await healthy(h)
      const sorted = [a.hostPort, b.hostPort].sort()
      expect(store(h).servers()).toEqual(sorted)
      const values = ['s0', 's1', 's2', 's3', 's4', 's5']
      await h.client.shouldRateLimit({
        domain: 'basic',
        descriptors: values.map((v) => one('one_per_minute', v)),
      })
      await store(h).flush()
      const byServer = new Map([
        [a.hostPort, clients[0] as MemcacheClient],
        [b.hostPort, clients[1] as MemcacheClient],
      ])
      for (const v of values) {
        const key = `basic_one_per_minute_${v}_${String(minuteStart)}`
        const owner = pickServer(sorted, key)
        expect(await readCounter(byServer.get(owner) as MemcacheClient, key)).toBe(1)
        const other = sorted.find((s) => s !== owner) as string
        expect(await readCounter(byServer.get(other) as MemcacheClient, key)).toBeUndefined()
      }
    } finally {
      for (const c of clients) c.shutdown()
      await h.close()
    }
  })

  it('looks the record up again every MEMCACHE_SRV_REFRESH, keeping the list when a lookup fails', async () => {
    dns.setSrv(name, [{ target: '127.0.0.1', port: a.port }])
    const timer = manualEvery()
    const h = await startService({
      files: basic,
      now: TABLE_NOW,
      env: { BACKEND_TYPE: 'memcache', MEMCACHE_SRV: name, MEMCACHE_SRV_REFRESH: '30s' },
      deps: { resolver, every: timer.every },
    })
    const onB = rawClient(b)
    try {
      await healthy(h)
      expect(timer.intervals).toEqual([30_000])
      expect(store(h).servers()).toEqual([a.hostPort])

      dns.setSrv(name, undefined)
      const asked = dns.queries(name)
      timer.run()
      await store(h).refreshServers()
      expect(dns.queries(name)).toBeGreaterThan(asked)
      expect(store(h).servers()).toEqual([a.hostPort])

      dns.setSrv(name, [{ target: '127.0.0.1', port: b.port }])
      timer.run()
      await store(h).refreshServers()
      expect(store(h).servers()).toEqual([b.hostPort])
      await h.client.shouldRateLimit({
        domain: 'basic',
        descriptors: [one('one_per_minute', 'moved')],
      })
      await store(h).flush()
      expect(await readCounter(onB, `basic_one_per_minute_moved_${String(minuteStart)}`)).toBe(1)
    } finally {
      onB.shutdown()
      await h.close()
    }
  })

  it('does not start the service when the record cannot be looked up (upstream panics)', async () => {
    await expect(
      startService({
        files: basic,
        env: { BACKEND_TYPE: 'memcache', MEMCACHE_SRV: '_nothing._tcp.ratelimit.test' },
        deps: { resolver },
      }),
    ).rejects.toThrow('Unable to fetch servers from SRV _nothing._tcp.ratelimit.test: ')
  })

  it('is never ready when the record cannot be looked up at start (upstream panics)', async () => {
    const missing = '_nothing._tcp.ratelimit.test'
    const mc = new MemcacheCounterStore({
      servers: { name: missing, refreshMs: 0, resolver, every: manualEvery().every },
      clock: new FakeClock(),
      logger: silent,
      stats: new StatsStore(),
    })
    try {
      await expect(mc.ready()).rejects.toThrow(`Unable to fetch servers from SRV ${missing}: `)
      const op = { key: 'k', addend: 1, expireSeconds: 60, perSecond: false }
      await expect(mc.increment([op])).rejects.toThrow(`Unable to fetch servers from SRV`)
    } finally {
      await mc.close()
    }
  })
})
