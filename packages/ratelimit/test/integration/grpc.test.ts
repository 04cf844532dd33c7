import * as grpc from '@grpc/grpc-js'
import { waitFor } from '@gatehouse/testing'
import { connect as connectHttp2, type IncomingHttpHeaders } from 'node:http2'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../fixtures.js'
import { grpcError, rawShouldRateLimit, startService, type Harness } from '../harness.js'
import type { LoadedResponse } from '../proto.js'

const entries = (...pairs: [string, string][]) => ({
  entries: pairs.map(([key, value]) => ({ key, value })),
})

function codes(response: LoadedResponse): string[] {
  return [
    response.overallCode ?? 'UNKNOWN',
    ...(response.statuses ?? []).map((s) => s.code ?? 'UNKNOWN'),
  ]
}

describe.each(['native', 'grpc-js'])(
  'gRPC ShouldRateLimit on the %s server (memory backend, proto-generated client)',
  (implementation) => {
    let h: Harness

    beforeAll(async () => {
      h = await startService({
        files: {
          'basic.yaml': fixture('integration/basic.yaml'),
          'example.yaml': fixture('service/edge.yaml'),
          'wildcard.yaml': fixture('config/wildcards.yaml'),
          'share.yaml': fixture('integration/uploads.yaml'),
        },
        env: { LIMIT_RESPONSE_HEADERS_ENABLED: 'true', GRPC_SERVER_IMPLEMENTATION: implementation },
        now: Date.UTC(2026, 0, 1, 0, 0, 15),
      })
    })
    afterAll(async () => {
      await h.close()
    })

    it('answers OK then OVER_LIMIT with the current limit, remaining and reset', async () => {
      const request = { domain: 'basic', descriptors: [entries(['one_per_minute', 'grpc-a'])] }
      const first = await h.client.shouldRateLimit(request)
      expect(first).toEqual({
        overallCode: 'OK',
        statuses: [
          {
            code: 'OK',
            currentLimit: { requestsPerUnit: 1, unit: 'MINUTE' },
            durationUntilReset: { seconds: 45 },
          },
        ],
        responseHeadersToAdd: [
          { key: 'RateLimit-Limit', value: '1' },
          { key: 'RateLimit-Remaining', value: '0' },
          { key: 'RateLimit-Reset', value: '45' },
        ],
      })
      const second = await h.client.shouldRateLimit(request)
      expect(codes(second)).toEqual(['OVER_LIMIT', 'OVER_LIMIT'])
      // A different value of a value-less rule has its own counter.
      expect(
        codes(
          await h.client.shouldRateLimit({
            domain: 'basic',
            descriptors: [entries(['one_per_minute', 'grpc-b'])],
          }),
        ),
      ).toEqual(['OK', 'OK'])
    })

    it('rolls the window over with the clock', async () => {
      const request = { domain: 'basic', descriptors: [entries(['one_per_minute', 'roll'])] }
      await h.client.shouldRateLimit(request)
      expect((await h.client.shouldRateLimit(request)).overallCode).toBe('OVER_LIMIT')
      h.clock.advance(45_000)
      const next = await h.client.shouldRateLimit(request)
      expect(next.overallCode).toBe('OK')
      expect(next.statuses?.[0]?.durationUntilReset).toEqual({ seconds: 60 })
      h.clock.set(Date.UTC(2026, 0, 1, 0, 0, 15))
    })

    it('applies replaces, shadow mode and unlimited rules', async () => {
      const replaced = {
        domain: 'edge',
        descriptors: [
          entries(['client', 'mobile'], ['route', 'checkout']),
          entries(['user', 'g'], ['action', 'checkout']),
        ],
      }
      expect(codes(await h.client.shouldRateLimit(replaced))).toEqual(['OK', 'OK', 'OK'])
      const second = await h.client.shouldRateLimit(replaced)
      expect(second.statuses?.[1]).toEqual({ code: 'OK' })
      expect(codes(await h.client.shouldRateLimit(replaced))).toEqual([
        'OVER_LIMIT',
        'OVER_LIMIT',
        'OK',
      ])

      const shady = { domain: 'edge', descriptors: [entries(['user', 'g'], ['ip', 'suspect'])] }
      for (let i = 0; i < 4; i++)
        expect((await h.client.shouldRateLimit(shady)).overallCode).toBe('OK')
      expect(h.stat('ratelimit.service.rate_limit.edge.user.ip_suspect.shadow_mode')).toBe(1)

      const unlimited = await h.client.shouldRateLimit({
        domain: 'edge',
        descriptors: [entries(['health', 'x'])],
      })
      expect(unlimited.statuses).toEqual([{ code: 'OK', limitRemaining: 4294967295 }])
    })

    it('matches wildcards and shares counters with share_threshold', async () => {
      const wild = (value: string) => ({
        domain: 'paths',
        descriptors: [entries(['middle', value])],
      })
      expect(
        (await h.client.shouldRateLimit(wild('log-x.txt'))).statuses?.[0]?.currentLimit
          ?.requestsPerUnit,
      ).toBe(20)
      expect((await h.client.shouldRateLimit(wild('nope'))).statuses).toEqual([{ code: 'OK' }])

      const file = (name: string) => ({
        domain: 'uploads',
        descriptors: [entries(['pooled', `tmp/${name}`])],
      })
      const separate = (name: string) => ({
        domain: 'uploads',
        descriptors: [entries(['apart', `tmp/${name}`])],
      })
      for (let i = 0; i < 10; i++) await h.client.shouldRateLimit(file(`f${String(i)}.txt`))
      expect((await h.client.shouldRateLimit(file('other.txt'))).overallCode).toBe('OVER_LIMIT')
      for (let i = 0; i < 10; i++) await h.client.shouldRateLimit(separate(`f${String(i)}.txt`))
      expect((await h.client.shouldRateLimit(separate('other.txt'))).overallCode).toBe('OK')
      expect(h.stat('ratelimit.service.rate_limit.uploads.pooled_tmp/*.total_hits')).toBe(11)
    })

    it('honours hits_addend on the request and per descriptor, and descriptor overrides', async () => {
      const r = await h.client.shouldRateLimit({
        domain: 'basic',
        descriptors: [
          { ...entries(['key1', 'addend']), hitsAddend: { value: 0 } },
          entries(['key1', 'addend2']),
        ],
        hitsAddend: 30,
      })
      expect(r.statuses?.map((s) => s.limitRemaining)).toEqual([50, 20])
      const override = {
        domain: 'basic',
        descriptors: [
          { ...entries(['anything', 'o']), limit: { requestsPerUnit: 2, unit: 'HOUR' } },
        ],
      }
      expect((await h.client.shouldRateLimit(override)).statuses?.[0]?.currentLimit).toEqual({
        requestsPerUnit: 2,
        unit: 'HOUR',
      })
    })

    it('returns upstream errors as status UNKNOWN and counts them', async () => {
      const before = h.stat('ratelimit.service.call.should_rate_limit.service_error')
      const empty = await grpcError(
        h.client.shouldRateLimit({ domain: '', descriptors: [entries(['a', 'b'])] }),
      )
      expect(empty.code).toBe(grpc.status.UNKNOWN)
      expect(empty.details).toBe('rate limit domain must not be empty')
      const none = await grpcError(h.client.shouldRateLimit({ domain: 'basic', descriptors: [] }))
      expect(none.details).toBe('rate limit descriptor list must not be empty')
      const unknownUnit = await grpcError(
        h.client.shouldRateLimit({
          domain: 'basic',
          descriptors: [{ ...entries(['a', 'b']), limit: { requestsPerUnit: 1 } }],
        }),
      )
      expect(unknownUnit.code).toBe(grpc.status.UNKNOWN)
      expect(unknownUnit.details).toBe(
        'descriptor 0: rate limit override must have a unit other than UNKNOWN',
      )
      expect(h.stat('ratelimit.service.call.should_rate_limit.service_error')).toBe(before + 3)
    })

    it('answers unknown domains and descriptors without entries with OK', async () => {
      expect(
        await h.client.shouldRateLimit({ domain: 'nowhere', descriptors: [entries(['a', 'b'])] }),
      ).toEqual({
        overallCode: 'OK',
        statuses: [{ code: 'OK' }],
      })
      expect(h.stat('ratelimit.service.rate_limit.nowhere.domain_not_found')).toBe(1)
      expect(
        (await h.client.shouldRateLimit({ domain: 'basic', descriptors: [{}] })).statuses,
      ).toEqual([{ code: 'OK' }])
    })

    it('decides requests up to the default caps and refuses larger ones', async () => {
      const atCaps = {
        domain: 'basic',
        descriptors: [
          {
            entries: Array.from({ length: 32 }, (_, i) => ({ key: `k${String(i)}`, value: 'v' })),
          },
          entries(['key1', 'x'.repeat(4096)]),
        ],
      }
      expect((await h.client.shouldRateLimit(atCaps)).statuses?.[1]?.limitRemaining).toBe(49)
      const many = {
        domain: 'basic',
        descriptors: [
          {
            entries: Array.from({ length: 5000 }, (_, i) => ({ key: `k${String(i)}`, value: 'v' })),
          },
        ],
      }
      expect(await grpcError(h.client.shouldRateLimit(many))).toMatchObject({
        code: grpc.status.UNKNOWN,
        details: 'descriptor 0 has more than 32 entries (MAX_ENTRIES_PER_DESCRIPTOR=32)',
      })
      const long = { domain: 'basic', descriptors: [entries(['key1', 'x'.repeat(1_000_000)])] }
      expect(await grpcError(h.client.shouldRateLimit(long))).toMatchObject({
        code: grpc.status.UNKNOWN,
        details:
          'descriptor 0, entry 0: value is longer than 4096 bytes (MAX_DESCRIPTOR_ENTRY_BYTES=4096)',
      })
      const tooBig = { domain: 'basic', descriptors: [entries(['key1', 'x'.repeat(5_000_000)])] }
      expect((await grpcError(h.client.shouldRateLimit(tooBig))).code).toBe(
        grpc.status.RESOURCE_EXHAUSTED,
      )
    })

    it('rejects strings that are not UTF-8 like Go does, without crashing', async () => {
      const send = (bytes: Buffer) => rawShouldRateLimit(h.grpcAddress, bytes)
      const invalid = await send(Buffer.from([0x0a, 0x02, 0xc3, 0x28]))
      expect(invalid?.code).toBe(grpc.status.INTERNAL)
      expect(invalid?.details).toBe(
        'grpc: error unmarshalling request: proto: string field contains invalid UTF-8',
      )
      const garbage = await send(Buffer.from([0xff, 0xff, 0xff]))
      expect(garbage?.code).toBe(grpc.status.INTERNAL)
      expect(
        (
          await h.client.shouldRateLimit({
            domain: 'basic',
            descriptors: [entries(['key1', 'after'])],
          })
        ).overallCode,
      ).toBe('OK')
    })

    it('serves grpc.health.v1 for "" and "ratelimit"', async () => {
      expect(await h.client.check('')).toBe('SERVING')
      expect(await h.client.check('ratelimit')).toBe('SERVING')
      expect((await grpcError(h.client.check('other'))).code).toBe(grpc.status.NOT_FOUND)
      expect(h.stat('ratelimit_server.ShouldRateLimit.total_requests')).toBeGreaterThan(10)
      expect(h.stat('ratelimit_server.Check.total_requests')).toBe(3)
    })

    it('streams health changes on Watch', async () => {
      const Client = grpc.makeGenericClientConstructor({}, 'Raw')
      const raw = new Client(h.grpcAddress, grpc.credentials.createInsecure())
      const call = raw.makeServerStreamRequest(
        '/grpc.health.v1.Health/Watch',
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.from([0x0a, 0x09, ...Buffer.from('ratelimit')]),
      )
      const seen: string[] = []
      call.on('data', (b: Buffer) => seen.push(b.toString('hex')))
      call.on('error', () => undefined)
      await waitFor(() => seen.length === 1, { what: 'the first status' })
      h.app.health.set('backend', false)
      await waitFor(() => seen.length === 2, { what: 'the change' })
      h.app.health.set('backend', true)
      await waitFor(() => seen.length === 3, { what: 'the recovery' })
      expect(seen).toEqual(['0801', '0802', '0801'])
      call.cancel()
      raw.close()
    })

    it('answers unknown methods with UNIMPLEMENTED', async () => {
      const Client = grpc.makeGenericClientConstructor({}, 'Raw')
      const raw = new Client(h.grpcAddress, grpc.credentials.createInsecure())
      const error = await new Promise<grpc.ServiceError | null>((resolve) => {
        raw.makeUnaryRequest(
          '/envoy.service.ratelimit.v2.RateLimitService/ShouldRateLimit',
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.alloc(0),
          (e) => {
            resolve(e)
          },
        )
      })
      expect(error?.code).toBe(grpc.status.UNIMPLEMENTED)
      raw.close()
    })
  },
)

