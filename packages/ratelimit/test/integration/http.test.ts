import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../fixtures.js'
import { startService, type Harness } from '../harness.js'

describe('HTTP /json, /healthcheck and the debug server (memory backend)', () => {
  let h: Harness

  beforeAll(async () => {
    h = await startService({
      files: {
        'basic.yaml': fixture('integration/basic.yaml'),
        'example.yaml': fixture('service/edge.yaml'),
      },
      now: Date.UTC(2026, 0, 1, 0, 0, 18),
    })
  })
  afterAll(async () => {
    await h.close()
  })

  it('answers 200 then 429 with the proto3 JSON body', async () => {
    const body = {
      domain: 'basic',
      descriptors: [{ entries: [{ key: 'one_per_minute', value: 'http' }] }],
    }
    const first = await h.json(body)
    expect(first.status).toBe(200)
    expect(first.headers.get('content-type')).toBe('application/json')
    expect(first.text).toBe(
      '{"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"requestsPerUnit":1,"unit":"MINUTE"},"durationUntilReset":"42s"}]}',
    )
    const second = await h.json(body)
    expect(second.status).toBe(429)
    expect(JSON.parse(second.text)).toEqual({
      overallCode: 'OVER_LIMIT',
      statuses: [
        {
          code: 'OVER_LIMIT',
          currentLimit: { requestsPerUnit: 1, unit: 'MINUTE' },
          durationUntilReset: '42s',
        },
      ],
    })
  })

  it('accepts snake_case names, enum numbers and 64-bit numbers as strings', async () => {
    const answer = await h.json(
      '{"domain":"basic","descriptors":[{"entries":[{"key":"key1","value":"snake"}],"hits_addend":"3"},' +
        '{"entries":[{"key":"x","value":"y"}],"limit":{"requests_per_unit":5,"unit":3}}],"hits_addend":2}',
    )
    expect(answer.status).toBe(200)
    expect(JSON.parse(answer.text)).toEqual({
      overallCode: 'OK',
      statuses: [
        {
          code: 'OK',
          currentLimit: { requestsPerUnit: 50, unit: 'SECOND' },
          limitRemaining: 47,
          durationUntilReset: '1s',
        },
        {
          code: 'OK',
          currentLimit: { requestsPerUnit: 5, unit: 'HOUR' },
          limitRemaining: 3,
          durationUntilReset: '3582s',
        },
      ],
    })
  })

  it('answers unknown domains with 200 and unlimited descriptors with the largest remaining', async () => {
    const unknown = await h.json({
      domain: 'nowhere',
      descriptors: [{ entries: [{ key: 'a', value: 'b' }] }],
    })
    expect([unknown.status, unknown.text]).toEqual([
      200,
      '{"overallCode":"OK","statuses":[{"code":"OK"}]}',
    ])
    const unlimited = await h.json({
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'health', value: 'q' }] }],
    })
    expect(unlimited.text).toBe(
      '{"overallCode":"OK","statuses":[{"code":"OK","limitRemaining":4294967295}]}',
    )
  })

  it.each([
    ['an empty body', '', 'ERR_EMPTY_BODY'],
    ['malformed JSON', '{"domain":', 'ERR_INVALID_JSON'],
    [
      'an unknown field',
      '{"domain":"basic","descriptors":[{"entries":[]}],"extra":true}',
      'ERR_INVALID_MESSAGE',
    ],
    ['a wrong type', '{"domain":"basic","descriptors":"nope"}', 'ERR_INVALID_MESSAGE'],
    [
      'an empty domain',
      '{"domain":"","descriptors":[{"entries":[{"key":"a","value":"b"}]}]}',
      'ERR_SERVICE',
    ],
    ['no descriptors', '{"domain":"basic","descriptors":[]}', 'ERR_SERVICE'],
    [
      'non-UTF-8 bytes',
      Buffer.from([
        0x7b, 0x22, 0x64, 0x6f, 0x6d, 0x61, 0x69, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d,
      ]),
      'ERR_INVALID_UTF8',
    ],
  ])('answers %s with 400 Bad Request', async (_what, body, code) => {
    const answer = await h.json(body)
    expect(answer.status).toBe(400)
    expect(answer.text).toBe('Bad Request\n')
    expect(answer.headers.get('content-type')).toBe('text/plain; charset=utf-8')
    expect(answer.headers.get('x-gatehouse-error-code')).toBe(code)
  })

  it('explains service errors in a header, with upstream wording', async () => {
    const answer = await h.json('{"domain":"basic","descriptors":[]}')
    expect(answer.headers.get('x-gatehouse-error')).toBe(
      'rate limit descriptor list must not be empty',
    )
  })

  it('decides up to the default caps, refuses more with 400 and oversized bodies with 413', async () => {
    const descriptors = (count: number) => ({
      domain: 'basic',
      descriptors: Array.from({ length: count }, (_, i) => ({
        entries: [{ key: 'key1', value: `v${String(i)}` }],
      })),
    })
    const answer = await h.json(descriptors(64))
    expect(answer.status).toBe(200)
    expect((JSON.parse(answer.text) as { statuses: unknown[] }).statuses).toHaveLength(64)
    const many = await h.json(descriptors(2000))
    expect(many.status).toBe(400)
    expect(many.headers.get('x-gatehouse-error-code')).toBe('ERR_REQUEST_TOO_LARGE')
    expect(many.headers.get('x-gatehouse-error')).toBe(
      'rate limit request has more than 64 descriptors (MAX_DESCRIPTORS_PER_REQUEST=64)',
    )
    const tooLarge = await h.json({
      domain: 'basic',
      descriptors: [{ entries: [{ key: 'key1', value: 'x'.repeat(5 * 1024 * 1024) }] }],
    })
    expect(tooLarge.status).toBe(413)
    expect(tooLarge.headers.get('x-gatehouse-error-code')).toBe('ERR_BODY_TOO_LARGE')
    expect((await h.get('/healthcheck')).status).toBe(200)
  })

  it('serves /json with any method and ignores the query string', async () => {
    const response = await fetch(`${h.httpUrl}/json?x=1`, {
      method: 'PUT',
      body: '{"domain":"basic","descriptors":[{"entries":[{"key":"key1","value":"put"}]}]}',
    })
    expect(response.status).toBe(200)
  })

  it("answers /healthcheck with OK and other paths with Go's 404", async () => {
    expect(await h.get('/healthcheck')).toMatchObject({ status: 200, text: 'OK' })
    expect(await h.get('/nothing')).toMatchObject({ status: 404, text: '404 page not found\n' })
  })

  it('lists debug endpoints and prints the configuration in upstream format', async () => {
    const index = await h.get('/', 'debug')
    expect(index.text).toBe(
      '/debug/pprof/: root of various pprof endpoints. hit for help.\n' +
        '/debug/pprof/profile: CPU profiling endpoint\n' +
        '/rlconfig: print out the currently loaded configuration for debugging\n' +
        '/stats: print out stats\n',
    )
    expect((await h.get('/anything', 'debug')).text).toBe(index.text)
    const config = (await h.get('/rlconfig', 'debug')).text.split('\n')
    expect(config).toContain(
      'basic.one_per_minute: unit=MINUTE requests_per_unit=1, shadow_mode: false, quota_mode: false',
    )
    expect(config).toContain(
      'edge.user.ip_suspect: unit=MINUTE requests_per_unit=3, shadow_mode: true, quota_mode: false',
    )
  })

  it('prints our own counters on /stats', async () => {
    await h.json({ domain: 'basic', descriptors: [{ entries: [{ key: 'key1', value: 'stats' }] }] })
    const lines = (await h.get('/stats', 'debug')).text.split('\n')
    expect(lines).toContain('ratelimit.service.config_load_success: 1')
    expect(lines).toContain(
      `ratelimit.service.rate_limit.basic.key1.total_hits: ${String(h.stat('ratelimit.service.rate_limit.basic.key1.total_hits'))}`,
    )
    expect(
      lines.find((l) => l.startsWith('ratelimit.service.call.should_rate_limit.service_error: ')),
    ).toBeDefined()
  })

  it('records a CPU profile', async () => {
    const bad = await h.get('/debug/pprof/profile?seconds=0', 'debug')
    expect(bad.status).toBe(400)
    const profile = await h.get('/debug/pprof/profile?seconds=0.2', 'debug')
    expect(profile.status).toBe(200)
    expect(profile.headers.get('content-disposition')).toBe(
      'attachment; filename="ratelimit.cpuprofile"',
    )
    const parsed = JSON.parse(profile.text) as { nodes: unknown[]; startTime: number }
    expect(parsed.nodes.length).toBeGreaterThan(0)
  })
})
