import { startRedisServer, waitFor, type TestRedisServer } from '@gatehouse/testing'
import * as grpc from '@grpc/grpc-js'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { upstreamFixture } from '../fixtures.js'
import { startService, type Harness } from '../harness.js'

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
      files: { 'basic.yaml': upstreamFixture('integration/basic.yaml') },
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
