/**
 * The algorithm test table (issue 15) every backend runs next to the decision table: the sliding
 * window and the token bucket through gRPC and HTTP `/json`, with the `RateLimit-*` headers, their
 * own keys beside upstream's fixed-window keys, a previous window written by another instance, and
 * the refill. A backend without a token bucket (memcache) checks that such a rule is refused at
 * load instead. Each backend file calls {@link describeAlgorithmTable}.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startService, type Harness } from '../harness.js'
import type { LoadedResponse } from '../proto.js'
import { minuteStart, one, TABLE_NOW, type DecisionBackend } from './decision-table.js'

/** Rules of every algorithm, in domain `algos`. */
export const ALGORITHM_RULES = `domain: algos
descriptors:
  - key: fixed
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: sliding
    rate_limit: { unit: minute, requests_per_unit: 4, algorithm: sliding_window }
`

/** A token bucket: 10 a minute (one every 6 s), at most 3 at once. */
export const BUCKET_RULE = `  - key: bucket
    rate_limit: { unit: minute, requests_per_unit: 10, algorithm: token_bucket, burst: 3 }
`

/** What the table needs to know about a backend besides {@link DecisionBackend}. */
export interface AlgorithmBackendOptions {
  /** The backend runs `token_bucket` rules (memcache refuses them at load). */
  readonly tokenBucket: boolean
}

/**
 * Runs the algorithm table against `backend`, on one service, with `prefix` isolating the keys.
 */
