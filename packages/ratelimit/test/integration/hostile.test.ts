/**
 * Hostile and broken input on every port: the service answers with a clear error and keeps
 * serving, and what a request may hold in memory is bounded.
 */
import * as grpc from '@grpc/grpc-js'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { upstreamFixture } from '../fixtures.js'
import { startService, type Harness } from '../harness.js'

/** A logger that keeps its JSON lines. */
function capturingLogger() {
  const lines: string[] = []
  const logger = pino(
    { level: 'error' },
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean))
        callback()
      },
    }),
  )
  return { logger, lines }
}

async function grpcError(promise: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await promise
  } catch (error) {
    return error as grpc.ServiceError
  }
  throw new Error('expected a gRPC error')
}

const basic = { 'basic.yaml': upstreamFixture('integration/basic.yaml') }

describe('last-resort guards around request handlers', () => {
  let h: Harness | undefined
  afterEach(async () => {
    vi.restoreAllMocks()
    await h?.close()
    h = undefined
  })

  it('answers 500 on HTTP and the debug port when a handler throws, logs it, and keeps serving', async () => {
    const { logger, lines } = capturingLogger()
    h = await startService({ files: basic, deps: { logger } })
    const broken = vi.spyOn(h.app.health, 'healthy').mockImplementation(() => {
      throw new Error('health exploded')
    })
    const health = await h.get('/healthcheck')
    expect(health.status).toBe(500)
    expect(health.headers.get('x-gatehouse-error-code')).toBe('ERR_INTERNAL')
    expect(health.text).toBe('Internal Server Error\n')
    vi.spyOn(h.app.stats, 'snapshot').mockImplementation(() => {
      throw new Error('stats exploded')
    })
    expect((await h.get('/stats', 'debug')).status).toBe(500)
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual([
      'http: request failed',
      'debug: request failed',
    ])
    expect(lines.join('\n')).toContain('health exploded')
    broken.mockRestore()
    expect((await h.get('/healthcheck')).status).toBe(200)
    expect((await h.get('/rlconfig', 'debug')).status).toBe(200)
  })

  it.each(['native', 'grpc-js'])(
    'answers INTERNAL on the %s gRPC server when a handler throws, logs it, and keeps serving',
    async (implementation) => {
      const { logger, lines } = capturingLogger()
      h = await startService({
        files: basic,
        env: { GRPC_SERVER_IMPLEMENTATION: implementation },
        deps: { logger },
      })
      const harness = h
      vi.spyOn(harness.app.health, 'healthy').mockImplementation(() => {
        throw new Error('health exploded')
      })
      const failed = await grpcError(harness.client.check('ratelimit'))
      expect(failed.code).toBe(grpc.status.INTERNAL)
      expect(failed.details).toBe('internal error')
      vi.spyOn(harness.app.service, 'shouldRateLimit').mockImplementation(() => {
        throw new Error('service exploded')
      })
      const request = { domain: 'basic', descriptors: [{ entries: [{ key: 'key1', value: 'v' }] }] }
      const call = await grpcError(harness.client.shouldRateLimit(request))
      expect(call.code).toBe(grpc.status.INTERNAL)
      expect(call.details).toBe('internal error')
      expect(lines.join('\n')).toContain('health exploded')
      expect(lines.join('\n')).toContain('service exploded')
      vi.restoreAllMocks()
      expect(await harness.client.check('ratelimit')).toBe('SERVING')
      expect((await harness.client.shouldRateLimit(request)).overallCode).toBe('OK')
    },
  )
})

/** Sends raw request bytes to ShouldRateLimit; resolves with the error (null on success). */
function rawShouldRateLimit(address: string, bytes: Buffer): Promise<grpc.ServiceError | null> {
  const Client = grpc.makeGenericClientConstructor({}, 'Raw')
  const raw = new Client(address, grpc.credentials.createInsecure())
  return new Promise((resolve) => {
    raw.makeUnaryRequest(
      '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
      (b: Buffer) => b,
      (b: Buffer) => b,
      bytes,
      (error) => {
        raw.close()
        resolve(error)
      },
    )
  })
}

describe.each(['native', 'grpc-js'])(
  'hostile request bytes on the %s gRPC server',
  (implementation) => {
    let h: Harness
    beforeAll(async () => {
      h = await startService({ files: basic, env: { GRPC_SERVER_IMPLEMENTATION: implementation } })
    })
    afterAll(async () => {
      await h.close()
    })

    it('rejects a nested length that runs past its enclosing message, as Go does', async () => {
      // descriptor { entry { key: claims 16450 bytes, the entry holds 0 } } + 16450 bytes of padding
      const bytes = Buffer.concat([
        Buffer.from([0x12, 0x06, 0x0a, 0x04, 0x0a, 0xc2, 0x80, 0x01]),
        Buffer.from([0x7a, 0xc2, 0x80, 0x01]),
        Buffer.alloc(16_450, 'a'),
      ])
      const error = await rawShouldRateLimit(h.grpcAddress, bytes)
      expect(error?.code).toBe(grpc.status.INTERNAL)
      expect(error?.details).toBe(
        'grpc: error unmarshalling request: proto: cannot parse invalid wire-format data',
      )
    })
  },
)
