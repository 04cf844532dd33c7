import { describe, expect, it } from 'vitest'
import { formatJsonRateLimitResponse, JsonRequestError, parseJsonRateLimitRequest } from './json.js'
import { RequestLimitError } from './limits.js'

const parse = (text: string | Buffer) =>
  parseJsonRateLimitRequest(typeof text === 'string' ? Buffer.from(text) : text)

function codeOf(text: string | Buffer): string | undefined {
  try {
    parse(text)
  } catch (error) {
    expect(error).toBeInstanceOf(JsonRequestError)
    return (error as JsonRequestError).code
  }
  return undefined
}

describe('proto3 JSON request parsing', () => {
  it('accepts camelCase and snake_case names, numbers as strings, enums by name or number', () => {
    expect(
      parse(
        '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}],"hitsAddend":"2"},' +
          '{"entries":[{"key":"a"}],"limit":{"requests_per_unit":5,"unit":"HOUR"},"hits_addend":0},' +
          '{"entries":[],"limit":{"requestsPerUnit":"6","unit":2}}],"hits_addend":1}',
      ),
    ).toEqual({
      domain: 'd',
      descriptors: [
        { entries: [{ key: 'k', value: 'v' }], limit: undefined, hitsAddend: 2 },
        {
          entries: [{ key: 'a', value: '' }],
          limit: { requestsPerUnit: 5, unit: 'HOUR' },
          hitsAddend: 0,
        },
        { entries: [], limit: { requestsPerUnit: 6, unit: 'MINUTE' }, hitsAddend: undefined },
      ],
      hitsAddend: 1,
    })
  })

  it('treats null as not set', () => {
    expect(parse('{"domain":null,"descriptors":null,"hitsAddend":null}')).toEqual({
      domain: '',
      descriptors: [],
      hitsAddend: 0,
    })
  })

  it.each([
    ['', 'ERR_EMPTY_BODY'],
    ['{', 'ERR_INVALID_JSON'],
    ['[]', 'ERR_INVALID_MESSAGE'],
    ['"x"', 'ERR_INVALID_MESSAGE'],
    ['{"domain":"d","unknown":1}', 'ERR_INVALID_MESSAGE'],
    ['{"domain":"d","hitsAddend":1,"hits_addend":1}', 'ERR_INVALID_MESSAGE'],
    ['{"domain":5}', 'ERR_INVALID_MESSAGE'],
    ['{"descriptors":{}}', 'ERR_INVALID_MESSAGE'],
    ['{"descriptors":[{"entries":[{"key":"k","extra":"x"}]}]}', 'ERR_INVALID_MESSAGE'],
    ['{"descriptors":[{"limit":{"unit":"WEEK"}}]}', 'ERR_INVALID_MESSAGE'],
    ['{"descriptors":[{"limit":{"unit":"FORTNIGHT"}}]}', 'ERR_INVALID_MESSAGE'],
    ['{"hitsAddend":-1}', 'ERR_INVALID_MESSAGE'],
    ['{"hitsAddend":1.5}', 'ERR_INVALID_MESSAGE'],
    ['{"hitsAddend":4294967296}', 'ERR_INVALID_MESSAGE'],
    ['{"__proto__":{}}', 'ERR_INVALID_MESSAGE'],
  ])('rejects %j with %s', (body, code) => {
    expect(codeOf(body)).toBe(code)
  })

  it('refuses requests beyond the caps, counting key and value length in UTF-8 bytes', () => {
    const limits = { maxDescriptors: 2, maxEntries: 2, maxEntryBytes: 4 }
    const parseWith = (body: object) =>
      parseJsonRateLimitRequest(Buffer.from(JSON.stringify(body)), limits)
    const entries = (...pairs: [string, string][]) => ({
      entries: pairs.map(([key, value]) => ({ key, value })),
    })
    expect(
      parseWith({ descriptors: [entries(['k', 'ééé'.slice(0, 2)], ['kkkk', 'v']), entries()] })
        .descriptors,
    ).toHaveLength(2)
    expect(() => parseWith({ descriptors: [{}, {}, {}] })).toThrow(
      new RequestLimitError(
        'rate limit request has more than 2 descriptors (MAX_DESCRIPTORS_PER_REQUEST=2)',
      ),
    )
    expect(() =>
      parseWith({ descriptors: [{}, entries(['a', ''], ['b', ''], ['c', ''])] }),
    ).toThrow(
      new RequestLimitError('descriptor 1 has more than 2 entries (MAX_ENTRIES_PER_DESCRIPTOR=2)'),
    )
    expect(() => parseWith({ descriptors: [entries(['k', 'ééé'])] })).toThrow(
      new RequestLimitError(
        'descriptor 0, entry 0: value is longer than 4 bytes (MAX_DESCRIPTOR_ENTRY_BYTES=4)',
      ),
    )
    expect(() => parseWith({ descriptors: [entries(['k', ''], ['kkkkk', ''])] })).toThrow(
      new RequestLimitError(
        'descriptor 0, entry 1: key is longer than 4 bytes (MAX_DESCRIPTOR_ENTRY_BYTES=4)',
      ),
    )
    // No caps unless given.
    expect(
      parse(JSON.stringify({ descriptors: Array.from({ length: 100 }, () => ({})) })).descriptors,
    ).toHaveLength(100)
  })

  it('rejects bodies that are not UTF-8', () => {
    expect(codeOf(Buffer.from([0x7b, 0x22, 0x64, 0xff, 0x22, 0x7d]))).toBe('ERR_INVALID_UTF8')
  })
})

describe('proto3 JSON response formatting', () => {
  it('writes lowerCamelCase, enum names, durations, and omits zero values', () => {
    expect(
      formatJsonRateLimitResponse({
        overallCode: 'OVER_LIMIT',
        statuses: [
          {
            code: 'OVER_LIMIT',
            currentLimit: { requestsPerUnit: 1, unit: 'MINUTE' },
            limitRemaining: 0,
            durationUntilReset: 42,
          },
          {
            code: 'OK',
            currentLimit: { name: 'n', requestsPerUnit: 2, unit: 'MINUTE' },
            limitRemaining: 1,
            durationUntilReset: 42,
          },
          { code: 'OK', limitRemaining: 4_294_967_295 },
        ],
        responseHeadersToAdd: [{ key: 'RateLimit-Limit', value: '10' }],
      }),
    ).toBe(
      '{"overallCode":"OVER_LIMIT","statuses":[{"code":"OVER_LIMIT","currentLimit":{"requestsPerUnit":1,"unit":"MINUTE"},"durationUntilReset":"42s"},' +
        '{"code":"OK","currentLimit":{"name":"n","requestsPerUnit":2,"unit":"MINUTE"},"limitRemaining":1,"durationUntilReset":"42s"},' +
        '{"code":"OK","limitRemaining":4294967295}],"responseHeadersToAdd":[{"key":"RateLimit-Limit","value":"10"}]}',
    )
  })
})
