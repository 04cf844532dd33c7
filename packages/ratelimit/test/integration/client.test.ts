import { once } from 'node:events'
import {
  createServer,
  type Http2Server,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2'
import type { AddressInfo } from 'node:net'
import { getFreePort } from '@gatehouse/testing'
import * as grpc from '@grpc/grpc-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  GRPC_CALL_STATUS,
  MAX_RESPONSE_MESSAGE_BYTES,
  RateLimitClient,
} from '@gatehouse/ratelimit/client'
import { encodeRateLimitResponse } from '#internal/protocol/protobuf/response.js'
import { startService, type Harness } from '../harness.js'

const CONFIG = `domain: client
descriptors:
  - key: op
    value: two_per_minute
    rate_limit: {unit: minute, requests_per_unit: 2}
`

const request = (hitsAddend: number) => ({
  domain: 'client',
  descriptors: [{ entries: [{ key: 'op', value: 'two_per_minute' }] }],
  hitsAddend,
})

// The client's own HTTP/2 transport, and grpc-js (chosen by `credentials`), against both server
// implementations of the service.
describe.each([
  { server: 'native', transport: 'node:http2' },
  { server: 'grpc-js', transport: 'node:http2' },
  { server: 'native', transport: 'grpc-js' },
])(
  'RateLimitClient over $transport, $server server (one channel, deadlines, hits_addend, duration_until_reset)',
  ({ server, transport }) => {
    let h: Harness
    let client: RateLimitClient

    beforeAll(async () => {
      h = await startService({
        files: { 'client.yaml': CONFIG },
        now: Date.UTC(2026, 0, 1, 0, 0, 20),
        env: { GRPC_SERVER_IMPLEMENTATION: server },
      })
      client = new RateLimitClient(h.grpcAddress, {
        timeoutMs: 2_000,
        ...(transport === 'grpc-js' ? { credentials: grpc.credentials.createInsecure() } : {}),
      })
    })
    afterAll(async () => {
      client.close()
      await h.close()
    })

    it('counts hits_addend and reads the seconds until the window resets', async () => {
      const first = await client.shouldRateLimit(request(2))
      expect(first.overallCode).toBe('OK')
      expect(first.statuses[0]).toMatchObject({ limitRemaining: 0, durationUntilReset: 40 })
      const second = await client.shouldRateLimit(request(1))
      expect(second.overallCode).toBe('OVER_LIMIT')
      expect(second.statuses[0]?.durationUntilReset).toBe(40)
    })

    it("passes the service's error status and message on", async () => {
      await expect(client.shouldRateLimit({ ...request(1), domain: '' })).rejects.toMatchObject({
        code: GRPC_CALL_STATUS.UNKNOWN,
        details: 'rate limit domain must not be empty',
      })
    })

    it('fails with UNAVAILABLE when nothing listens, within its deadline', async () => {
      const port = await getFreePort()
      const down = new RateLimitClient(`127.0.0.1:${String(port)}`, {
        timeoutMs: 300,
        ...(transport === 'grpc-js' ? { credentials: grpc.credentials.createInsecure() } : {}),
      })
      try {
        await expect(down.shouldRateLimit(request(1))).rejects.toMatchObject({
          code:
            transport === 'grpc-js' ? (expect.any(Number) as number) : GRPC_CALL_STATUS.UNAVAILABLE,
        })
      } finally {
        down.close()
      }
    })
  },
)

/** A bare HTTP/2 server on a loopback port, answering every stream with `answer`. */
async function startFake(
  answer: (stream: ServerHttp2Stream) => void,
  port = 0,
): Promise<{ server: Http2Server; port: number; sessions: Set<ServerHttp2Session> }> {
  const server = createServer()
  const sessions = new Set<ServerHttp2Session>()
  server.on('session', (s) => {
    sessions.add(s)
    s.on('close', () => sessions.delete(s))
  })
  server.on('stream', (stream) => {
    stream.on('error', () => undefined)
    answer(stream)
  })
  server.listen(port, '127.0.0.1')
  await once(server, 'listening')
  return { server, port: (server.address() as AddressInfo).port, sessions }
}

async function stopFake(fake: Awaited<ReturnType<typeof startFake>>): Promise<void> {
  for (const s of fake.sessions) s.destroy()
  await new Promise((resolve) => fake.server.close(resolve))
}

const OK_ANSWER = encodeRateLimitResponse(
  { overallCode: 'OK', statuses: [], responseHeadersToAdd: [] },
  true,
)

