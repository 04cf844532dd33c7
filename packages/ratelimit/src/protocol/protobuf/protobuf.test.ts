import { describe, expect, it } from 'vitest'
import { shouldRateLimitMethod } from '../../../test/proto.js'
import { RequestLimitError } from '../limits.js'
import type { RateLimitResponse } from '../types.js'
import { decodeHealthCheckRequest, encodeHealthCheckResponse } from './health.js'
import { decodeRateLimitRequest, encodeRateLimitRequest } from './request.js'
import { decodeRateLimitResponse, encodeRateLimitResponse } from './response.js'
import { WireFormatError } from './wire.js'
import { formatJsonRateLimitResponse } from '../json.js'

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

  it('checks every nested length against its enclosing message, not the whole buffer', () => {
    /** A length-delimited field (payload under 128 bytes). */
    const field = (number: number, payload: Buffer | number[]): Buffer =>
      Buffer.concat([Buffer.from([(number << 3) | 2, payload.length]), Buffer.from(payload)])
    const invalid = new WireFormatError('proto: cannot parse invalid wire-format data')
    const request = (entry: Buffer | number[]): Buffer =>
      Buffer.concat([
        field(2, field(1, entry)),
        // Bytes after the descriptor, which a nested length must not reach into.
        field(1, Buffer.from('domain-after-the-descriptor')),
      ])
    // Entry.key claims 5 bytes; its entry holds 1.
    expect(() => decodeRateLimitRequest(request([0x0a, 0x05, 0x6b]))).toThrow(invalid)
    // The same with an unknown length-delimited field, which is skipped.
    expect(() => decodeRateLimitRequest(request([0x2a, 0x05, 0x6b]))).toThrow(invalid)
    // A varint and a fixed64 running past the end of the entry.
    expect(() => decodeRateLimitRequest(request([0x28, 0x80]))).toThrow(invalid)
    expect(() => decodeRateLimitRequest(request([0x29, 0, 0, 0]))).toThrow(invalid)
    // The override's requests_per_unit varint, and the descriptor hits_addend's value.
    expect(() => decodeRateLimitRequest(field(2, field(2, [0x08, 0x80])))).toThrow(invalid)
    expect(() =>
      decodeRateLimitRequest(Buffer.concat([field(2, field(3, [0x08])), Buffer.from([0x05])])),
    ).toThrow(invalid)
    // Well-formed nesting still decodes.
    expect(decodeRateLimitRequest(request([0x0a, 0x01, 0x6b])).descriptors).toEqual([
      { entries: [{ key: 'k', value: '' }], limit: undefined, hitsAddend: undefined },
    ])
  })

  it('does not let every entry claim a string beyond itself (memory amplification)', () => {
    // 200 entries of 6 bytes, each claiming a 16450-byte key that runs over the following
    // entries into a padding field. The varint C2 80 01 (16450) is valid UTF-8, so checked
    // against the whole buffer every claim decoded: 200 strings of 16 KB from 34 KB of input.
    const entry = Buffer.from([0x0a, 0x04, 0x0a, 0xc2, 0x80, 0x01])
    const entries = Buffer.concat(Array.from({ length: 200 }, () => entry))
    const bytes = Buffer.concat([
      Buffer.from([0x12, 0x80 | (entries.length & 0x7f), entries.length >> 7]),
      entries,
      // Unknown field 15, 32834 bytes (varint C2 80 02, valid UTF-8 too).
      Buffer.from([0x7a, 0xc2, 0x80, 0x02]),
      Buffer.alloc(32_834, 'a'),
    ])
    expect(() => decodeRateLimitRequest(bytes)).toThrow(
      new WireFormatError('proto: cannot parse invalid wire-format data'),
    )
  })

  it('checks nested lengths in responses and google.protobuf.Struct too', () => {
    const invalid = new WireFormatError('proto: cannot parse invalid wire-format data')
    // A status whose current_limit.name claims more bytes than the status holds.
    const status = Buffer.from([0x12, 0x04, 0x12, 0x02, 0x1a, 0x09])
    const header = Buffer.from([0x1a, 0x08, 0x0a, 0x06, ...Buffer.from('abcdef')])
    expect(() => decodeRateLimitResponse(Buffer.concat([status, header]))).toThrow(invalid)
    // dynamic_metadata: a Struct field whose key runs past the field entry.
    const struct = Buffer.from([0x32, 0x04, 0x0a, 0x02, 0x0a, 0x06])
    const codes = Buffer.from([0x08, 0x01, 0x08, 0x01, 0x08, 0x01, 0x08, 0x01])
    expect(() => decodeRateLimitResponse(Buffer.concat([struct, codes]))).toThrow(invalid)
  })

  it('refuses requests beyond the caps while decoding, counting lengths in UTF-8 bytes', () => {
    const limits = { maxDescriptors: 2, maxEntries: 2, maxEntryBytes: 4 }
    const decode = (request: object) => decodeRateLimitRequest(serializeRequest(request), limits)
    const entries = (...pairs: [string, string][]) => ({
      entries: pairs.map(([key, value]) => ({ key, value })),
    })
    expect(
      decode({ domain: 'd', descriptors: [entries(['k', 'éé'], ['kkkk', 'v']), entries()] })
        .descriptors,
    ).toHaveLength(2)
    expect(() => decode({ descriptors: [{}, {}, {}] })).toThrow(
      new RequestLimitError(
        'rate limit request has more than 2 descriptors (MAX_DESCRIPTORS_PER_REQUEST=2)',
      ),
    )
    expect(() => decode({ descriptors: [{}, entries(['a', ''], ['b', ''], ['c', ''])] })).toThrow(
      new RequestLimitError('descriptor 1 has more than 2 entries (MAX_ENTRIES_PER_DESCRIPTOR=2)'),
    )
    expect(() => decode({ descriptors: [entries(['k', 'ééé'])] })).toThrow(
      new RequestLimitError(
        'descriptor 0, entry 0: value is longer than 4 bytes (MAX_DESCRIPTOR_ENTRY_BYTES=4)',
      ),
    )
    expect(() => decode({ descriptors: [entries(['k', ''], ['kkkkk', ''])] })).toThrow(
      new RequestLimitError(
        'descriptor 0, entry 1: key is longer than 4 bytes (MAX_DESCRIPTOR_ENTRY_BYTES=4)',
      ),
    )
    // No caps unless given.
    const many = serializeRequest({ descriptors: Array.from({ length: 100 }, () => ({})) })
    expect(decodeRateLimitRequest(many).descriptors).toHaveLength(100)
  })

  it('encodes health messages', () => {
    expect(
      decodeHealthCheckRequest(Buffer.from([0x0a, 0x09, ...Buffer.from('ratelimit')])),
    ).toEqual({ service: 'ratelimit' })
    expect(encodeHealthCheckResponse('SERVING')).toEqual(Buffer.from([0x08, 0x01]))
    expect(encodeHealthCheckResponse('UNKNOWN')).toEqual(Buffer.alloc(0))
  })
})

