/**
 * Hostile and broken input on every port: the service answers with a clear error and keeps
 * serving, and what a request may hold in memory is bounded.
 */
import * as grpc from '@grpc/grpc-js'
import { startRedisServer, waitFor, type TestRedisServer } from '@gatehouse/testing'
import {
  connect as connectHttp2,
  type ClientHttp2Session,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http2'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { fixture } from '../fixtures.js'
import { grpcError, rawShouldRateLimit, startService, type Harness } from '../harness.js'

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

const basic = { 'basic.yaml': fixture('integration/basic.yaml') }

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

  it('answers 500 on /json when the decision throws or rejects unexpectedly, logs it, and keeps serving', async () => {
    const { logger, lines } = capturingLogger()
    h = await startService({ files: basic, deps: { logger } })
    const request = { domain: 'basic', descriptors: [{ entries: [{ key: 'key1', value: 'v' }] }] }
    const service = vi.spyOn(h.app.service, 'shouldRateLimit')
    service.mockImplementationOnce(() => {
      throw new Error('decision threw')
    })
    service.mockImplementationOnce(() => Promise.reject(new Error('decision rejected')))
    for (const expected of ['decision threw', 'decision rejected']) {
      const answer = await h.json(request)
      expect(answer.status).toBe(500)
      expect(answer.headers.get('x-gatehouse-error-code')).toBe('ERR_INTERNAL')
      expect(answer.text).toBe('Internal Server Error\n')
      expect(lines.at(-1)).toContain(expected)
    }
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual([
      'http: request failed',
      'http: request failed',
    ])
    expect((await h.json(request)).status).toBe(200)
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

describe('caps on what one request may carry', () => {
  let h: Harness
  const env = {
    MAX_DESCRIPTORS_PER_REQUEST: '3',
    MAX_ENTRIES_PER_DESCRIPTOR: '2',
    MAX_DESCRIPTOR_ENTRY_BYTES: '8',
  }
  const entry = (key: string, value: string) => ({ key, value })
  const request = (...descriptors: { key: string; value: string }[][]) => ({
    domain: 'basic',
    descriptors: descriptors.map((entries) => ({ entries })),
  })
  const atTheCaps = request(
    [entry('key1', '12345678'), entry('k', 'v')],
    [entry('key1', 'a')],
    [entry('key1', 'b')],
  )
  const over: [string, object, string][] = [
    [
      'descriptors',
      request([entry('key1', 'a')], [entry('key1', 'b')], [entry('key1', 'c')], [entry('a', 'd')]),
      'rate limit request has more than 3 descriptors (MAX_DESCRIPTORS_PER_REQUEST=3)',
    ],
    [
      'entries',
      request([entry('key1', 'a')], [entry('a', 'b'), entry('c', 'd'), entry('e', 'f')]),
      'descriptor 1 has more than 2 entries (MAX_ENTRIES_PER_DESCRIPTOR=2)',
    ],
    [
      'value bytes',
      request([entry('key1', 'é'.repeat(5))]),
      'descriptor 0, entry 0: value is longer than 8 bytes (MAX_DESCRIPTOR_ENTRY_BYTES=8)',
    ],
    [
      'key bytes',
      request([entry('key1', 'a')], [entry('a', 'b'), entry('123456789', 'c')]),
      'descriptor 1, entry 1: key is longer than 8 bytes (MAX_DESCRIPTOR_ENTRY_BYTES=8)',
    ],
  ]

  describe.each(['native', 'grpc-js'])('on the %s gRPC server', (implementation) => {
    beforeAll(async () => {
      h = await startService({
        files: basic,
        env: { ...env, GRPC_SERVER_IMPLEMENTATION: implementation },
      })
    })
    afterAll(async () => {
      await h.close()
    })

    it('decides requests at the caps', async () => {
      expect((await h.client.shouldRateLimit(atTheCaps)).statuses).toHaveLength(3)
    })

    it.each(over)(
      'answers UNKNOWN with a clear message beyond the %s cap, counted as service_error',
      async (_what, body, message) => {
        const before = h.stat('ratelimit.service.call.should_rate_limit.service_error')
        const error = await grpcError(h.client.shouldRateLimit(body))
        expect(error.code).toBe(grpc.status.UNKNOWN)
        expect(error.details).toBe(message)
        expect(h.stat('ratelimit.service.call.should_rate_limit.service_error')).toBe(before + 1)
      },
    )
  })

  describe('on HTTP /json', () => {
    beforeAll(async () => {
      h = await startService({ files: basic, env })
    })
    afterAll(async () => {
      await h.close()
    })

    it('decides requests at the caps', async () => {
      expect((await h.json(atTheCaps)).status).toBe(200)
    })

    it.each(over)(
      'answers 400 with a clear message beyond the %s cap, counted as service_error',
      async (_what, body, message) => {
        const before = h.stat('ratelimit.service.call.should_rate_limit.service_error')
        const answer = await h.json(body)
        expect(answer.status).toBe(400)
        expect(answer.text).toBe('Bad Request\n')
        expect(answer.headers.get('x-gatehouse-error-code')).toBe('ERR_REQUEST_TOO_LARGE')
        expect(answer.headers.get('x-gatehouse-error')).toBe(message)
        expect(h.stat('ratelimit.service.call.should_rate_limit.service_error')).toBe(before + 1)
      },
    )
  })
})

describe('hits_addend bound (uint32, as the request field)', () => {
  const addend = (value: number | string) => ({
    domain: 'basic',
    descriptors: [{ entries: [{ key: 'key1', value: 'addend' }], hitsAddend: { value } }],
  })
  const message = 'descriptor 0: hits_addend must not exceed 4294967295'

  it.each(['native', 'grpc-js'])(
    'accepts 4294967295 and refuses more on the %s gRPC server, counted as service_error',
    async (implementation) => {
      const h = await startService({
        files: basic,
        env: { GRPC_SERVER_IMPLEMENTATION: implementation },
      })
      try {
        expect((await h.client.shouldRateLimit(addend(4_294_967_295))).overallCode).toBe(
          'OVER_LIMIT',
        )
        for (const value of [4_294_967_296, 2 ** 53, '18446744073709551615']) {
          expect(await grpcError(h.client.shouldRateLimit(addend(value)))).toMatchObject({
            code: grpc.status.UNKNOWN,
            details: message,
          })
        }
        expect(h.stat('ratelimit.service.call.should_rate_limit.service_error')).toBe(3)
      } finally {
        await h.close()
      }
    },
  )

  it('refuses more than 4294967295 on /json with 400, up to the largest uint64', async () => {
    const h = await startService({ files: basic })
    try {
      for (const value of ['4294967296', '18446744073709551615']) {
        const answer = await h.json(
          `{"domain":"basic","descriptors":[{"entries":[{"key":"key1","value":"a"}],"hitsAddend":"${value}"}]}`,
        )
        expect(answer.status).toBe(400)
        expect(answer.headers.get('x-gatehouse-error-code')).toBe('ERR_SERVICE')
        expect(answer.headers.get('x-gatehouse-error')).toBe(message)
      }
    } finally {
      await h.close()
    }
  })
})

describe('the memory backend key cap (MEMORY_MAX_KEYS)', () => {
  it('keeps at most MEMORY_MAX_KEYS counters, evicting the least recently used, and counts evictions', async () => {
    const h = await startService({ files: basic, env: { MEMORY_MAX_KEYS: '2' } })
    try {
      const hit = async (value: string) =>
        (
          await h.client.shouldRateLimit({
            domain: 'basic',
            descriptors: [{ entries: [{ key: 'one_per_minute', value }] }],
          })
        ).overallCode
      expect(await hit('a')).toBe('OK')
      expect(await hit('b')).toBe('OK')
      expect(await hit('a')).toBe('OVER_LIMIT')
      expect(await hit('c')).toBe('OK') // evicts b, the least recently used
      expect(h.stat('ratelimit.memory.evicted_keys')).toBe(1)
      expect(await hit('a')).toBe('OVER_LIMIT')
      expect(await hit('b')).toBe('OK') // its counter was evicted
      expect((await h.get('/stats', 'debug')).text).toContain('ratelimit.memory.evicted_keys: 2\n')
    } finally {
      await h.close()
    }
  })
})

describe('stats made from request data', () => {
  it("counts the first STATS_MAX_UNKNOWN_DOMAINS unknown domains under upstream's names, the rest under one name", async () => {
    const h = await startService({ files: basic, env: { STATS_MAX_UNKNOWN_DOMAINS: '2' } })
    try {
      for (const domain of ['nowhere', 'elsewhere', 'x'.repeat(100), 'nowhere', 'y']) {
        await h.client.shouldRateLimit({
          domain,
          descriptors: [{ entries: [{ key: 'key1', value: 'v' }] }],
        })
      }
      const names = h.app.stats.snapshot().map((s) => s.name)
      expect(names.filter((n) => n.includes('domain_not_found')).sort()).toEqual([
        'ratelimit.service.rate_limit.domain_not_found',
        'ratelimit.service.rate_limit.elsewhere.domain_not_found',
        'ratelimit.service.rate_limit.nowhere.domain_not_found',
      ])
      expect(h.stat('ratelimit.service.rate_limit.nowhere.domain_not_found')).toBe(2)
      expect(h.stat('ratelimit.service.rate_limit.domain_not_found')).toBe(2)
    } finally {
      await h.close()
    }
  })

  it('keeps at most STATS_MAX_DYNAMIC_KEYS stat keys made from request values, then one per domain', async () => {
    const h = await startService({ files: basic, env: { STATS_MAX_DYNAMIC_KEYS: '2' } })
    try {
      const override = (value: string) =>
        h.client.shouldRateLimit({
          domain: 'basic',
          descriptors: [
            {
              entries: [{ key: 'user', value }],
              limit: { requestsPerUnit: 10, unit: 'MINUTE' },
            },
          ],
        })
      for (let i = 0; i < 50; i++) await override(`u${String(i)}`)
      await override('u0')
      await override('y'.repeat(300)) // too long for its own stats, even with room
      const totals = h.app.stats
        .snapshot()
        .filter((s) => s.name.endsWith('.total_hits') && s.value > 0)
        .map((s) => [s.name, s.value])
      expect(totals).toEqual([
        ['ratelimit.service.rate_limit.basic.stats_overflow.total_hits', 49],
        ['ratelimit.service.rate_limit.basic.user_u0.total_hits', 2],
        ['ratelimit.service.rate_limit.basic.user_u1.total_hits', 1],
      ])
    } finally {
      await h.close()
    }
  })

  it('cannot inject statsd lines through a descriptor value', async () => {
    let received = ''
    const sockets: Socket[] = []
    const statsd = createServer((socket) => {
      sockets.push(socket)
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')))
    })
    await new Promise<void>((resolve) => statsd.listen(0, '127.0.0.1', resolve))
    const { port } = statsd.address() as AddressInfo
    const h = await startService({
      files: basic,
      env: { USE_STATSD: 'true', STATSD_HOST: '127.0.0.1', STATSD_PORT: String(port) },
      deps: { statsSink: undefined },
    })
    try {
      await h.client.shouldRateLimit({
        domain: 'basic',
        descriptors: [
          {
            entries: [{ key: 'user', value: 'x\nratelimit.injected:1000|c\r\nmore' }],
            limit: { requestsPerUnit: 10, unit: 'MINUTE' },
          },
        ],
      })
      h.app.flushStats()
      await waitFor(() => received.includes('.within_limit:1|c\n'), { what: 'the flush' })
      const lines = received.split('\n').filter(Boolean)
      expect(lines.every((line) => /^[^:|\s]+:[\d.]+\|(c|g|ms)(\|@[\d.]+)?$/.test(line))).toBe(true)
      expect(lines).toContain(
        'ratelimit.service.rate_limit.basic.user_x_ratelimit.injected_1000_c__more.within_limit:1|c',
      )
    } finally {
      await h.close()
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => statsd.close(resolve))
    }
  })
})

/** What a raw HTTP/2 gRPC call got back. */
interface RawAnswer {
  /** `grpc-status` from the trailers (or a trailers-only response). */
  readonly status: string | undefined
  /** `grpc-message`, percent-decoded. */
  readonly message: string | undefined
}

/**
 * A gRPC call made frame by frame with node:http2, so that a test can send an incomplete
 * message, a `grpc-timeout` the client does not enforce itself, or nothing at all.
 */
function rawGrpcCall(
  session: ClientHttp2Session,
  path: string,
  options: {
    headers?: OutgoingHttpHeaders
    body?: Buffer
    end?: boolean
    /** Resolve only once the stream is closed (with `end: false`: once the server resets it). */
    untilClosed?: boolean
  } = {},
): Promise<RawAnswer> {
  const stream = session.request({
    ':method': 'POST',
    ':path': path,
    'content-type': 'application/grpc',
    te: 'trailers',
    ...options.headers,
  })
  if (options.body !== undefined) stream.write(options.body)
  if (options.end !== false) stream.end()
  return new Promise((resolve) => {
    let status: string | undefined
    let message: string | undefined
    const take = (headers: IncomingHttpHeaders): void => {
      if (headers['grpc-status'] !== undefined) status = String(headers['grpc-status'])
      if (headers['grpc-message'] !== undefined) {
        message = decodeURIComponent(String(headers['grpc-message']))
      }
    }
    stream.on('response', take)
    stream.on('trailers', take)
    stream.on('error', () => undefined)
    stream.resume()
    // The server's end of the stream (our side may still be open), or a reset.
    const finish = (): void => {
      resolve({ status, message })
    }
    if (options.untilClosed !== true) stream.on('end', finish)
    stream.on('close', finish)
  })
}

/** A gRPC length prefix announcing `length` bytes. */
function messagePrefix(length: number): Buffer {
  const prefix = Buffer.alloc(5)
  prefix.writeUInt32BE(length, 1)
  return prefix
}

const SHOULD_RATE_LIMIT = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit'

describe.each(['native', 'grpc-js'])('gRPC server limits on the %s server', (implementation) => {
  let h: Harness
  let session: ClientHttp2Session
  beforeAll(async () => {
    h = await startService({
      files: basic,
      env: {
        GRPC_SERVER_IMPLEMENTATION: implementation,
        GRPC_MAX_CALL_DURATION: '300ms',
        GRPC_MAX_CONCURRENT_STREAMS: '5',
      },
    })
  })
  beforeEach(() => {
    session = connectHttp2(`http://${h.grpcAddress}`)
    session.on('error', () => undefined)
  })
  afterEach(() => {
    session.destroy()
  })
  afterAll(async () => {
    await h.close()
  })

  it('ends calls whose request never completes at GRPC_MAX_CALL_DURATION with DEADLINE_EXCEEDED', async () => {
    // 1 MiB of a 4 MiB message, then nothing: each such call held its bytes for ever.
    const partial = Buffer.concat([messagePrefix(4 * 1024 * 1024 - 16), Buffer.alloc(1 << 20)])
    // The server also resets each stream (NO_ERROR), so the client stops sending and what it
    // sent is released: these resolve only once the server closed the streams.
    const calls = Array.from({ length: 4 }, () =>
      rawGrpcCall(session, SHOULD_RATE_LIMIT, { body: partial, end: false, untilClosed: true }),
    )
    for (const answer of await Promise.all(calls)) {
      expect(answer).toEqual({
        status: String(grpc.status.DEADLINE_EXCEEDED),
        message: 'Deadline exceeded',
      })
    }
    // The same through a grpc-js client that opens a call and never sends its message.
    const Client = grpc.makeGenericClientConstructor({}, 'Raw')
    const raw = new Client(h.grpcAddress, grpc.credentials.createInsecure())
    const error = await new Promise<grpc.ServiceError>((resolve) => {
      raw.makeClientStreamRequest(
        SHOULD_RATE_LIMIT,
        (b: Buffer) => b,
        (b: Buffer) => b,
        (e) => {
          if (e !== null) resolve(e)
        },
      )
    })
    raw.close()
    expect(error).toMatchObject({
      code: grpc.status.DEADLINE_EXCEEDED,
      details: 'Deadline exceeded',
    })
    // Complete calls are unaffected.
    expect(
      (
        await h.client.shouldRateLimit({
          domain: 'basic',
          descriptors: [{ entries: [{ key: 'key1', value: 'v' }] }],
        })
      ).overallCode,
    ).toBe('OK')
  })

  it('honours a shorter grpc-timeout from the client', async () => {
    const answer = await rawGrpcCall(session, SHOULD_RATE_LIMIT, {
      headers: { 'grpc-timeout': '50m' },
      body: messagePrefix(100),
      end: false,
      untilClosed: true,
    })
    expect(answer).toEqual({
      status: String(grpc.status.DEADLINE_EXCEEDED),
      message: 'Deadline exceeded',
    })
  })

  it('refuses an invalid grpc-timeout with INTERNAL, as grpc-js does', async () => {
    const answer = await rawGrpcCall(session, '/grpc.health.v1.Health/Check', {
      headers: { 'grpc-timeout': 'soon' },
      body: messagePrefix(0),
    })
    expect(answer).toEqual({
      status: String(grpc.status.INTERNAL),
      message: 'Invalid grpc-timeout value "soon"',
    })
  })

  it('advertises GRPC_MAX_CONCURRENT_STREAMS', async () => {
    // The server's SETTINGS frame comes before any answer.
    await rawGrpcCall(session, '/grpc.health.v1.Health/Check', { body: messagePrefix(0) })
    expect(session.remoteSettings.maxConcurrentStreams).toBe(5)
  })
})

describe.each(['native', 'grpc-js'])('idle connections on the %s gRPC server', (implementation) => {
  it('sends GOAWAY once a connection has had no call for GRPC_MAX_CONNECTION_IDLE', async () => {
    const h = await startService({
      files: basic,
      env: { GRPC_SERVER_IMPLEMENTATION: implementation, GRPC_MAX_CONNECTION_IDLE: '200ms' },
    })
    const session = connectHttp2(`http://${h.grpcAddress}`)
    session.on('error', () => undefined)
    try {
      const goaway = new Promise<void>((resolve) => {
        session.once('goaway', () => {
          resolve()
        })
      })
      const answer = await rawGrpcCall(session, '/grpc.health.v1.Health/Check', {
        body: messagePrefix(0),
      })
      expect(answer.status).toBe('0')
      await goaway
    } finally {
      session.destroy()
      await h.close()
    }
  })
})

describe.each(['native', 'grpc-js'])(
  'a backend that stops answering, on the %s gRPC server',
  (implementation) => {
    let server: TestRedisServer
    let h: Harness
    beforeAll(async () => {
      server = await startRedisServer()
      h = await startService({
        files: basic,
        env: {
          GRPC_SERVER_IMPLEMENTATION: implementation,
          GRPC_MAX_CALL_DURATION: '300ms',
          BACKEND_TYPE: 'redis',
          REDIS_SOCKET_TYPE: 'tcp',
          REDIS_URL: server.hostPort,
          REDIS_TIMEOUT: '30s',
        },
      })
      await waitFor(() => h.app.health.healthy(), { what: 'healthy' })
    })
    afterAll(async () => {
      await h.close()
      await server.stop()
    })

    it('ends the call at GRPC_MAX_CALL_DURATION with DEADLINE_EXCEEDED', async () => {
      const admin = new Redis(server.url)
      try {
        await admin.call('CLIENT', 'PAUSE', '3000', 'WRITE')
        const error = await grpcError(
          h.client.shouldRateLimit({
            domain: 'basic',
            descriptors: [{ entries: [{ key: 'key1', value: 'paused' }] }],
          }),
        )
        expect(error).toMatchObject({
          code: grpc.status.DEADLINE_EXCEEDED,
          details: 'Deadline exceeded',
        })
      } finally {
        await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined)
        admin.disconnect()
      }
    })
  },
)
