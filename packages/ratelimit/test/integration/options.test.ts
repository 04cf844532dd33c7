import { startRedisServer, waitFor } from '@gatehouse/testing'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect, constants } from 'node:http2'
import { createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { fixture } from '../fixtures.js'
import { startService } from '../harness.js'
import type { ConfigProvider } from '#internal/provider/provider.js'

const basic = { 'basic.yaml': fixture('integration/basic.yaml') }
const request = { domain: 'basic', descriptors: [{ entries: [{ key: 'key1', value: 'opt' }] }] }

describe('service options', () => {
  it('serves gRPC on a unix socket (GRPC_UDS)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ratelimit-uds-'))
    const h = await startService({ files: basic, env: { GRPC_UDS: join(dir, 'grpc.sock') } })
    try {
      expect(h.grpcAddress).toBe(`unix:${join(dir, 'grpc.sock')}`)
      expect((await h.client.shouldRateLimit(request)).overallCode).toBe('OK')
    } finally {
      await h.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('is unhealthy until a configuration with a domain is loaded (HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED)', async () => {
    const h = await startService({ env: { HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: 'true' } })
    try {
      expect((await h.get('/healthcheck')).status).toBe(500)
      expect((await h.get('/healthcheck')).text).toBe(
        'config: no configuration with at least one domain is loaded (HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED)\n',
      )
      expect(await h.client.check('ratelimit')).toBe('NOT_SERVING')
      h.writeConfig('basic.yaml', fixture('integration/basic.yaml'))
      await waitFor(async () => (await h.get('/healthcheck')).status === 200, {
        what: 'healthy after loading',
      })
      expect(await h.client.check('ratelimit')).toBe('SERVING')
    } finally {
      await h.close()
    }
  })

  it('listens before the first configuration with FORCE_START_WITHOUT_INITIAL_CONFIG', async () => {
    const silent: ConfigProvider = {
      start: () => new Promise(() => undefined),
      stop: () => Promise.resolve(),
    }
    const h = await startService({
      env: { FORCE_START_WITHOUT_INITIAL_CONFIG: 'true' },
      deps: { provider: silent },
    })
    try {
      await expect(h.client.shouldRateLimit(request)).rejects.toMatchObject({
        details: 'no rate limit configuration loaded',
      })
    } finally {
      await h.close()
    }
  })

  it('reports the backend unhealthy, and why, while no Redis connection is up (REDIS_HEALTH_CHECK_ACTIVE_CONNECTION)', async () => {
    const server = await startRedisServer()
    const h = await startService({
      files: basic,
      env: {
        BACKEND_TYPE: 'redis',
        REDIS_SOCKET_TYPE: 'tcp',
        REDIS_URL: server.hostPort,
        REDIS_POOL_SIZE: '1',
        REDIS_HEALTH_CHECK_ACTIVE_CONNECTION: 'true',
      },
    })
    try {
      await waitFor(() => h.app.health.healthy(), { what: 'healthy' })
      await server.kill()
      await waitFor(async () => (await h.get('/healthcheck')).status === 500, {
        what: 'unhealthy without Redis',
      })
      // The reason names the backend, its variable and the connection error.
      await waitFor(async () => (await h.get('/healthcheck')).text.includes('ECONNREFUSED'), {
        what: 'the connection error in the health answer',
      })
      expect((await h.get('/healthcheck')).text).toBe(
        `backend: the main redis at ${server.hostPort} (REDIS_URL) is not connected: connect ECONNREFUSED ${server.hostPort}\n`,
      )
      await server.restart()
      await waitFor(async () => (await h.get('/healthcheck')).status === 200, {
        what: 'healthy again',
        timeout: 15_000,
      })
    } finally {
      await h.close()
      await server.stop()
    }
  })

  it('sends stats to statsd over TCP with EXTRA_TAGS', async () => {
    let received = ''
    const sockets: Socket[] = []
    const statsd = createServer((socket) => {
      sockets.push(socket)
      socket.on('data', (chunk) => (received += chunk.toString()))
    })
    await new Promise<void>((resolve) => statsd.listen(0, '127.0.0.1', resolve))
    const { port } = statsd.address() as { port: number }
    const h = await startService({
      files: basic,
      env: {
        USE_STATSD: 'true',
        STATSD_HOST: '127.0.0.1',
        STATSD_PORT: String(port),
        STATS_FLUSH_INTERVAL: '50ms',
        EXTRA_TAGS: 'env:test',
      },
      deps: { statsSink: undefined },
    })
    try {
      await h.client.shouldRateLimit(request)
      await waitFor(
        () =>
          received.includes('ratelimit.service.rate_limit.basic.key1.total_hits.__env=test:1|c\n'),
        {
          what: () => `the total_hits line (got ${received})`,
        },
      )
      expect(received).toContain('ratelimit.service.config_load_success.__env=test:1|c\n')
      expect(received).toMatch(/ratelimit_server\.ShouldRateLimit\.response_time:[\d.]+\|ms\n/)
    } finally {
      await h.close()
      for (const s of sockets) s.destroy()
      await new Promise((resolve) => statsd.close(resolve))
    }
  })

  it('sends GOAWAY after GRPC_MAX_CONNECTION_AGE, and the client keeps deciding on a new connection', async () => {
    const h = await startService({
      files: basic,
      env: { GRPC_MAX_CONNECTION_AGE: '100ms', GRPC_MAX_CONNECTION_AGE_GRACE: '100ms' },
    })
    const session = connect(`http://${h.grpcAddress}`)
    session.on('error', () => undefined)
    try {
      expect((await h.client.shouldRateLimit(request)).overallCode).toBe('OK')
      // The server ends an aged connection with GOAWAY (±10 % of 100 ms), then closes it.
      const [code] = (await once(session, 'goaway')) as [number]
      expect(code).toBe(constants.NGHTTP2_NO_ERROR)
      await once(session, 'close')
      for (let i = 0; i < 3; i++) {
        expect((await h.client.shouldRateLimit(request)).overallCode).toBe('OK')
      }
    } finally {
      session.destroy()
      await h.close()
    }
  })
})
