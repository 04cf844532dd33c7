import { FakeClock } from '@gatehouse/testing'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { fixture } from '../../test/fixtures.js'
import { BackendError, type CounterStore } from '../limiter/cache.js'
import { StoreRateLimitCache } from '../limiter/store-cache.js'
import { MemoryCounterStore } from '../memory/memory-store.js'
import type { Descriptor, RateLimitRequest } from '../protocol/types.js'
import { StatsManager } from '../stats/manager.js'
import { StatsStore } from '../stats/store.js'
import {
  RateLimitService,
  ShouldRateLimitError,
  UNLIMITED_REMAINING,
  type ServiceOptions,
} from './service.js'

const logger = pino({ level: 'silent' })

function setup(
  options: ServiceOptions = {},
  content = fixture('service/edge.yaml'),
  store?: CounterStore,
) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 0, 0, 30))
  const stats = new StatsStore()
  const manager = new StatsManager(stats)
  const cache = new StoreRateLimitCache({
    store: store ?? new MemoryCounterStore({ clock, sweepIntervalMs: 0 }),
    clock,
    expirationJitterMaxSeconds: 0,
  })
  const service = new RateLimitService({ cache, stats: manager, logger }, options)
  expect(service.loadConfig([{ name: 'example.yaml', content }]).ok).toBe(true)
  const counter = (name: string) => stats.snapshot().find((s) => s.name === name)?.value ?? 0
  return { service, clock, counter }
}

const d = (...pairs: [string, string][]): Descriptor => ({
  entries: pairs.map(([key, value]) => ({ key, value })),
})
const req = (...descriptors: Descriptor[]): RateLimitRequest => ({
  domain: 'edge',
  descriptors,
  hitsAddend: 0,
})

async function errorOf(promise: Promise<unknown>): Promise<ShouldRateLimitError> {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(ShouldRateLimitError)
    return error as ShouldRateLimitError
  }
  throw new Error('expected a ShouldRateLimitError')
}

