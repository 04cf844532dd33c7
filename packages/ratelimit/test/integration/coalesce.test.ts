/**
 * Coalescing (`RateLimitClient`'s `coalesce`, the service's `gatehouse-coalesce-max-descriptors`
 * header): against the real service on both gRPC server implementations, through the client's
 * own HTTP/2 transport and through grpc-js (plaintext and TLS). The calls are counted at the
 * service (`ratelimit_server.ShouldRateLimit.total_requests`) and at the client (`counts`). One
 * tiny fake server on node:http2 answers what the real service never does (a wrong number of
 * statuses, a header that comes and goes).
 */
import { once } from 'node:events'
import {
  connect,
  constants,
  createServer,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2'
import type { AddressInfo } from 'node:net'
import { createTestCertificates } from '@gatehouse/testing'
import * as grpc from '@grpc/grpc-js'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  COALESCE_MAX_DESCRIPTORS_HEADER,
  GRPC_CALL_STATUS,
  RateLimitCallError,
  RateLimitClient,
  serviceErrorCode,
} from '@gatehouse/ratelimit/client'
import { encodeRateLimitRequest } from '#internal/protocol/protobuf/request.js'
import { encodeRateLimitResponse } from '#internal/protocol/protobuf/response.js'
import type { Descriptor, RateLimitRequest, RateLimitResponse } from '#internal/protocol/types.js'
import { startService, type Harness } from '../harness.js'

const CONFIG = `domain: co
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: shared
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: one
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: two
    rate_limit: {unit: minute, requests_per_unit: 2}
`
const TOTAL = 'ratelimit_server.ShouldRateLimit.total_requests'

const descriptor = (key: string, value: string, hitsAddend?: number): Descriptor => ({
  entries: [{ key, value }],
  ...(hitsAddend === undefined ? {} : { hitsAddend }),
})
const request = (...descriptors: Descriptor[]): RateLimitRequest => ({
  domain: 'co',
  descriptors,
  hitsAddend: 0,
})
const remaining = (response: RateLimitResponse): number[] =>
  response.statuses.map((s) => s.limitRemaining)
const codes = (response: RateLimitResponse): string[] => response.statuses.map((s) => s.code)

/** The coalescing header of a successful `ShouldRateLimit` answer (undefined when absent). */
async function coalesceHeader(address: string): Promise<string | undefined> {
  const session = connect(`http://${address}`)
  try {
    const message = encodeRateLimitRequest(request(descriptor('user', 'header-probe')))
    const frame = Buffer.alloc(5 + message.length)
    frame.writeUInt32BE(message.length, 1)
    frame.set(message, 5)
    const stream = session.request({
      ':method': 'POST',
      ':path': '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
      'content-type': 'application/grpc',
      te: 'trailers',
    })
    stream.end(frame)
    const [headers] = (await once(stream, 'response')) as [IncomingHttpHeaders]
    stream.resume()
    const [trailers] = (await once(stream, 'trailers')) as [IncomingHttpHeaders]
    expect(trailers['grpc-status']).toBe('0')
    const value = headers[COALESCE_MAX_DESCRIPTORS_HEADER]
    return Array.isArray(value) ? value.join(',') : value
  } finally {
    session.close()
  }
}

/** Makes every call of `requests` in one turn and waits for all outcomes. */
function oneTurn(
  client: RateLimitClient,
  requests: readonly RateLimitRequest[],
): Promise<PromiseSettledResult<RateLimitResponse>[]> {
  return Promise.allSettled(requests.map((r) => client.shouldRateLimit(r)))
}

function answered(results: PromiseSettledResult<RateLimitResponse>[]): RateLimitResponse[] {
  return results.map((r) => {
    if (r.status === 'rejected') throw r.reason
    return r.value
  })
}

/**
 * Starts the service (the file's config plus `files`) and a coalescing client for the enclosing
 * `describe`.
 */