describe('unit_multiplier in RateLimitResponse.RateLimit (issue 32, Envoy PR #47307)', () => {
  const response = (unitMultiplier?: number): RateLimitResponse => ({
    overallCode: 'OK',
    statuses: [
      {
        code: 'OK',
        currentLimit: {
          requestsPerUnit: 10,
          unit: 'MINUTE',
          ...(unitMultiplier === undefined ? {} : { unitMultiplier }),
        },
        limitRemaining: 9,
        durationUntilReset: 120,
      },
    ],
    responseHeadersToAdd: [],
  })

  it('writes field 4 as a UInt32Value only for windows of several units, and reads it back', () => {
    const plain = encodeRateLimitResponse(response())
    const windowed = encodeRateLimitResponse(response(5))
    // The UInt32Value message: tag 4/LEN (0x22), length 2, then field 1 = 5 (0x08 0x05).
    expect(windowed.length - plain.length).toBe(4)
    expect(windowed.includes(Buffer.from([0x22, 0x02, 0x08, 0x05]))).toBe(true)
    expect(decodeRateLimitResponse(windowed)).toEqual(response(5))
    expect(decodeRateLimitResponse(plain)).toEqual(response())
  })

  it('writes it in /json as unitMultiplier', () => {
    expect(formatJsonRateLimitResponse(response(5))).toContain(
      '"currentLimit":{"requestsPerUnit":10,"unit":"MINUTE","unitMultiplier":5}',
    )
    expect(formatJsonRateLimitResponse(response())).not.toContain('unitMultiplier')
  })
})