export function describeAlgorithmTable(
  backend: DecisionBackend,
  prefix: string,
  options: AlgorithmBackendOptions,
): void {
  describe(`algorithm table on ${backend.name}`, () => {
    let h: Harness
    const grpc = async (request: object): Promise<LoadedResponse> => {
      const answer = await h.client.shouldRateLimit(request)
      await backend.settle(h)
      return answer
    }
    /** `/json`, parsed (proto3 JSON). */
    const http = async (request: object): Promise<Record<string, unknown>> => {
      const answer = await h.json(request)
      expect(answer.status).toBeLessThan(500)
      await backend.settle(h)
      return JSON.parse(answer.text) as Record<string, unknown>
    }
    const rows = (answer: LoadedResponse) =>
      answer.statuses?.map((s) => [
        s.code,
        s.limitRemaining ?? 0,
        s.durationUntilReset?.seconds ?? 0,
      ])
    const headers = (answer: LoadedResponse): Record<string, string | undefined> =>
      Object.fromEntries(
        (answer.responseHeadersToAdd ?? []).map((x): [string, string | undefined] => [
          x.key ?? '',
          x.value,
        ]),
      )

    beforeAll(async () => {
      h = await startService({
        files: { 'algos.yaml': ALGORITHM_RULES + (options.tokenBucket ? BUCKET_RULE : '') },
        now: TABLE_NOW,
        env: {
          ...backend.env(prefix),
          EXPIRATION_JITTER_MAX_SECONDS: '0',
          LIMIT_RESPONSE_HEADERS_ENABLED: 'true',
        },
      })
      await backend.ready(h)
    })
    afterAll(async () => {
      await h.close()
    })

    it('sliding window (gRPC): allows the limit, counts under its own key, leaves the fixed-window key alone', async () => {
      const request = { domain: 'algos', descriptors: [one('sliding', 'grpc')] }
      const answers: LoadedResponse[] = []
      for (let i = 0; i < 5; i++) answers.push(await grpc(request))
      // 10 s into the minute: allowed ones are back at the end of the next minute (110 s).
      expect(answers.map((a) => rows(a)?.[0])).toEqual([
        ['OK', 3, 110],
        ['OK', 2, 110],
        ['OK', 1, 110],
        ['OK', 0, 110],
        // The refused hit is taken back; 4 counted: one more fits 1 ms into the next minute.
        ['OVER_LIMIT', 0, 50 + 1],
      ])
      expect(headers(answers[3] as LoadedResponse)).toEqual({
        'RateLimit-Limit': '4',
        'RateLimit-Remaining': '0',
        'RateLimit-Reset': '110',
      })
      expect(await backend.read(`${prefix}{swalgos_sliding_grpc_}${String(minuteStart)}`)).toBe(4)
      expect(await backend.read(`${prefix}algos_sliding_grpc_${String(minuteStart)}`)).toBe(
        undefined,
      )
    })

    it('sliding window (HTTP): weighs the previous window another instance counted', async () => {
      await backend.write(`${prefix}{swalgos_sliding_http_}${String(minuteStart - 60)}`, 8, 120)
      const request = {
        domain: 'algos',
        descriptors: [{ entries: [{ key: 'sliding', value: 'http' }] }],
      }
      // 10 s in: floor(8 × 50/60) = 6 from the previous minute, + 1: over 4.
      const over = await http(request)
      expect(over).toMatchObject({ overallCode: 'OVER_LIMIT' })
      h.clock.advance(40_000)
      try {
        // 50 s in: floor(8 × 10/60) = 1, + 1 (the refused one was taken back) = 2: OK, 2 left.
        const ok = await http(request)
        expect(ok).toMatchObject({
          overallCode: 'OK',
          statuses: [
            {
              code: 'OK',
              currentLimit: { requestsPerUnit: 4, unit: 'MINUTE' },
              limitRemaining: 2,
              durationUntilReset: '70s',
            },
          ],
        })
      } finally {
        h.clock.set(TABLE_NOW)
      }
    })

    it('fixed window is unchanged next to them (upstream key)', async () => {
      await grpc({ domain: 'algos', descriptors: [one('fixed', 'same')] })
      expect(await backend.read(`${prefix}algos_fixed_same_${String(minuteStart)}`)).toBe(1)
    })

    if (options.tokenBucket) {
      it('token bucket (gRPC): a burst of 3, then one every 6 s; hits_addend beyond the content takes nothing', async () => {
        const request = { domain: 'algos', descriptors: [one('bucket', 'grpc')] }
        const answers: LoadedResponse[] = []
        for (let i = 0; i < 4; i++) answers.push(await grpc(request))
        expect(answers.map((a) => rows(a)?.[0])).toEqual([
          ['OK', 2, 6],
          ['OK', 1, 12],
          ['OK', 0, 18],
          ['OVER_LIMIT', 0, 6],
        ])
        expect(headers(answers[3] as LoadedResponse)).toEqual({
          'RateLimit-Limit': '10',
          'RateLimit-Remaining': '0',
          'RateLimit-Reset': '6',
        })
        if (backend.ttl !== undefined) {
          const ttl = await backend.ttl(`${prefix}algos_bucket_grpc_tb`)
          expect(ttl).toBeGreaterThan(0)
          expect(ttl).toBeLessThanOrEqual(18)
        }
        h.clock.advance(12_000)
        try {
          const big = await grpc({
            domain: 'algos',
            descriptors: [{ ...one('bucket', 'grpc'), hitsAddend: { value: 3 } }],
          })
          // 2 tokens back; 3 wanted: refused, one more in 6 s.
          expect(rows(big)?.[0]).toEqual(['OVER_LIMIT', 0, 6])
          const two = await grpc({
            domain: 'algos',
            descriptors: [{ ...one('bucket', 'grpc'), hitsAddend: { value: 2 } }],
          })
          expect(rows(two)?.[0]).toEqual(['OK', 0, 18])
        } finally {
          h.clock.set(TABLE_NOW)
        }
      })

      it('token bucket (HTTP): the same bucket whatever the transport', async () => {
        const request = {
          domain: 'algos',
          descriptors: [{ entries: [{ key: 'bucket', value: 'http' }] }],
        }
        expect(await http(request)).toMatchObject({
          overallCode: 'OK',
          statuses: [{ code: 'OK', limitRemaining: 2, durationUntilReset: '6s' }],
        })
        const first = await grpc({ domain: 'algos', descriptors: [one('bucket', 'http')] })
        expect(rows(first)?.[0]).toEqual(['OK', 1, 12])
      })
    } else {
      it('token bucket: refused at load with a clear error, the previous configuration kept', () => {
        const result = h.app.service.loadConfig([
          { name: 'algos.yaml', content: ALGORITHM_RULES + BUCKET_RULE },
        ])
        expect(result.ok ? undefined : result.error.message).toMatch(
          /^algos\.yaml: rate limit algorithm 'token_bucket' is not supported: BACKEND_TYPE=\w+ has no atomic token bucket/,
        )
        expect(h.app.service.config?.dump()).not.toContain('token_bucket')
      })
    }
  })
}