function coalescingService(options: {
  env: Record<string, string>
  files?: Record<string, string>
}): { readonly h: Harness; readonly client: RateLimitClient } {
  let h: Harness | undefined
  let client: RateLimitClient | undefined
  beforeAll(async () => {
    h = await startService({ files: { 'co.yaml': CONFIG, ...options.files }, env: options.env })
    client = new RateLimitClient(h.grpcAddress, { timeoutMs: 5_000, coalesce: true })
  })
  afterAll(async () => {
    client?.close()
    await h?.close()
  })
  return {
    get h() {
      if (h === undefined) throw new Error('service not started')
      return h
    },
    get client() {
      if (client === undefined) throw new Error('service not started')
      return client
    },
  }
}

describe.each([
  { server: 'native', transport: 'node:http2' },
  { server: 'grpc-js', transport: 'node:http2' },
  { server: 'native', transport: 'grpc-js' },
  { server: 'grpc-js', transport: 'grpc-js' },
])('coalescing over $transport, $server server', ({ server, transport }) => {
  let h: Harness
  let client: RateLimitClient
  /** Service-side calls since the last call of this. */
  let seen = 0
  const callsSince = (): number => {
    const now = h.stat(TOTAL)
    const calls = now - seen
    seen = now
    return calls
  }

  beforeAll(async () => {
    h = await startService({
      files: { 'co.yaml': CONFIG },
      env: { GRPC_SERVER_IMPLEMENTATION: server },
    })
    client = new RateLimitClient(h.grpcAddress, {
      timeoutMs: 5_000,
      coalesce: true,
      ...(transport === 'grpc-js' ? { credentials: grpc.credentials.createInsecure() } : {}),
    })
  })
  afterAll(async () => {
    client.close()
    await h.close()
  })

  it('advertises MAX_DESCRIPTORS_PER_REQUEST in a response header', async () => {
    expect(await coalesceHeader(h.grpcAddress)).toBe('64')
    callsSince()
  })

  it('sends the calls of one turn as one after a first answer, each caller getting its own statuses', async () => {
    // Before any answer the client does not know whether it may coalesce: one call each.
    const before = answered(
      await oneTurn(client, [request(descriptor('user', 'a')), request(descriptor('user', 'b'))]),
    )
    expect(before.map(remaining)).toEqual([[9], [9]])
    expect(callsSince()).toBe(2)
    const counts = client.counts

    const requests = [
      request(descriptor('user', 'a', 2)),
      request(descriptor('user', 'c'), descriptor('user', 'd', 3)),
      request(descriptor('user', 'b', 10)),
      request(descriptor('user', 'e', 11)),
      request(descriptor('nolimit', 'x'), descriptor('user', 'a')),
    ]
    const answers = answered(await oneTurn(client, requests))
    expect(callsSince()).toBe(1)
    expect(client.counts).toEqual({ requests: counts.requests + 5, calls: counts.calls + 1 })
    expect(answers.map(remaining)).toEqual([[7], [9, 7], [0], [0], [0, 6]])
    expect(answers.map(codes)).toEqual([
      ['OK'],
      ['OK', 'OK'],
      ['OVER_LIMIT'],
      ['OVER_LIMIT'],
      ['OK', 'OK'],
    ])
    expect(answers.map((a) => a.overallCode)).toEqual([
      'OK',
      'OK',
      'OVER_LIMIT',
      'OVER_LIMIT',
      'OK',
    ])
    expect(answers[0]).toEqual({
      overallCode: 'OK',
      statuses: [
        {
          code: 'OK',
          currentLimit: { requestsPerUnit: 10, unit: 'MINUTE' },
          limitRemaining: 7,
          durationUntilReset: 60,
        },
      ],
      responseHeadersToAdd: [],
    })
  })

  it('counts the same key exactly when many callers of one turn carry it', async () => {
    const answers = answered(
      await oneTurn(
        client,
        Array.from({ length: 12 }, () => request(descriptor('shared', 'k'))),
      ),
    )
    expect(callsSince()).toBe(1)
    expect(answers.map((a) => a.overallCode)).toEqual([
      ...Array<string>(5).fill('OK'),
      ...Array<string>(7).fill('OVER_LIMIT'),
    ])
    expect(answers.map(remaining).flat()).toEqual([4, 3, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0])
  })

  it('groups by domain and request hits_addend (0 counts as 1)', async () => {
    const answers = answered(
      await oneTurn(client, [
        { ...request(descriptor('user', 'g1')), hitsAddend: 0 },
        { ...request(descriptor('user', 'g1')), hitsAddend: 1 },
        { ...request(descriptor('user', 'g3')), hitsAddend: 3 },
        { ...request(descriptor('user', 'g2')), domain: 'elsewhere' },
      ]),
    )
    // {0, 1} together, {3} alone, the other domain alone.
    expect(callsSince()).toBe(3)
    expect(answers.map(remaining)).toEqual([[9], [8], [7], [0]])
  })

  it('sends a batch the service refused as a request again, one call per caller, so only the caller at fault fails', async () => {
    const results = await oneTurn(client, [
      request(descriptor('user', 'f1')),
      {
        ...request(),
        descriptors: [
          { ...descriptor('user', 'f2'), limit: { requestsPerUnit: 1, unit: 'UNKNOWN' } },
        ],
      },
    ])
    // The merged call, then each request alone.
    expect(callsSince()).toBe(3)
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected'])
    expect(remaining((results[0] as PromiseFulfilledResult<RateLimitResponse>).value)).toEqual([9])
    const reason = (results[1] as PromiseRejectedResult).reason as unknown
    expect(reason).toMatchObject({
      code: GRPC_CALL_STATUS.UNKNOWN,
      details: 'descriptor 0: rate limit override must have a unit other than UNKNOWN',
    })
    expect(serviceErrorCode(reason)).toBe('ERR_SERVICE')
    // The refused call counted nothing: f1 was counted once, by its own call.
    const [after] = answered(await oneTurn(client, [request(descriptor('user', 'f1'))]))
    expect(after?.statuses[0]?.limitRemaining).toBe(8)
    callsSince()
  })
})

