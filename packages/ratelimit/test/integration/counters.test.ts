/**
 * The counter API (issue 32): `GET` and `DELETE /counters` on the HTTP port, off without
 * `ADMIN_API_TOKEN`, refused without the bearer token or with a wrong one, and inspecting and
 * resetting every algorithm's counters (several windows, `unit_multiplier`) on every backend.
 */
import { request as httpRequest } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBackends, type TestBackend, type TestBackends } from '../backends.js'
import { startService, type Harness } from '../harness.js'

const TOKEN = 'admin-token-for-tests-0123456789'
const NOW = Date.UTC(2026, 0, 1, 0, 0, 10)
const RULES = (tokenBucket: boolean) => `domain: c
descriptors:
  - key: user
    rate_limit:
      # 60 one-second units, not one: a real memcached expires a 1 s key at its next clock tick,
      # which the frozen service clock of this test would not see coming.
      - { unit: second, unit_multiplier: 60, requests_per_unit: 2 }
      - { unit: minute, unit_multiplier: 5, requests_per_unit: 10, algorithm: sliding_window }
${tokenBucket ? '      - { unit: hour, requests_per_unit: 6, algorithm: token_bucket, burst: 3 }\n' : ''}  - key: free
    rate_limit: { unlimited: true }
`
const body = (value: string) =>
  JSON.stringify({
    domain: 'c',
    descriptors: [
      { entries: [{ key: 'user', value }] },
      { entries: [{ key: 'free', value }] },
      { entries: [{ key: 'nothing', value }] },
    ],
  })

/** An HTTP call with a body whatever the method (`fetch` sends none with GET). */
function send(
  url: string,
  method: string,
  payload: string,
  headers: Record<string, string> = {},
): Promise<{
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
}> {
  return new Promise((resolve, reject) => {
    const length = { 'content-length': String(Buffer.byteLength(payload)) }
    const req = httpRequest(url, { method, headers: { ...headers, ...length } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: Buffer.concat(chunks).toString(),
        })
      })
    })
    req.on('error', reject)
    req.end(payload)
  })
}

let backends: TestBackends
beforeAll(async () => {
  backends = await startBackends('ratelimit-counters')
}, 60_000)
afterAll(async () => {
  // Absent when the set-up failed: its own error is the one to read.
  await (backends as TestBackends | undefined)?.stop()
})

describe('counter API access', () => {
  let off: Harness
  let on: Harness
  beforeAll(async () => {
    ;[off, on] = await Promise.all([
      startService({ files: { 'c.yaml': RULES(true) }, now: NOW }),
      startService({ files: { 'c.yaml': RULES(true) }, now: NOW, env: { ADMIN_API_TOKEN: TOKEN } }),
    ])
  })
  afterAll(async () => {
    await Promise.all([off.close(), on.close()])
  })
  const call = (h: Harness, method: string, headers: Record<string, string> = {}) =>
    send(`${h.httpUrl}/counters`, method, body('a'), headers)

  it('answers 404 without ADMIN_API_TOKEN, as an unknown path', async () => {
    const answer = await call(off, 'GET', { authorization: `Bearer ${TOKEN}` })
    expect(answer.status).toBe(404)
    expect(answer.text).toBe('404 page not found\n')
  })

  it('refuses calls without the token or with a wrong one, and counts them', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'Bearer wrong' },
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: `Basic ${TOKEN}` },
    ]
    for (const headers of attempts) {
      const answer = await call(on, 'DELETE', headers)
      expect(answer.status).toBe(401)
      expect(answer.headers['www-authenticate']).toBe('Bearer')
      expect(answer.headers['x-gatehouse-error-code']).toBe('ERR_UNAUTHORIZED')
    }
    expect(on.stat('ratelimit.service.admin.counters.unauthorized')).toBe(4)
    expect(on.stat('ratelimit.service.admin.counters.delete')).toBe(0)
  })

  it('refuses other methods and bad bodies with clear errors', async () => {
    const post = await call(on, 'POST', { authorization: `Bearer ${TOKEN}` })
    expect(post.status).toBe(405)
    expect(post.headers.allow).toBe('GET, DELETE')
    const bad = await send(`${on.httpUrl}/counters`, 'GET', '{"domain":', {
      authorization: `Bearer ${TOKEN}`,
    })
    expect(bad.status).toBe(400)
    expect(bad.headers['x-gatehouse-error-code']).toBe('ERR_INVALID_JSON')
  })
})