describe('RateLimitService.shouldRateLimit', () => {
  it('rejects empty domains, empty descriptor lists and a missing configuration with upstream texts', async () => {
    const { service, counter } = setup()
    expect(
      (
        await errorOf(
          service.shouldRateLimit({ domain: '', descriptors: [d(['a', 'b'])], hitsAddend: 0 }),
        )
      ).message,
    ).toBe('rate limit domain must not be empty')
    expect((await errorOf(service.shouldRateLimit(req()))).message).toBe(
      'rate limit descriptor list must not be empty',
    )
    const empty = new RateLimitService({
      cache: new StoreRateLimitCache({
        store: new MemoryCounterStore({ clock: new FakeClock(), sweepIntervalMs: 0 }),
        clock: new FakeClock(),
      }),
      stats: new StatsManager(new StatsStore()),
      logger,
    })
    expect((await errorOf(empty.shouldRateLimit(req(d(['a', 'b']))))).message).toBe(
      'no rate limit configuration loaded',
    )
    expect(counter('ratelimit.service.call.should_rate_limit.service_error')).toBe(2)
  })

  it('answers statuses in request order, OVER_LIMIT when any descriptor is over', async () => {
    const { service } = setup()
    const request = req(
      d(['user', 'x']),
      d(['unknown', 'x']),
      d(['user', 'x'], ['action', 'checkout']),
    )
    const first = await service.shouldRateLimit(request)
    expect(first.overallCode).toBe('OK')
    expect(
      first.statuses.map((s) => [s.code, s.currentLimit?.requestsPerUnit, s.limitRemaining]),
    ).toEqual([
      ['OK', 2, 1],
      ['OK', undefined, 0],
      ['OK', 1, 0],
    ])
    expect(first.statuses[0]!.durationUntilReset).toBe(30)
    const second = await service.shouldRateLimit(request)
    expect(second.overallCode).toBe('OVER_LIMIT')
    expect(second.statuses.map((s) => s.code)).toEqual(['OK', 'OK', 'OVER_LIMIT'])
    expect(second.statuses[2]!.currentLimit).toEqual({
      name: 'per_user_checkout',
      requestsPerUnit: 1,
      unit: 'MINUTE',
    })
  })

  it("drops limits named in a matched rule's replaces (and does not count them)", async () => {
    const { service, counter } = setup()
    const request = req(
      d(['client', 'mobile'], ['route', 'checkout']),
      d(['user', 'x'], ['action', 'checkout']),
    )
    const codes: string[][] = []
    for (let i = 0; i < 3; i++) {
      const r = await service.shouldRateLimit(request)
      codes.push([
        r.overallCode,
        ...r.statuses.map((s) => `${s.code}:${String(s.currentLimit?.requestsPerUnit)}`),
      ])
    }
    expect(codes).toEqual([
      ['OK', 'OK:2', 'OK:undefined'],
      ['OK', 'OK:2', 'OK:undefined'],
      ['OVER_LIMIT', 'OVER_LIMIT:2', 'OK:undefined'],
    ])
    expect(counter('ratelimit.service.rate_limit.edge.user.action_checkout.total_hits')).toBe(0)
    // Without the replacing rule the named one applies again.
    const alone = await service.shouldRateLimit(req(d(['user', 'x'], ['action', 'checkout'])))
    expect(alone.statuses[0]!.currentLimit?.requestsPerUnit).toBe(1)
  })

  it('lets a replacing rule lift a zero limit', async () => {
    const { service } = setup()
    expect(
      (await service.shouldRateLimit(req(d(['user', 'x'], ['action', 'blocked'])))).overallCode,
    ).toBe('OVER_LIMIT')
    const lifted = await service.shouldRateLimit(
      req(d(['user', 'x'], ['action', 'blocked']), d(['client', 'mobile'], ['route', 'unblock'])),
    )
    expect(lifted.overallCode).toBe('OK')
  })

  it('answers unlimited rules without counting', async () => {
    const { service, counter } = setup()
    const r = await service.shouldRateLimit(
      req(d(['health', 'anything']), d(['user', 'x'], ['export', 'y'])),
    )
    expect(r.statuses).toEqual([
      { code: 'OK', limitRemaining: UNLIMITED_REMAINING },
      { code: 'OK', limitRemaining: UNLIMITED_REMAINING },
    ])
    expect(counter('ratelimit.service.rate_limit.edge.health.total_hits')).toBe(0)
  })

  it('reports shadow-mode rules as OK but counts shadow_mode', async () => {
    const { service, counter } = setup()
    const request = req(d(['user', 'x'], ['ip', 'suspect']))
    for (let i = 0; i < 5; i++) {
      const r = await service.shouldRateLimit(request)
      expect(r.overallCode).toBe('OK')
    }
    expect(counter('ratelimit.service.rate_limit.edge.user.ip_suspect.over_limit')).toBe(2)
    expect(counter('ratelimit.service.rate_limit.edge.user.ip_suspect.shadow_mode')).toBe(2)
  })

  it('fails quota descriptors only when all of them are over', async () => {
    const { service } = setup()
    const both = req(d(['quota', 'gold']), d(['quota', 'silver']))
    expect((await service.shouldRateLimit(both)).overallCode).toBe('OK')
    const second = await service.shouldRateLimit(both)
    expect(second.statuses.map((s) => s.code)).toEqual(['OVER_LIMIT', 'OK'])
    expect(second.overallCode).toBe('OK')
    expect((await service.shouldRateLimit(both)).overallCode).toBe('OVER_LIMIT')
  })

  it('applies QUOTA_MODE to every descriptor', async () => {
    const { service } = setup({ quotaMode: true })
    const request = req(d(['user', 'x']), d(['health', 'y']))
    for (let i = 0; i < 3; i++) await service.shouldRateLimit(request)
    const r = await service.shouldRateLimit(request)
    expect(r.statuses[0]!.code).toBe('OVER_LIMIT')
    expect(r.overallCode).toBe('OVER_LIMIT')
    const mixed = await service.shouldRateLimit(req(d(['user', 'x']), d(['tenant', 'z'])))
    expect(mixed.overallCode).toBe('OK')
  })

  it('overrides the overall code in global SHADOW_MODE', async () => {
    const { service, counter } = setup({ globalShadowMode: true })
    const request = req(d(['user', 'x'], ['action', 'checkout']))
    await service.shouldRateLimit(request)
    const r = await service.shouldRateLimit(request)
    expect(r.overallCode).toBe('OK')
    expect(r.statuses[0]!.code).toBe('OVER_LIMIT')
    expect(counter('ratelimit.service.global_shadow_mode')).toBe(1)
  })

  it('adds RateLimit-* headers for the tightest limit, or the last over-limit one', async () => {
    const headers = {
      limit: 'RateLimit-Limit',
      remaining: 'RateLimit-Remaining',
      reset: 'RateLimit-Reset',
    }
    const { service } = setup({ responseHeaders: headers })
    const r = await service.shouldRateLimit(
      req(d(['user', 'x']), d(['user', 'x'], ['action', 'y']), d(['health', 'q'])),
    )
    expect(r.responseHeadersToAdd).toEqual([
      { key: 'RateLimit-Limit', value: '2' },
      { key: 'RateLimit-Remaining', value: '1' },
      { key: 'RateLimit-Reset', value: '30' },
    ])
    await service.shouldRateLimit(req(d(['user', 'z'])))
    const over = await service.shouldRateLimit(
      req(d(['user', 'z'], ['action', 'y']), d(['user', 'z']), d(['user', 'w'])),
    )
    expect(over.responseHeadersToAdd[0]).toEqual({ key: 'RateLimit-Limit', value: '2' })
    expect(over.responseHeadersToAdd[1]).toEqual({ key: 'RateLimit-Remaining', value: '0' })
    expect((await service.shouldRateLimit(req(d(['health', 'q'])))).responseHeadersToAdd).toEqual(
      [],
    )
  })

  it('honours descriptor hits_addend (0 = check only) and the request hits_addend', async () => {
    const { service } = setup()
    const check = await service.shouldRateLimit(req({ ...d(['user', 'a']), hitsAddend: 0 }))
    expect(check.statuses[0]).toMatchObject({ code: 'OK', limitRemaining: 2 })
    const big = await service.shouldRateLimit({
      domain: 'edge',
      descriptors: [d(['user', 'a'])],
      hitsAddend: 3,
    })
    expect(big.statuses[0]!.code).toBe('OVER_LIMIT')
  })

  it('refuses requests beyond the caps as counted service errors (ERR_REQUEST_TOO_LARGE)', async () => {
    const { service, counter } = setup({
      requestLimits: { maxDescriptors: 2, maxEntries: 1, maxEntryBytes: 3 },
    })
    expect(service.requestLimits).toEqual({ maxDescriptors: 2, maxEntries: 1, maxEntryBytes: 3 })
    expect(
      (await service.shouldRateLimit(req(d(['foo', 'abc']), d(['foo', 'é'])))).statuses,
    ).toHaveLength(2)
    const cases: [RateLimitRequest, string][] = [
      [
        req(d(['a', 'b']), d(['a', 'b']), d(['a', 'b'])),
        'rate limit request has more than 2 descriptors (MAX_DESCRIPTORS_PER_REQUEST=2)',
      ],
      [
        req(d(['a', 'b'], ['c', 'd'])),
        'descriptor 0 has more than 1 entries (MAX_ENTRIES_PER_DESCRIPTOR=1)',
      ],
      [
        req(d(['foo', 'x']), d(['foo', 'éé'])),
        'descriptor 1, entry 0: value is longer than 3 bytes (MAX_DESCRIPTOR_ENTRY_BYTES=3)',
      ],
      [
        req(d(['fooo', 'x'])),
        'descriptor 0, entry 0: key is longer than 3 bytes (MAX_DESCRIPTOR_ENTRY_BYTES=3)',
      ],
    ]
    for (const [request, message] of cases) {
      const error = await errorOf(service.shouldRateLimit(request))
      expect(error).toMatchObject({ message, type: 'service_error', code: 'ERR_REQUEST_TOO_LARGE' })
    }
    expect(counter('ratelimit.service.call.should_rate_limit.service_error')).toBe(4)
  })

  it('caps requests at 64 descriptors of 32 entries of 4096-byte keys and values by default', async () => {
    const { service } = setup()
    expect(service.requestLimits).toEqual({
      maxDescriptors: 64,
      maxEntries: 32,
      maxEntryBytes: 4096,
    })
    const many = req(...Array.from({ length: 65 }, () => d(['user', 'x'])))
    expect((await errorOf(service.shouldRateLimit(many))).code).toBe('ERR_REQUEST_TOO_LARGE')
  })

  it('refuses a descriptor hits_addend above 4294967295 (uint32, like the request field)', async () => {
    const { service, counter } = setup()
    const at = await service.shouldRateLimit(
      req({ ...d(['user', 'a']), hitsAddend: 4_294_967_295 }),
    )
    expect(at.overallCode).toBe('OVER_LIMIT')
    const error = await errorOf(
      service.shouldRateLimit(req({ ...d(['user', 'a']), hitsAddend: 4_294_967_296 })),
    )
    expect(error).toMatchObject({
      message: 'descriptor 0: hits_addend must not exceed 4294967295',
      type: 'service_error',
      code: 'ERR_SERVICE',
    })
    expect(counter('ratelimit.service.call.should_rate_limit.service_error')).toBe(1)
  })

  it('applies descriptor limit overrides and rejects an UNKNOWN unit instead of crashing', async () => {
    const { service, counter } = setup()
    const override = {
      ...d(['anything', 'x']),
      limit: { requestsPerUnit: 1, unit: 'SECOND' as const },
    }
    expect((await service.shouldRateLimit(req(override))).statuses[0]).toMatchObject({
      code: 'OK',
      currentLimit: { requestsPerUnit: 1, unit: 'SECOND' },
    })
    expect((await service.shouldRateLimit(req(override))).overallCode).toBe('OVER_LIMIT')
    const bad = { ...d(['anything', 'x']), limit: { requestsPerUnit: 1, unit: 'UNKNOWN' as const } }
    expect((await errorOf(service.shouldRateLimit(req(bad)))).message).toBe(
      'descriptor 0: rate limit override must have a unit other than UNKNOWN',
    )
    expect(counter('ratelimit.service.call.should_rate_limit.service_error')).toBe(1)
  })

  it("counts a descriptor `limit` override in a one-unit window even where the rule has a unit_multiplier (upstream's override has no multiplier)", async () => {
    const { service, clock } = setup(
      {},
      'domain: edge\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 10, unit_multiplier: 5 }\n',
    )
    const rule = await service.shouldRateLimit(req(d(['k', 'rule'])))
    // The rule: a window of 5 minutes from 00:00:00, 30 seconds in.
    expect(rule.statuses[0]).toMatchObject({ code: 'OK', durationUntilReset: 270 })
    const override = { ...d(['k', 'x']), limit: { requestsPerUnit: 1, unit: 'MINUTE' as const } }
    const first = await service.shouldRateLimit(req(override))
    expect(first.statuses[0]).toMatchObject({
      code: 'OK',
      currentLimit: { requestsPerUnit: 1, unit: 'MINUTE' },
      durationUntilReset: 30,
    })
    expect((await service.shouldRateLimit(req(override))).overallCode).toBe('OVER_LIMIT')
    clock.advance(30_000)
    // A new minute: the override's window ended, the rule's 5 minutes have not.
    const next = await service.shouldRateLimit(req(override))
    expect(next.statuses[0]).toMatchObject({ code: 'OK', durationUntilReset: 60 })
  })

  it('starts a new window when the clock rolls over', async () => {
    const { service, clock } = setup()
    const request = req(d(['user', 'x'], ['action', 'checkout']))
    expect((await service.shouldRateLimit(request)).overallCode).toBe('OK')
    expect((await service.shouldRateLimit(request)).overallCode).toBe('OVER_LIMIT')
    clock.advance(29_000)
    expect((await service.shouldRateLimit(request)).overallCode).toBe('OVER_LIMIT')
    clock.advance(1_000)
    const next = await service.shouldRateLimit(request)
    expect(next.overallCode).toBe('OK')
    expect(next.statuses[0]!.durationUntilReset).toBe(60)
  })

  it('returns dynamic metadata of passed descriptors', async () => {
    const { service } = setup({ responseDynamicMetadata: true })
    const r = await service.shouldRateLimit({
      domain: 'edge',
      descriptors: [d(['quota', 'gold']), { ...d(['quota', 'silver']), hitsAddend: 1 }],
      hitsAddend: 1,
    })
    expect(r.dynamicMetadata).toEqual({
      domain: 'edge',
      descriptors: [{ entries: ['quota=gold'] }, { entries: ['quota=silver'], hitsAddend: 1 }],
      hitsAddend: 1,
      metadata: { billing: { plan: 'gold' } },
    })
  })

  it('turns backend failures into redis_error', async () => {
    const failing: CounterStore = {
      increment: () => Promise.reject(new BackendError('connect ECONNREFUSED 127.0.0.1:1')),
      get: () => Promise.resolve([]),
      ready: () => Promise.resolve(),
      close: () => Promise.resolve(),
    }
    const { service, counter } = setup({}, fixture('service/edge.yaml'), failing)
    const error = await errorOf(service.shouldRateLimit(req(d(['user', 'x']))))
    expect(error).toMatchObject({
      type: 'redis_error',
      message: 'connect ECONNREFUSED 127.0.0.1:1',
    })
    expect(counter('ratelimit.service.call.should_rate_limit.redis_error')).toBe(1)
  })

  it('keeps the previous configuration when a reload fails', () => {
    const { service, counter } = setup()
    const before = service.config
    const result = service.loadConfig([{ name: 'bad.yaml', content: 'domain: x\nbogus: 1\n' }])
    expect(result.ok ? undefined : result.error.message).toBe(
      "bad.yaml: config error, unknown key 'bogus'",
    )
    expect(service.config).toBe(before)
    expect(counter('ratelimit.service.config_load_error')).toBe(1)
    expect(counter('ratelimit.service.config_load_success')).toBe(1)
  })
})