describe('coalescing with MAX_DESCRIPTORS_PER_REQUEST=4', () => {
  const s = coalescingService({ env: { MAX_DESCRIPTORS_PER_REQUEST: '4' } })

  it('splits a turn into calls of at most 4 descriptors; a larger request goes alone and is refused', async () => {
    expect(await coalesceHeader(s.h.grpcAddress)).toBe('4')
    await s.client.shouldRateLimit(request(descriptor('user', 'first')))
    const before = s.h.stat(TOTAL)
    const requests = [
      request(descriptor('user', 's1')),
      request(descriptor('user', 's2'), descriptor('user', 's3')),
      request(descriptor('user', 's4')),
      request(descriptor('user', 's5'), descriptor('user', 's6')), // does not fit: next call
      request(...['a', 'b', 'c', 'd', 'e'].map((v) => descriptor('user', v))), // alone
      request(descriptor('user', 's7'), descriptor('user', 's8')),
      request(descriptor('user', 's9')),
    ]
    const results = await oneTurn(s.client, requests)
    // [s1, s2 s3, s4] [s5 s6, s7 s8] [s9] and the 5-descriptor request alone.
    expect(s.h.stat(TOTAL) - before).toBe(4)
    expect(results.map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ])
    expect((results[4] as PromiseRejectedResult).reason).toMatchObject({
      code: GRPC_CALL_STATUS.UNKNOWN,
    })
    const lengths = results.map((r) => (r.status === 'fulfilled' ? r.value.statuses.length : 0))
    expect(lengths).toEqual([1, 2, 1, 2, 0, 2, 1])
  })
})