for (const name of ['memory', 'Redis', 'Redis Cluster', 'memcache'] as const) {
  describe(`counter API on ${name}`, () => {
    let h: Harness
    let backend: TestBackend
    beforeAll(async () => {
      backend = backends.all.find((b) => b.name === name) as TestBackend
      h = await startService({
        files: { 'c.yaml': RULES(backend.tokenBucket) },
        now: NOW,
        env: { ...backend.env(), ADMIN_API_TOKEN: TOKEN, LOCAL_CACHE_SIZE_IN_BYTES: '1048576' },
      })
    })
    afterAll(async () => {
      await h.close()
    })
    const counters = async (method: 'GET' | 'DELETE', value: string) => {
      const answer = await send(`${h.httpUrl}/counters`, method, body(value), {
        authorization: `Bearer ${TOKEN}`,
      })
      expect(answer.status, answer.text).toBe(200)
      return JSON.parse(answer.text) as {
        reset: boolean
        descriptors: {
          limited: boolean
          windows: {
            algorithm: string
            count: number
            remaining: number
            resetSeconds: number
            state: object
          }[]
        }[]
      }
    }
    const hit = async (value: string) => {
      const answer = await h.json({
        domain: 'c',
        descriptors: [{ entries: [{ key: 'user', value }] }],
      })
      await backend.settle(h)
      return answer.status
    }

    it('inspects each window of a descriptor, then resets them so requests pass again', async () => {
      const value = `v${String(Date.now())}`
      expect(await hit(value)).toBe(200)
      expect(await hit(value)).toBe(200)
      expect(await hit(value)).toBe(429)
      const seen = await counters('GET', value)
      expect(seen.reset).toBe(false)
      expect(seen.descriptors.map((d) => d.limited)).toEqual([true, false, false])
      const [fixed, sliding, bucket] = seen.descriptors[0]?.windows ?? []
      // The fixed window counts every hit (3 > 2); the sliding window only the allowed ones.
      expect(fixed).toEqual({
        unit: 'SECOND',
        unitMultiplier: 60,
        requestsPerUnit: 2,
        algorithm: 'fixed_window',
        count: 3,
        remaining: 0,
        resetSeconds: 50,
        state: {},
      })
      expect(sliding).toMatchObject({
        unit: 'MINUTE',
        unitMultiplier: 5,
        algorithm: 'sliding_window',
        count: 3,
        remaining: 7,
        state: { current: 3, previous: 0 },
      })
      if (backend.tokenBucket) {
        expect(bucket).toMatchObject({
          algorithm: 'token_bucket',
          count: 3,
          remaining: 0,
          state: { tokens: 0, burst: 3 },
        })
      } else expect(bucket).toBeUndefined()
      // Inspecting counted nothing.
      expect((await counters('GET', value)).descriptors[0]?.windows[0]?.count).toBe(3)

      const reset = await counters('DELETE', value)
      expect(reset.reset).toBe(true)
      expect(reset.descriptors[0]?.windows[0]?.count).toBe(3)
      await backend.settle(h)
      const after = await counters('GET', value)
      expect(after.descriptors[0]?.windows.map((w) => w.count)).toEqual(
        backend.tokenBucket ? [0, 0, 0] : [0, 0],
      )
      // The local over-limit cache forgot the fixed window's key too: the next request passes.
      expect(await hit(value)).toBe(200)
      expect(h.stat('ratelimit.service.admin.counters.delete')).toBe(1)
    })
  })
}