/** Answers a unary call with `message` (gRPC-framed) and OK trailers, after `headers`. */
function answerWith(
  stream: ServerHttp2Stream,
  message: Buffer,
  headers: Record<string, string | number> = { ':status': 200, 'content-type': 'application/grpc' },
): void {
  stream.respond(headers, { waitForTrailers: true })
  stream.on('wantTrailers', () => {
    stream.sendTrailers({ 'grpc-status': '0' })
  })
  stream.end(message)
}

describe('RateLimitClient over node:http2 against misbehaving servers', () => {
  it('ends a call the server never answers with DEADLINE_EXCEEDED, and cancels its stream', async () => {
    let cancelled = 0
    const fake = await startFake((stream) => {
      stream.on('close', () => cancelled++)
    })
    const client = new RateLimitClient(`127.0.0.1:${String(fake.port)}`, { timeoutMs: 200 })
    try {
      await expect(client.shouldRateLimit(request(1))).rejects.toMatchObject({
        code: GRPC_CALL_STATUS.DEADLINE_EXCEEDED,
      })
      await expect.poll(() => cancelled).toBe(1)
    } finally {
      client.close()
      await stopFake(fake)
    }
  })

  it('refuses a response larger than MAX_RESPONSE_MESSAGE_BYTES without holding it', async () => {
    const fake = await startFake((stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' })
      const chunk = Buffer.alloc(64 * 1024)
      // An endless body: the client must stop reading past its cap.
      const pump = (): void => {
        while (!stream.destroyed && stream.write(chunk));
        if (!stream.destroyed) stream.once('drain', pump)
      }
      pump()
    })
    const client = new RateLimitClient(`127.0.0.1:${String(fake.port)}`, { timeoutMs: 10_000 })
    try {
      await expect(client.shouldRateLimit(request(1))).rejects.toMatchObject({
        code: GRPC_CALL_STATUS.RESOURCE_EXHAUSTED,
        details: `response over ${String(MAX_RESPONSE_MESSAGE_BYTES)} bytes`,
      })
    } finally {
      client.close()
      await stopFake(fake)
    }
  })

  it('maps a non-gRPC answer and a malformed message to a status', async () => {
    let reply: 'http' | 'malformed' = 'http'
    const fake = await startFake((stream) => {
      if (reply === 'http') {
        stream.respond({ ':status': 503 }, { endStream: true })
        return
      }
      answerWith(stream, Buffer.from([0, 0, 0, 0, 9, 1]), { 'content-type': 'application/grpc' })
    })
    const client = new RateLimitClient(`127.0.0.1:${String(fake.port)}`, { timeoutMs: 2_000 })
    try {
      await expect(client.shouldRateLimit(request(1))).rejects.toMatchObject({
        code: GRPC_CALL_STATUS.UNAVAILABLE,
        details: 'HTTP status 503',
      })
      reply = 'malformed'
      await expect(client.shouldRateLimit(request(1))).rejects.toMatchObject({
        code: GRPC_CALL_STATUS.INTERNAL,
        details: 'malformed response message',
      })
    } finally {
      client.close()
      await stopFake(fake)
    }
  })

  it('moves to a new session before its stream ids run out, finishing the calls in flight', async () => {
    let opened = 0
    const fake = await startFake((stream) => {
      answerWith(stream, OK_ANSWER)
    })
    fake.server.on('session', () => opened++)
    const client = new RateLimitClient(`127.0.0.1:${String(fake.port)}`, {
      timeoutMs: 2_000,
      maxStreamsPerSession: 2,
    })
    try {
      const answers = await Promise.all([1, 2, 3].map(() => client.shouldRateLimit(request(1))))
      for (let i = 0; i < 2; i++) answers.push(await client.shouldRateLimit(request(1)))
      expect(answers.map((a) => a.overallCode)).toEqual(['OK', 'OK', 'OK', 'OK', 'OK'])
      expect(opened).toBe(3)
    } finally {
      client.close()
      await stopFake(fake)
    }
  })

  it('dials again after the server went away, on the same address', async () => {
    const ok = (stream: ServerHttp2Stream): void => {
      answerWith(stream, OK_ANSWER)
    }
    const first = await startFake(ok)
    const client = new RateLimitClient(`127.0.0.1:${String(first.port)}`, { timeoutMs: 2_000 })
    try {
      expect((await client.shouldRateLimit(request(1))).overallCode).toBe('OK')
      await stopFake(first)
      await expect(client.shouldRateLimit(request(1))).rejects.toMatchObject({
        code: GRPC_CALL_STATUS.UNAVAILABLE,
      })
      const second = await startFake(ok, first.port)
      try {
        expect((await client.shouldRateLimit(request(1))).overallCode).toBe('OK')
      } finally {
        await stopFake(second)
      }
    } finally {
      client.close()
    }
  })
})