describe.each<{ name: string; env: Record<string, string>; files: Record<string, string> }>([
  {
    name: 'STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true',
    env: { STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: 'true' },
    files: {},
  },
  { name: 'QUOTA_MODE=true', env: { QUOTA_MODE: 'true' }, files: {} },
  {
    name: 'a rule with replaces',
    env: {},
    files: {
      'replacing.yaml': `domain: replacing
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 1, name: a, replaces: [{name: b}]}
  - key: b
    rate_limit: {unit: minute, requests_per_unit: 1, name: b}
`,
    },
  },
])('no coalescing with $name', ({ env, files }) => {
  const s = coalescingService({ env, files })

  it('sends no header, so the client calls one by one', async () => {
    expect(await coalesceHeader(s.h.grpcAddress)).toBeUndefined()
    await s.client.shouldRateLimit(request(descriptor('user', 'first')))
    const before = s.h.stat(TOTAL)
    answered(
      await oneTurn(s.client, [
        request(descriptor('user', 'n1')),
        request(descriptor('user', 'n2')),
        request(descriptor('user', 'n3')),
      ]),
    )
    expect(s.h.stat(TOTAL) - before).toBe(3)
  })
})

describe('no coalescing under STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT (the bypass it prevents)', () => {
  const s = coalescingService({ env: { STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: 'true' } })

  it("counts another caller's key while one caller is over its limit in the same turn", async () => {
    expect((await s.client.shouldRateLimit(request(descriptor('one', 'x')))).overallCode).toBe('OK')
    // Merged, `one` over its limit would make the service add 0 to `two`: it would never fill.
    for (let turn = 0; turn < 2; turn++) {
      const [over, counted] = answered(
        await oneTurn(s.client, [request(descriptor('one', 'x')), request(descriptor('two', 'y'))]),
      )
      expect(over?.overallCode).toBe('OVER_LIMIT')
      expect(counted?.statuses[0]?.limitRemaining).toBe(1 - turn)
    }
    const third = await s.client.shouldRateLimit(request(descriptor('two', 'y')))
    expect(third.overallCode).toBe('OVER_LIMIT')
  })
})

describe('coalescing with SHADOW_MODE=true', () => {
  const s = coalescingService({ env: { SHADOW_MODE: 'true' } })

  it('answers every caller OK, as the service answers each request alone', async () => {
    await s.client.shouldRateLimit(request(descriptor('one', 'shadow')))
    const before = s.h.stat(TOTAL)
    const answers = answered(
      await oneTurn(s.client, [
        request(descriptor('one', 'shadow')),
        request(descriptor('user', 'shadow')),
      ]),
    )
    expect(s.h.stat(TOTAL) - before).toBe(1)
    expect(answers.map(codes)).toEqual([['OVER_LIMIT'], ['OK']])
    expect(answers.map((a) => a.overallCode)).toEqual(['OK', 'OK'])
  })
})

