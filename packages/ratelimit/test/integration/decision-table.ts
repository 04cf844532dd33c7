/**
 * The decision test table every counter backend runs (single Redis, Redis Cluster, Redis
 * Sentinel, memcache): upstream's cache keys, counters shared with other instances, several
 * descriptors in one request, window roll-over and the local over-limit cache, checked both in
 * the answers and in the store itself. Each backend file calls {@link describeDecisionTable} with
 * a {@link DecisionBackend} (the Redis deployments through `describeRedisDecisions`).
 */
import { waitFor } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../fixtures.js'
import { startService, type Harness } from '../harness.js'
import type { LoadedResponse } from '../proto.js'

/** A backend under test, as the table sees it. */
export interface DecisionBackend {
  /** Shown in the test names. */
  readonly name: string
  /** Settings that select it, with `prefix` as `CACHE_KEY_PREFIX`. */
  env(prefix: string): Record<string, string>
  /** The stored counter of `key` (undefined when absent), read with the backend's own client. */
  read(key: string): Promise<number | undefined>
  /** Stores a counter as another instance (or upstream) would. */
  write(key: string, value: number, ttlSeconds: number): Promise<void>
  /** The key's remaining lifetime in seconds, where the backend can tell. */
  readonly ttl?: (key: string) => Promise<number>
  /** Resolves once the service's counting of the calls so far has reached the store. */
  settle(h: Harness): Promise<void>
  /** Waits until the service can use the backend. */
  ready(h: Harness): Promise<void>
}

/** The time every table test starts at: 10 s into a minute. */
export const TABLE_NOW = Date.UTC(2026, 0, 1, 0, 0, 10)
/** {@link TABLE_NOW} in epoch seconds. */
export const NOW_S = TABLE_NOW / 1000
/** The start of {@link TABLE_NOW}'s minute, epoch seconds (in MINUTE keys). */
export const minuteStart = Math.floor(NOW_S / 60) * 60
/** Upstream's integration configs: domains `basic` and `another`. */
export const basic = {
  'basic.yaml': fixture('integration/basic.yaml'),
  'another.yaml': fixture('integration/another.yaml'),
}
/** Resolves once the service's health is OK (the backend answered). */
export async function healthy(h: Harness): Promise<void> {
  await waitFor(() => h.app.health.healthy(), { what: 'the backend to become healthy' })
}

/** A descriptor of one entry. */
export const one = (key: string, value: string) => ({ entries: [{ key, value }] })

/**
 * Runs the table against `backend`, each part on its own service (the second with
 * `LOCAL_CACHE_SIZE_IN_BYTES`), with `prefix` isolating the keys.
 */
export function describeDecisionTable(backend: DecisionBackend, prefix: string): void {
  describe(`decision table on ${backend.name} (upstream-compatible keys)`, () => {
    let h: Harness
    const decide = async (request: object): Promise<LoadedResponse> => {
      const answer = await h.client.shouldRateLimit(request)
      await backend.settle(h)
      return answer
    }

    beforeAll(async () => {
      h = await startService({
        files: basic,
        now: TABLE_NOW,
        env: { ...backend.env(prefix), EXPIRATION_JITTER_MAX_SECONDS: '300' },
      })
      await backend.ready(h)
    })
    afterAll(async () => {
      await h.close()
    })

    it('stores counters under upstream cache keys, living for the window plus jitter', async () => {
      const answer = await decide({ domain: 'basic', descriptors: [one('one_per_minute', 'kv')] })
      expect(answer.overallCode).toBe('OK')
      const key = `${prefix}basic_one_per_minute_kv_${String(minuteStart)}`
      expect(await backend.read(key)).toBe(1)
      if (backend.ttl !== undefined) {
        const ttl = await backend.ttl(key)
        expect(ttl).toBeGreaterThanOrEqual(59)
        expect(ttl).toBeLessThan(360)
      }
      expect(
        (await decide({ domain: 'basic', descriptors: [one('one_per_minute', 'kv')] })).overallCode,
      ).toBe('OVER_LIMIT')
      expect(await backend.read(key)).toBe(2)
    })

    it('continues counters written by another instance (or by upstream) in the same store', async () => {
      const key = `${prefix}another_key2_shared_${String(minuteStart)}`
      await backend.write(key, 18, 60)
      const answer = await decide({ domain: 'another', descriptors: [one('key2', 'shared')] })
      expect(answer.statuses?.[0]?.limitRemaining).toBe(1)
      expect(await backend.read(key)).toBe(19)
      const over = await decide({
        domain: 'another',
        descriptors: [{ ...one('key2', 'shared'), hitsAddend: { value: 2 } }],
      })
      expect(over.statuses?.[0]?.code).toBe('OVER_LIMIT')
      expect(await backend.read(key)).toBe(21)
    })

    it('decides every descriptor of a request, in request order', async () => {
      const answer = await decide({
        domain: 'another',
        descriptors: [one('key3', 'multi'), one('nothing', 'x'), one('key4', 'multi')],
      })
      expect(answer.statuses?.map((s) => [s.code, s.currentLimit?.unit, s.limitRemaining])).toEqual(
        [
          ['OK', 'HOUR', 9],
          ['OK', undefined, undefined],
          ['OK', 'DAY', 19],
        ],
      )
      const hour = Math.floor(NOW_S / 3600) * 3600
      const day = Math.floor(NOW_S / 86400) * 86400
      expect(await backend.read(`${prefix}another_key3_multi_${String(hour)}`)).toBe(1)
      expect(await backend.read(`${prefix}another_key4_multi_${String(day)}`)).toBe(1)
      expect(await backend.read(`${prefix}another_nothing_x_${String(minuteStart)}`)).toBe(
        undefined,
      )
    })

    it('moves to a new key when the window rolls over', async () => {
      const request = { domain: 'basic', descriptors: [one('one_per_minute', 'roll')] }
      await decide(request)
      expect((await decide(request)).overallCode).toBe('OVER_LIMIT')
      h.clock.advance(60_000)
      try {
        expect((await decide(request)).overallCode).toBe('OK')
        expect(
          await backend.read(`${prefix}basic_one_per_minute_roll_${String(minuteStart + 60)}`),
        ).toBe(1)
      } finally {
        h.clock.set(TABLE_NOW)
      }
    })
  })

  describe(`local over-limit cache on ${backend.name}`, () => {
    it('refuses keys it remembers without counting them in the store', async () => {
      const h = await startService({
        files: basic,
        now: TABLE_NOW,
        env: { ...backend.env(`${prefix}lc:`), LOCAL_CACHE_SIZE_IN_BYTES: '1000000' },
      })
      try {
        await backend.ready(h)
        const request = { domain: 'basic', descriptors: [one('one_per_minute', 'local')] }
        for (const expected of ['OK', 'OVER_LIMIT', 'OVER_LIMIT', 'OVER_LIMIT']) {
          expect((await h.client.shouldRateLimit(request)).overallCode).toBe(expected)
          await backend.settle(h)
        }
        // The third and fourth calls never reached the store.
        const key = `${prefix}lc:basic_one_per_minute_local_${String(minuteStart)}`
        expect(await backend.read(key)).toBe(2)
        expect(
          h.stat('ratelimit.service.rate_limit.basic.one_per_minute.over_limit_with_local_cache'),
        ).toBe(2)
        expect(h.stat('ratelimit.localcache.hitCount')).toBe(2)
      } finally {
        await h.close()
      }
    })
  })
}