describe('independentDescriptors (what allows clients to coalesce requests)', () => {
  const plain =
    'domain: rl\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1}\n'

  it('holds for a plain configuration, and not before one is loaded', () => {
    const stats = new StatsManager(new StatsStore())
    const clock = new FakeClock(0)
    const cache = new StoreRateLimitCache({
      store: new MemoryCounterStore({ clock, sweepIntervalMs: 0 }),
      clock,
    })
    const service = new RateLimitService({ cache, stats, logger })
    expect(service.independentDescriptors).toBe(false)
    expect(service.loadConfig([{ name: 'plain.yaml', content: plain }]).ok).toBe(true)
    expect(service.independentDescriptors).toBe(true)
  })

  it.each([
    ['the cache couples them (STOP rule)', { cacheCouplesDescriptors: true }, plain],
    ['QUOTA_MODE', { quotaMode: true }, plain],
    [
      'a rule with quota_mode',
      {},
      'domain: rl\ndescriptors:\n  - key: q\n    descriptors:\n      - key: r\n        quota_mode: true\n        rate_limit: {unit: minute, requests_per_unit: 1}\n',
    ],
    ['a rule with replaces (edge.yaml)', {}, fixture('service/edge.yaml')],
  ])('does not hold with %s', (_name, options: ServiceOptions, content) => {
    expect(setup(options, content).service.independentDescriptors).toBe(false)
  })

  it('follows configuration reloads', () => {
    const { service } = setup({}, fixture('service/edge.yaml'))
    expect(service.loadConfig([{ name: 'plain.yaml', content: plain }]).ok).toBe(true)
    expect(service.independentDescriptors).toBe(true)
  })
})