describe('coalescing over grpc-js with TLS', () => {
  let h: Harness
  let client: RateLimitClient
  let dir: string

  beforeAll(async () => {
    const certs = createTestCertificates()
    dir = mkdtempSync(join(tmpdir(), 'ratelimit-coalesce-'))
    writeFileSync(join(dir, 'server.crt'), certs.serverCert)
    writeFileSync(join(dir, 'server.key'), certs.serverKey)
    h = await startService({
      files: { 'co.yaml': CONFIG },
      env: {
        GRPC_SERVER_USE_TLS: 'true',
        GRPC_SERVER_TLS_CERT: join(dir, 'server.crt'),
        GRPC_SERVER_TLS_KEY: join(dir, 'server.key'),
      },
    })
    client = new RateLimitClient(h.grpcAddress.replace('127.0.0.1', 'localhost'), {
      timeoutMs: 5_000,
      coalesce: true,
      credentials: grpc.credentials.createSsl(Buffer.from(certs.ca)),
    })
  })
  afterAll(async () => {
    client.close()
    await h.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('reads the header from the call metadata and coalesces', async () => {
    await client.shouldRateLimit(request(descriptor('user', 'tls')))
    const before = h.stat(TOTAL)
    const answers = answered(
      await oneTurn(client, [
        request(descriptor('user', 'tls')),
        request(descriptor('user', 'tls'), descriptor('user', 'tls2')),
      ]),
    )
    expect(h.stat(TOTAL) - before).toBe(1)
    expect(answers.map(remaining)).toEqual([[8], [7, 9]])
  })
})

describe('RateLimitClient coalescing against a fake service', () => {
  /** What the fake answers: statuses per call and whether it sends the header. */
  let statuses = 1
  /** The header's value; undefined sends none. */
  let header: string | undefined = '10'
  let streams = 0
  const server = createServer()
  server.on('stream', (stream: ServerHttp2Stream) => {
    streams++
    stream.on('error', () => undefined)
    stream.resume()
    stream.on('end', () => {
      stream.respond(
        {
          [constants.HTTP2_HEADER_STATUS]: 200,
          'content-type': 'application/grpc',
          ...(header === undefined ? {} : { [COALESCE_MAX_DESCRIPTORS_HEADER]: header }),
        },
        { waitForTrailers: true },
      )
      stream.on('wantTrailers', () => {
        stream.sendTrailers({ 'grpc-status': '0' })
      })
      stream.end(
        encodeRateLimitResponse(
          {
            overallCode: 'OK',
            statuses: Array.from({ length: statuses }, () => ({ code: 'OK', limitRemaining: 1 })),
            responseHeadersToAdd: [],
          },
          true,
        ),
      )
    })
  })
  let client: RateLimitClient

  beforeAll(async () => {
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    client = new RateLimitClient(`127.0.0.1:${String((server.address() as AddressInfo).port)}`, {
      timeoutMs: 5_000,
      coalesce: true,
    })
  })
  afterAll(async () => {
    client.close()
    await new Promise((resolve) => server.close(resolve))
  })

  it('fails every caller with INTERNAL when the number of statuses does not match', async () => {
    expect((await client.shouldRateLimit(request(descriptor('user', 'a')))).statuses).toHaveLength(
      1,
    )
    const results = await oneTurn(client, [
      request(descriptor('user', 'a')),
      request(descriptor('user', 'b'), descriptor('user', 'c')),
    ])
    for (const result of results) {
      expect(result.status).toBe('rejected')
      const reason = (result as PromiseRejectedResult).reason as RateLimitCallError
      expect(reason).toBeInstanceOf(RateLimitCallError)
      expect(reason.code).toBe(GRPC_CALL_STATUS.INTERNAL)
      expect(reason.details).toBe('coalesced response has 1 statuses for 3 descriptors')
    }
  })

  it('stops coalescing after an answer without the header, and starts again with one that has it', async () => {
    statuses = 2
    header = undefined
    // Coalesced (the last answer had the header); this answer has none.
    answered(
      await oneTurn(client, [request(descriptor('user', 'a')), request(descriptor('user', 'b'))]),
    )
    statuses = 1
    let before = streams
    answered(
      await oneTurn(client, [request(descriptor('user', 'a')), request(descriptor('user', 'b'))]),
    )
    expect(streams - before).toBe(2)
    header = '10'
    answered(await oneTurn(client, [request(descriptor('user', 'a'))]))
    statuses = 2
    before = streams
    answered(
      await oneTurn(client, [request(descriptor('user', 'a')), request(descriptor('user', 'b'))]),
    )
    expect(streams - before).toBe(1)
  })

  it.each(['0', '-1', '1e3', ' 4', '4.5', 'x', '1234567890'])(
    'takes a header value %j that is not a count from 1 to 999999999 as no header',
    async (value) => {
      header = '10'
      statuses = 1
      answered(await oneTurn(client, [request(descriptor('user', 'a'))]))
      header = value
      answered(await oneTurn(client, [request(descriptor('user', 'a'))]))
      const before = streams
      answered(
        await oneTurn(client, [request(descriptor('user', 'a')), request(descriptor('user', 'b'))]),
      )
      expect(streams - before).toBe(2)
    },
  )
})
