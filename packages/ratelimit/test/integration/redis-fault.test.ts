import { getFreePort, startRedisServer, waitFor, type TestRedisServer } from '@gatehouse/testing'
import * as grpc from '@grpc/grpc-js'
import { Redis } from 'ioredis'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../fixtures.js'
import { buildRateLimitApp } from '#internal/app.js'
import { RateLimitClient, serviceErrorCode } from '@gatehouse/ratelimit/client'
import { RedisCounterStore } from '#internal/redis/redis-store.js'
import { loadSettings } from '#internal/settings/settings.js'
import { NullSink } from '#internal/stats/sinks.js'
import { loopbackEnv, startService, type Harness } from '../harness.js'

const TOTAL = 'ratelimit_server.ShouldRateLimit.total_requests'

/**
 * Starts an own redis-server and the service on it (REDIS_TIMEOUT = `timeout`) before the
 * describe block's tests and stops both after; returns a getter for them.
 */
function ownRedisService(timeout: string): () => { server: TestRedisServer; h: Harness } {
  let server: TestRedisServer | undefined
  let h: Harness | undefined
  beforeAll(async () => {
    server = await startRedisServer()
    const started = await startService({
      files: { 'basic.yaml': fixture('integration/basic.yaml') },
      env: {
        BACKEND_TYPE: 'redis',
        REDIS_SOCKET_TYPE: 'tcp',
        REDIS_URL: server.hostPort,
        REDIS_TIMEOUT: timeout,
      },
    })
    h = started
    await waitFor(() => started.app.health.healthy(), { what: 'healthy' })
  })
  afterAll(async () => {
    await h?.close()
    await server?.stop()
  })
  return () => {
    if (server === undefined || h === undefined) throw new Error('not started')
    return { server, h }
  }
}

describe('Redis killed and restarted mid-run', () => {
  const own = ownRedisService('2s')
  let server: TestRedisServer
  let h: Harness
  const request = { domain: 'basic', descriptors: [{ entries: [{ key: 'key1', value: 'fault' }] }] }
  beforeAll(() => {
    ;({ server, h } = own())
  })

  it('fails calls like upstream while Redis is down and serves again once it is back', async () => {
    expect((await h.client.shouldRateLimit(request)).overallCode).toBe('OK')
    // A coalescing client, allowed to coalesce by its first answer.
    const coalescing = new RateLimitClient(h.grpcAddress, { timeoutMs: 5_000, coalesce: true })
    const decision = { ...request, hitsAddend: 1 }
    expect((await coalescing.shouldRateLimit(decision)).overallCode).toBe('OK')

    await server.kill()
    const failure = await waitFor(
      async () => {
        try {
          await h.client.shouldRateLimit(request)
          return false
        } catch (error) {
          return error as grpc.ServiceError
        }
      },
      { what: 'calls to fail while Redis is down' },
    )
    expect(failure.code).toBe(grpc.status.UNKNOWN)
    expect(failure.details).not.toBe('')
    expect(serviceErrorCode(failure)).toBe('ERR_BACKEND')
    // A backend failure fails the whole batch, with one call: some of it may have been counted.
    const before = h.stat(TOTAL)
    const batch = await Promise.allSettled([
      coalescing.shouldRateLimit(decision),
      coalescing.shouldRateLimit(decision),
    ])
    coalescing.close()
    expect(batch.map((r) => r.status)).toEqual(['rejected', 'rejected'])
    for (const result of batch) {
      expect(serviceErrorCode((result as PromiseRejectedResult).reason)).toBe('ERR_BACKEND')
    }
    expect(h.stat(TOTAL) - before).toBe(1)
    expect(h.stat('ratelimit.service.call.should_rate_limit.redis_error')).toBeGreaterThan(0)
    const http = await h.json(request)
    expect([http.status, http.text, http.headers.get('x-gatehouse-error-code')]).toEqual([
      400,
      'Bad Request\n',
      'ERR_BACKEND',
    ])

    await server.restart()
    const answer = await waitFor(
      async () => {
        try {
          return await h.client.shouldRateLimit(request)
        } catch {
          return undefined
        }
      },
      { what: 'calls to succeed after Redis restarted', timeout: 15_000 },
    )
    // The restarted server is empty: counting starts again.
    expect(answer.statuses?.[0]).toMatchObject({ code: 'OK', limitRemaining: 49 })
    expect((await h.json(request)).status).toBe(200)
  })
})

describe('Redis that stops answering (REDIS_TIMEOUT)', () => {
  const own = ownRedisService('300ms')
  let server: TestRedisServer
  let h: Harness
  const request = { domain: 'basic', descriptors: [{ entries: [{ key: 'key1', value: 'hang' }] }] }
  beforeAll(() => {
    ;({ server, h } = own())
  })

  it('fails the call after REDIS_TIMEOUT without an answer and serves again', async () => {
    expect((await h.client.shouldRateLimit(request)).overallCode).toBe('OK')
    const admin = new Redis(server.url)
    try {
      // Write commands (INCRBY) wait far longer than REDIS_TIMEOUT; the connection is not answered.
      await admin.call('CLIENT', 'PAUSE', '5000', 'WRITE')
      const error = await h.client.shouldRateLimit(request).then(
        () => undefined,
        (e: unknown) => e as grpc.ServiceError,
      )
      expect(error?.code).toBe(grpc.status.UNKNOWN)
      expect(h.stat('ratelimit.service.call.should_rate_limit.redis_error')).toBe(1)
      await admin.call('CLIENT', 'UNPAUSE')
    } finally {
      admin.disconnect()
    }
    const answer = await waitFor(
      async () => {
        try {
          return await h.client.shouldRateLimit(request)
        } catch {
          return undefined
        }
      },
      { what: 'calls to succeed after Redis answers again', timeout: 15_000 },
    )
    expect(answer.overallCode).toBe('OK')
  })
})

