import { describe, expect, it } from 'vitest'
import { shouldRateLimitMethod } from '../../test/proto.js'
import {
  decodeHealthCheckRequest,
  decodeRateLimitRequest,
  decodeRateLimitResponse,
  encodeHealthCheckResponse,
  encodeRateLimitRequest,
  encodeRateLimitResponse,
} from './protobuf.js'
import type { RateLimitResponse } from './types.js'
import { WireFormatError } from './wire.js'

const serializeRequest = (value: object): Buffer => shouldRateLimitMethod.requestSerialize(value)
const deserializeResponse = (buf: Buffer): unknown => shouldRateLimitMethod.responseDeserialize(buf)

describe('protobuf codec against protobufjs and the .proto files', () => {
  it('decodes every request field', () => {
    const bytes = serializeRequest({
      domain: 'dömain',
      descriptors: [
        { entries: [{ key: 'k1', value: 'v1' }, { key: 'k2' }] },
        {
          entries: [{ key: 'a', value: 'b' }],
          limit: { requestsPerUnit: 42, unit: 'HOUR' },
          hitsAddend: { value: 0 },
        },
        { entries: [{ key: 'c', value: 'd' }], hitsAddend: { value: 2 ** 40 } },
      ],
      hitsAddend: 3,
    })
    expect(decodeRateLimitRequest(bytes)).toEqual({
      domain: 'dömain',
      descriptors: [
        {
          entries: [
            { key: 'k1', value: 'v1' },
            { key: 'k2', value: '' },
          ],
          limit: undefined,
          hitsAddend: undefined,
        },
        {
          entries: [{ key: 'a', value: 'b' }],
          limit: { requestsPerUnit: 42, unit: 'HOUR' },
          hitsAddend: 0,
        },
        { entries: [{ key: 'c', value: 'd' }], limit: undefined, hitsAddend: 2 ** 40 },
      ],
      hitsAddend: 3,
    })
  })

  it('encodes requests that protobufjs reads back', () => {
    const request = {
      domain: 'd',
      descriptors: [
        {
          entries: [{ key: 'k', value: 'v' }],
          limit: { requestsPerUnit: 7, unit: 'MINUTE' as const },
          hitsAddend: 0,
        },
      ],
      hitsAddend: 2,
    }
    const back = shouldRateLimitMethod.requestDeserialize(encodeRateLimitRequest(request))
    expect(back).toEqual({
      domain: 'd',
      descriptors: [
        {
          entries: [{ key: 'k', value: 'v' }],
          limit: { requestsPerUnit: 7, unit: 'MINUTE' },
          hitsAddend: {},
        },
      ],
      hitsAddend: 2,
    })
    expect(decodeRateLimitRequest(encodeRateLimitRequest(request))).toEqual({
      ...request,
      descriptors: [{ ...request.descriptors[0] }],
    })
  })

  it('encodes responses that protobufjs reads back, WEEK and names included', () => {
    const response: RateLimitResponse = {
      overallCode: 'OVER_LIMIT',
      statuses: [
        {
          code: 'OVER_LIMIT',
          currentLimit: { name: 'n', requestsPerUnit: 1, unit: 'WEEK' },
          limitRemaining: 0,
          durationUntilReset: 42,
        },
        { code: 'OK', limitRemaining: 4_294_967_295 },
        { code: 'OK', limitRemaining: 0 },
      ],
      responseHeadersToAdd: [{ key: 'RateLimit-Limit', value: '1' }],
      dynamicMetadata: { domain: 'd', nested: { list: [1, 'two', true, null], empty: {} } },
    }
    const bytes = encodeRateLimitResponse(response)
    expect(deserializeResponse(bytes)).toEqual({
      overallCode: 'OVER_LIMIT',
      statuses: [
        {
          code: 'OVER_LIMIT',
          currentLimit: { name: 'n', requestsPerUnit: 1, unit: 'WEEK' },
          durationUntilReset: { seconds: 42 },
        },
        { code: 'OK', limitRemaining: 4_294_967_295 },
        { code: 'OK' },
      ],
      responseHeadersToAdd: [{ key: 'RateLimit-Limit', value: '1' }],
      dynamicMetadata: {
        fields: {
          domain: { stringValue: 'd' },
          nested: {
            structValue: {
              fields: {
                list: {
                  listValue: {
                    values: [
                      { numberValue: 1 },
                      { stringValue: 'two' },
                      { boolValue: true },
                      { nullValue: 'NULL_VALUE' },
                    ],
                  },
                },
                empty: { structValue: {} },
              },
            },
          },
        },
      },
    })
    expect(decodeRateLimitResponse(bytes)).toEqual({
      ...response,
      statuses: [
        { ...response.statuses[0] },
        {
          code: 'OK',
          currentLimit: undefined,
          limitRemaining: 4_294_967_295,
          durationUntilReset: undefined,
        },
        { code: 'OK', currentLimit: undefined, limitRemaining: 0, durationUntilReset: undefined },
      ],
    })
  })

  it('skips unknown fields and keeps the low 32 bits of uint32 varints', () => {
    // field 9 (varint 1), field 1 "d", field 3 = 2^32 + 5
    const bytes = Buffer.from([0x48, 0x01, 0x0a, 0x01, 0x64, 0x18, 0x85, 0x80, 0x80, 0x80, 0x10])
    expect(decodeRateLimitRequest(bytes)).toEqual({ domain: 'd', descriptors: [], hitsAddend: 5 })
  })

  it('rejects invalid UTF-8 and truncated data', () => {
    expect(() => decodeRateLimitRequest(Buffer.from([0x0a, 0x02, 0xc3, 0x28]))).toThrow(
      new WireFormatError('proto: string field contains invalid UTF-8'),
    )
    expect(() => decodeRateLimitRequest(Buffer.from([0x0a, 0x05, 0x61]))).toThrow(WireFormatError)
    expect(() => decodeRateLimitRequest(Buffer.from([0x18, 0xff]))).toThrow(WireFormatError)
    expect(() => decodeRateLimitRequest(Buffer.from([0x00]))).toThrow(WireFormatError)
    expect(() => decodeRateLimitRequest(Buffer.from([0x0b]))).toThrow(WireFormatError)
  })

  it('encodes health messages', () => {
    expect(
      decodeHealthCheckRequest(Buffer.from([0x0a, 0x09, ...Buffer.from('ratelimit')])),
    ).toEqual({ service: 'ratelimit' })
    expect(encodeHealthCheckResponse('SERVING')).toEqual(Buffer.from([0x08, 0x01]))
    expect(encodeHealthCheckResponse('UNKNOWN')).toEqual(Buffer.alloc(0))
  })
})
