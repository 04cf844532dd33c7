/**
 * Issue 32's decisions on every backend against the reference model (`../windows-model.ts`):
 * windows of several units (`unit_multiplier`) and several windows per rule, for the fixed
 * window, the sliding window and the token bucket, on an injected clock. One service per backend;
 * the Redis Cluster and memcached are this file's own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBackends, type TestBackends } from '../backends.js'
import { startService, type Harness } from '../harness.js'
import { checkAgainstModel, MODEL_EPOCH_MS } from '../windows-model.js'

/** Empty at start: each case loads its own rule. */
const FILES = { 'windows.yaml': 'domain: windows\n' }

/**
 * Lifetimes far beyond the test (a constant jitter near its maximum): counters of the fake
 * clock's windows must not expire in real time while a case runs.
 */
const LONG_LIVED = { EXPIRATION_JITTER_MAX_SECONDS: '3600' }
const deps = { random: () => 0.99 }

let backends: TestBackends
beforeAll(async () => {
  backends = await startBackends('ratelimit-windows')
}, 60_000)
afterAll(async () => {
  // Absent when the set-up failed: its own error is the one to read.
  await (backends as TestBackends | undefined)?.stop()
})

const NAMES = ['memory', 'Redis', 'Redis Cluster', 'memcache'] as const

for (const name of NAMES) {
  describe(`windows on ${name}`, () => {
    let h: Harness
    const backend = () => backends.all.find((b) => b.name === name) as TestBackends['all'][number]
    beforeAll(async () => {
      h = await startService({
        files: FILES,
        now: MODEL_EPOCH_MS,
        env: { ...backend().env(), ...LONG_LIVED },
        deps,
      })
      await h.app.store.ready()
    })
    afterAll(async () => {
      await h.close()
    })

    it('decides windows of several units (unit_multiplier) as the model does', async () => {
      await checkAgainstModel(h, () => backend().settle(h), {
        maxWindows: 1,
        tokenBucket: backend().tokenBucket,
        runs: 100,
      })
    })

    it('decides rules of several windows as the model does (the deciding window reported)', async () => {
      await checkAgainstModel(h, () => backend().settle(h), {
        maxWindows: 3,
        tokenBucket: backend().tokenBucket,
        runs: 100,
      })
    })
  })
}

describe('rules of several windows in the service', () => {
  const RULES = `domain: w
descriptors:
  - key: user
    rate_limit:
      - { unit: second, requests_per_unit: 2, name: user_limit }
      - { unit: day, requests_per_unit: 5 }
  - key: vip
    rate_limit:
      - { unit: second, requests_per_unit: 100, replaces: [{ name: user_limit }] }
      - { unit: minute, unit_multiplier: 10, requests_per_unit: 1000 }
  - key: shadow
    shadow_mode: true
    rate_limit: [{ unit: second, requests_per_unit: 1 }, { unit: hour, requests_per_unit: 100 }]
  - key: quota
    quota_mode: true
    rate_limit: [{ unit: second, requests_per_unit: 1 }, { unit: hour, requests_per_unit: 100 }]
  - key: single
    rate_limit: { unit: minute, requests_per_unit: 7 }
`
  let h: Harness
  beforeAll(async () => {
    h = await startService({
      files: { 'w.yaml': RULES },
      now: MODEL_EPOCH_MS,
      env: { BACKEND_TYPE: 'memory', LIMIT_RESPONSE_HEADERS_ENABLED: 'true' },
    })
  })
  afterAll(async () => {
    await h.close()
  })
  const ask = (...keys: string[]) =>
    h.app.service.shouldRateLimit({
      domain: 'w',
      descriptors: keys.map((key) => ({ entries: [{ key, value: 'a' }] })),
      hitsAddend: 0,
    })

  it('lists every window in RateLimit-Policy; the RateLimit-* headers follow the deciding one', async () => {
    const first = await ask('user')
    expect(first.responseHeadersToAdd).toEqual([
      { key: 'RateLimit-Limit', value: '2' },
      { key: 'RateLimit-Remaining', value: '1' },
      { key: 'RateLimit-Reset', value: '1' },
      { key: 'RateLimit-Policy', value: '2;w=1, 5;w=86400' },
    ])
    await ask('user')
    h.clock.advance(1000)
    await ask('user')
    const fourth = await ask('user')
    expect(fourth.overallCode).toBe('OK')
    expect(fourth.statuses[0]).toMatchObject({
      code: 'OK',
      limitRemaining: 0,
      currentLimit: { name: 'user_limit', unit: 'SECOND', requestsPerUnit: 2 },
    })
    const fifth = await ask('user')
    expect(fifth.overallCode).toBe('OVER_LIMIT')
    h.clock.advance(1000)
    // A fresh second, but the day is spent: the day decides and the headers say so.
    const seventh = await ask('user')
    expect(seventh.statuses[0]).toMatchObject({
      code: 'OVER_LIMIT',
      currentLimit: { name: 'user_limit', unit: 'DAY', requestsPerUnit: 5 },
    })
    expect(seventh.responseHeadersToAdd.slice(0, 2)).toEqual([
      { key: 'RateLimit-Limit', value: '5' },
      { key: 'RateLimit-Remaining', value: '0' },
    ])
  })

  it('keeps the headers of one-window rules as they are (no RateLimit-Policy)', async () => {
    const answer = await ask('single')
    expect(answer.responseHeadersToAdd.map((x) => x.key)).toEqual([
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
    ])
  })

  it('applies replaces, shadow_mode and quota_mode per rule', async () => {
    // vip replaces user_limit: the spent user rule does not apply.
    const replaced = await ask('user', 'vip')
    expect(replaced.overallCode).toBe('OK')
    expect(replaced.statuses[0]).toEqual({ code: 'OK', limitRemaining: 0 })
    expect(replaced.statuses[1]?.currentLimit).toMatchObject({
      unit: 'SECOND',
      requestsPerUnit: 100,
    })
    expect(replaced.responseHeadersToAdd.at(-1)).toEqual({
      key: 'RateLimit-Policy',
      value: '100;w=1, 1000;w=600',
    })
    await ask('shadow')
    const shadowed = await ask('shadow')
    expect(shadowed.overallCode).toBe('OK')
    expect(shadowed.statuses[0]).toMatchObject({ code: 'OK', limitRemaining: 0 })
    await ask('quota')
    // Its only quota descriptor is over (by its second): the request is over, as upstream's.
    const quota = await ask('quota', 'single')
    expect(quota.statuses[0]).toMatchObject({
      code: 'OVER_LIMIT',
      currentLimit: { unit: 'SECOND' },
    })
    expect(quota.overallCode).toBe('OVER_LIMIT')
    // With a second quota descriptor not over, quota mode lets the request through.
    const both = await h.app.service.shouldRateLimit({
      domain: 'w',
      descriptors: [
        { entries: [{ key: 'quota', value: 'a' }] },
        { entries: [{ key: 'quota', value: 'b' }] },
      ],
      hitsAddend: 0,
    })
    expect(both.statuses.map((x) => x.code)).toEqual(['OVER_LIMIT', 'OK'])
    expect(both.overallCode).toBe('OK')
  })
})