describe('the native gRPC server on the wire', () => {
  let h: Harness
  beforeAll(async () => {
    h = await startService({ files: { 'basic.yaml': fixture('integration/basic.yaml') } })
  })
  afterAll(async () => {
    await h.close()
  })

  it("answers with grpc-go's headers and trailers: no date header (one less header per call)", async () => {
    // Health/Check answers through the same unary path (sendFramed) as ShouldRateLimit.
    const session = connectHttp2(`http://${h.grpcAddress}`)
    try {
      const answer = await new Promise<{
        headers: IncomingHttpHeaders
        trailers: IncomingHttpHeaders
        data: Buffer
      }>((resolve, reject) => {
        const stream = session.request({
          ':method': 'POST',
          ':path': '/grpc.health.v1.Health/Check',
          'content-type': 'application/grpc',
          te: 'trailers',
        })
        let headers: IncomingHttpHeaders = {}
        const chunks: Buffer[] = []
        stream.on('response', (response: IncomingHttpHeaders) => (headers = response))
        stream.on('data', (chunk: Buffer) => chunks.push(chunk))
        stream.on('trailers', (trailers: IncomingHttpHeaders) => {
          resolve({ headers, trailers, data: Buffer.concat(chunks) })
        })
        stream.on('error', reject)
        stream.end(Buffer.alloc(5))
      })
      expect(Object.fromEntries(Object.entries(answer.headers))).toEqual({
        ':status': 200,
        'content-type': 'application/grpc',
      })
      expect(Object.fromEntries(Object.entries(answer.trailers))).toEqual({ 'grpc-status': '0' })
      // HealthCheckResponse{status: SERVING}, framed.
      expect(answer.data.toString('hex')).toBe('00000000020801')
    } finally {
      session.close()
    }
  })
})