describe('Pool behaviour when no connection is ready, READONLY replies, and the start-up bound', () => {
  const request = { domain: 'basic', descriptors: [{ entries: [{ key: 'key1', value: 'pool' }] }] }
  const files = { 'basic.yaml': fixture('integration/basic.yaml') }
  const errorStat = 'ratelimit.service.call.should_rate_limit.redis_error'

  async function serviceOn(server: TestRedisServer, env: Record<string, string>) {
    const h = await startService({
      files,
      env: {
        BACKEND_TYPE: 'redis',
        REDIS_SOCKET_TYPE: 'tcp',
        REDIS_URL: server.hostPort,
        REDIS_POOL_SIZE: '1',
        ...env,
      },
    })
    await waitFor(() => h.app.health.healthy(), { what: 'healthy' })
    return h
  }

  const connections = (h: Harness): number => {
    const { store } = h.app
    if (!(store instanceof RedisCounterStore)) throw new Error('not the Redis store')
    return store.readyConnections()
  }

  it('ERROR: fails after REDIS_POOL_ON_EMPTY_WAIT_DURATION with a clear error, counted as a redis error', async () => {
    const server = await startRedisServer()
    const h = await serviceOn(server, {
      REDIS_POOL_ON_EMPTY_BEHAVIOR: 'ERROR',
      REDIS_POOL_ON_EMPTY_WAIT_DURATION: '200ms',
    })
    try {
      await server.stop()
      await waitFor(() => connections(h) === 0, { what: 'the connection to be lost' })
      const error = await h.client.shouldRateLimit(request).then(
        () => undefined,
        (e: unknown) => e as grpc.ServiceError,
      )
      expect([error?.code, error?.details]).toEqual([
        grpc.status.UNKNOWN,
        'no connection to the main redis became ready within 200 ms (REDIS_POOL_ON_EMPTY_BEHAVIOR=ERROR)',
      ])
      expect(h.stat(errorStat)).toBe(1)
      await server.restart()
      await waitFor(() => connections(h) === 1, { what: 'the connection to be back' })
      expect((await h.client.shouldRateLimit(request)).overallCode).toBe('OK')
    } finally {
      await h.close()
      await server.stop()
    }
  })

  it('WAIT: a call made while no connection is ready is served once one is', async () => {
    const server = await startRedisServer()
    const h = await serviceOn(server, {
      REDIS_POOL_ON_EMPTY_BEHAVIOR: 'WAIT',
      REDIS_TIMEOUT: '10s',
    })
    try {
      await server.stop()
      await waitFor(() => connections(h) === 0, { what: 'the connection to be lost' })
      const pending = h.client.shouldRateLimit(request)
      await server.restart()
      expect((await pending).overallCode).toBe('OK')
      expect(h.stat(errorStat)).toBe(0)
    } finally {
      await h.close()
      await server.stop()
    }
  })

  it('REDIS_CLOSE_CONNECTION_ON_READONLY_ERROR: a READONLY reply fails the call and closes the connection', async () => {
    const [replica, master] = await Promise.all([startRedisServer(), startRedisServer()])
    const keeps = await serviceOn(replica, {})
    const closes = await serviceOn(replica, { REDIS_CLOSE_CONNECTION_ON_READONLY_ERROR: 'true' })
    const admin = new Redis(replica.url)
    const received = async (): Promise<number> =>
      Number(/total_connections_received:(\d+)/.exec(await admin.info('stats'))?.[1])
    try {
      // As after a failover: the server the pool is connected to became a replica.
      await admin.replicaof(master.host, String(master.port))
      const before = await received()
      for (const h of [keeps, closes]) {
        const error = await h.client.shouldRateLimit(request).then(
          () => undefined,
          (e: unknown) => e as grpc.ServiceError,
        )
        expect(error?.details).toMatch(/^READONLY /)
        expect(h.stat(errorStat)).toBe(1)
        if (h === keeps) expect(await received()).toBe(before)
      }
      await waitFor(async () => (await received()) > before, {
        what: 'the connection that got READONLY to be closed and opened again',
      })
      await admin.replicaof('NO', 'ONE')
      expect((await closes.client.shouldRateLimit(request)).overallCode).toBe('OK')
    } finally {
      admin.disconnect()
      await Promise.all([keeps.close(), closes.close()])
      await Promise.all([replica.stop(), master.stop()])
    }
  })

  it('gives up at start after REDIS_STARTUP_MAX_ELAPSED_TIME, naming the instance', async () => {
    const root = mkdtempSync(join(tmpdir(), 'ratelimit-startup-'))
    const address = `127.0.0.1:${String(await getFreePort())}`
    const app = buildRateLimitApp(
      loadSettings({
        BACKEND_TYPE: 'redis',
        REDIS_SOCKET_TYPE: 'tcp',
        REDIS_URL: address,
        REDIS_STARTUP_INITIAL_INTERVAL: '50ms',
        REDIS_STARTUP_MAX_ELAPSED_TIME: '300ms',
        ...(await loopbackEnv(root)).env,
        FORCE_START_WITHOUT_INITIAL_CONFIG: 'true',
        USE_STATSD: 'false',
      }),
      { logger: pino({ level: 'silent' }), statsSink: new NullSink() },
    )
    try {
      await expect(app.listen()).rejects.toThrow(
        `REDIS_URL: the main redis at ${address} did not answer within 0.3 s (REDIS_STARTUP_MAX_ELAPSED_TIME): connect ECONNREFUSED ${address}`,
      )
      expect(app.httpServer.listening).toBe(false)
    } finally {
      await app.close(0)
      rmSync(root, { recursive: true, force: true })
    }
  })
})
