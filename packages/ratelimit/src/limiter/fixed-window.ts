/**
 * The fixed-window algorithm shared by every backend (upstream `base_limiter.go` +
 * `fixed_cache_impl.go`): cache keys per window, hits addends, the local over-limit cache,
 * `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`, and the near/over/within stat arithmetic.
 *
 * @module
 */
import { systemRandom, type Clock, type Random } from '../clock.js'
import type { RateLimit } from '../config/config.js'
import type { CurrentLimit, DescriptorStatus, RateLimitRequest } from '../protocol/types.js'
import { endWhenSettled, type TraceSpan, type Tracing } from '../telemetry/tracing.js'
import { BackendError, type CounterStore, type IncrementOp, type RateLimitCache } from './cache.js'
import { generateCacheKey, type CacheKey } from './cache-key.js'
import type { LocalCache } from './local-cache.js'
import { unitSeconds } from './units.js'

/**
 * The near-limit threshold: `floor(float32(limit) * float32(ratio))`, computed in single
 * precision as upstream does.
 */
export function nearLimitThreshold(limit: number, ratio: number): number {
  return Math.floor(Math.fround(Math.fround(limit) * Math.fround(ratio)))
}

/**
 * The hits each descriptor adds (upstream `GetHitsAddends`): the descriptor's own `hits_addend`
 * when set (0 allowed: check only), else the request's, at least 1.
 */
export function hitsAddends(request: RateLimitRequest): number[] {
  const fallback = Math.max(1, request.hitsAddend)
  return request.descriptors.map((d) => d.hitsAddend ?? fallback)
}

/** Input of {@link decideStatus}. */
export interface DecisionInput {
  readonly limit: RateLimit
  /** Hits this request adds for the descriptor. */
  readonly hitsAddend: number
  /** Counter value after the increment (ignored for local-cache hits). */
  readonly after: number
  /** The key was in the local over-limit cache (no store access). */
  readonly localCacheHit: boolean
  readonly nearLimitRatio: number
  /** Current time, epoch seconds. */
  readonly nowSeconds: number
}

/** Output of {@link decideStatus}. */
export interface Decision {
  readonly status: DescriptorStatus
  /** The key went over its limit: remember it in the local cache. */
  readonly overLimit: boolean
}

/**
 * Decides one descriptor and updates its stats exactly as upstream's
 * `GetResponseDescriptorStatus`: `before = after - hitsAddend`; over the limit adds to
 * `over_limit` only the hits beyond the limit (and the rest between the near threshold and the
 * limit to `near_limit`); within the limit adds to `within_limit`, and to `near_limit` the hits
 * above the threshold. Shadow-mode rules report OK and count `shadow_mode`.
 */
export function decideStatus(input: DecisionInput): Decision {
  const { limit, hitsAddend, after, localCacheHit, nowSeconds } = input
  const stats = limit.stats
  const rpu = limit.requestsPerUnit
  const divider = unitSeconds(limit.unit)
  const durationUntilReset = divider - (nowSeconds % divider)
  const currentLimit: CurrentLimit =
    limit.name === undefined
      ? { requestsPerUnit: rpu, unit: limit.unit }
      : { name: limit.name, requestsPerUnit: rpu, unit: limit.unit }

  if (localCacheHit) {
    stats.overLimit.add(hitsAddend)
    stats.overLimitWithLocalCache.add(hitsAddend)
    if (limit.shadowMode) stats.shadowMode.add(hitsAddend)
    return overLimit(limit, currentLimit, durationUntilReset, false)
  }

  // Go computes before in uint64: a "negative" before wraps to a huge number.
  const before = after >= hitsAddend ? after - hitsAddend : Infinity
  const near = nearLimitThreshold(rpu, input.nearLimitRatio)
  if (after > rpu) {
    if (before >= rpu) stats.overLimit.add(hitsAddend)
    else {
      stats.overLimit.add(after - rpu)
      stats.nearLimit.add(rpu - Math.max(near, before))
    }
    if (limit.shadowMode) stats.shadowMode.add(before >= rpu ? hitsAddend : after - rpu)
    return overLimit(limit, currentLimit, durationUntilReset, true)
  }
  if (after > near) stats.nearLimit.add(before >= near ? hitsAddend : after - near)
  stats.withinLimit.add(hitsAddend)
  return {
    status: { code: 'OK', currentLimit, limitRemaining: rpu - after, durationUntilReset },
    overLimit: false,
  }
}

/** Over the limit: OVER_LIMIT with nothing remaining, reported OK for shadow-mode rules. */
function overLimit(
  limit: RateLimit,
  currentLimit: CurrentLimit,
  durationUntilReset: number,
  remember: boolean,
): Decision {
  return {
    status: {
      code: limit.shadowMode ? 'OK' : 'OVER_LIMIT',
      currentLimit,
      limitRemaining: 0,
      durationUntilReset,
    },
    overLimit: remember,
  }
}

/** Settings of {@link FixedWindowRateLimitCache}. */
export interface FixedWindowOptions {
  readonly store: CounterStore
  readonly clock: Clock
  /** The over-limit cache, or undefined when `LOCAL_CACHE_SIZE_IN_BYTES` is 0. */
  readonly localCache?: LocalCache | undefined
  /** `NEAR_LIMIT_RATIO` (0..1). @default 0.8 */
  readonly nearLimitRatio?: number
  /** `CACHE_KEY_PREFIX`. @default '' */
  readonly cacheKeyPrefix?: string
  /** `EXPIRATION_JITTER_MAX_SECONDS`; 0 disables jitter. @default 300 */
  readonly expirationJitterMaxSeconds?: number
  /** `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`. @default false */
  readonly stopCacheKeyIncrementWhenOverlimit?: boolean
  /** Random source in [0, 1) for the jitter. @default {@link systemRandom} */
  readonly random?: Random
  /**
   * Spans for the store round trips, under the call's span (`TRACING_ENABLED`), named
   * {@link storeSpanName}.
   */
  readonly tracing?: Tracing
  /** Name of the store round trip span. @default 'Redis Pipeline Execution' (upstream's) */
  readonly storeSpanName?: string
}

const NO_LIMIT: DescriptorStatus = { code: 'OK', limitRemaining: 0 }

/**
 * The fixed-window {@link RateLimitCache} over any {@link CounterStore}: one `INCRBY` + `EXPIRE`
 * per limited descriptor, all in one round trip.
 */
export class FixedWindowRateLimitCache implements RateLimitCache {
  readonly #store: CounterStore
  readonly #clock: Clock
  readonly #localCache: LocalCache | undefined
  readonly #nearLimitRatio: number
  readonly #prefix: string
  readonly #jitterMax: number
  readonly #stop: boolean
  readonly #random: Random
  readonly #tracing: Tracing | undefined
  readonly #storeSpanName: string

  constructor(options: FixedWindowOptions) {
    this.#tracing = options.tracing
    this.#storeSpanName = options.storeSpanName ?? 'Redis Pipeline Execution'
    this.#store = options.store
    this.#clock = options.clock
    this.#localCache = options.localCache
    this.#nearLimitRatio = options.nearLimitRatio ?? 0.8
    this.#prefix = options.cacheKeyPrefix ?? ''
    this.#jitterMax = options.expirationJitterMaxSeconds ?? 300
    this.#stop = options.stopCacheKeyIncrementWhenOverlimit ?? false
    this.#random = options.random ?? systemRandom
  }

  /**
   * {@inheritDoc RateLimitCache.doLimit}
   *
   * @throws {@link BackendError} `descriptor <i>: …` when the store refuses a descriptor's key
   *   (memcache's key rules); nothing of the request is counted then.
   */
  doLimit(
    request: RateLimitRequest,
    limits: readonly (RateLimit | undefined)[],
    trace?: TraceSpan,
  ): Promise<DescriptorStatus[]> {
    const nowSeconds = Math.floor(this.#clock.now() / 1000)
    const fallback = Math.max(1, request.hitsAddend) // hitsAddends(), without its array
    const descriptors = request.descriptors
    const items: Item[] = new Array<Item>(descriptors.length)
    const keys = new Array<CacheKey>(descriptors.length)
    for (let i = 0; i < descriptors.length; i++) {
      const descriptor = descriptors[i] as (typeof descriptors)[number]
      keys[i] = generateCacheKey(this.#prefix, request.domain, descriptor, limits[i], nowSeconds)
    }
    if (this.#store.keyProblem !== undefined) this.#checkKeys(keys, limits)
    let limited = 0
    let localHits = 0
    for (let i = 0; i < descriptors.length; i++) {
      const descriptor = descriptors[i] as (typeof descriptors)[number]
      const limit = limits[i]
      const addend = descriptor.hitsAddend ?? fallback
      const key = keys[i] as CacheKey
      let localHit = false
      if (limit !== undefined) {
        limited++
        limit.stats.totalHits.add(addend)
        localHit = this.#localCache?.has(key.key) === true
        if (localHit) localHits++
      }
      items[i] = { limit, addend, key, localHit, increment: addend, after: 0 }
    }
    if (limited === localHits) return Promise.resolve(this.#decide(items, nowSeconds))
    if (this.#stop) {
      if (localHits > 0) {
        // The local cache already refused one: increment nothing (upstream's rule).
        for (const item of items) item.increment = 0
      } else {
        return this.#onlyExceeding(items).then(() => this.#increment(items, nowSeconds, trace))
      }
    }
    return this.#increment(items, nowSeconds, trace)
  }

  /** Throws the store's problem with the first limited descriptor's key it refuses. */
  #checkKeys(keys: readonly CacheKey[], limits: readonly (RateLimit | undefined)[]): void {
    for (let i = 0; i < keys.length; i++) {
      if (limits[i] === undefined) continue
      const problem = this.#store.keyProblem?.((keys[i] as CacheKey).key)
      if (problem !== undefined) throw new BackendError(`descriptor ${String(i)}: ${problem}`)
    }
  }

  /**
   * `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`: reads the counters first and, when some key would
   * go over its limit, increments only those (upstream's rule).
   */
  async #onlyExceeding(items: Item[]): Promise<void> {
    const limited = items.filter(
      (item): item is Item & { limit: RateLimit } => item.limit !== undefined,
    )
    const current = await this.#store.get(limited.map((item) => item.key))
    const exceeding = new Set<Item>(
      limited.filter((item, j) => (current[j] ?? 0) + item.addend > item.limit.requestsPerUnit),
    )
    if (exceeding.size > 0) {
      for (const item of items) if (!exceeding.has(item)) item.increment = 0
    }
  }

  /** One `INCRBY` + `EXPIRE` per limited key not refused by the local cache, then the decisions. */
  #increment(items: Item[], nowSeconds: number, trace?: TraceSpan): Promise<DescriptorStatus[]> {
    const ops: IncrementOp[] = []
    const incremented: Item[] = []
    for (const item of items) {
      if (item.limit === undefined || item.localHit) continue
      const jitter = this.#jitterMax > 0 ? Math.floor(this.#random() * this.#jitterMax) : 0
      ops.push({
        key: item.key.key,
        addend: item.increment,
        expireSeconds: unitSeconds(item.limit.unit) + jitter,
        perSecond: item.key.perSecond,
      })
      incremented.push(item)
    }
    const span =
      trace === undefined || this.#tracing === undefined
        ? undefined
        : this.#tracing.startChild(trace, this.#storeSpanName, { 'pipeline length': ops.length })
    const stored = this.#store.increment(ops)
    if (span !== undefined) endWhenSettled(span.span, stored)
    return stored.then((results) => {
      for (let j = 0; j < incremented.length; j++) {
        ;(incremented[j] as Item).after = results[j] ?? 0
      }
      return this.#decide(items, nowSeconds)
    })
  }

  #decide(items: readonly Item[], nowSeconds: number): DescriptorStatus[] {
    const statuses = new Array<DescriptorStatus>(items.length)
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as Item
      if (item.limit === undefined) {
        statuses[i] = NO_LIMIT
        continue
      }
      const decision = decideStatus({
        limit: item.limit,
        hitsAddend: item.addend,
        after: item.after,
        localCacheHit: item.localHit,
        nearLimitRatio: this.#nearLimitRatio,
        nowSeconds,
      })
      if (decision.overLimit) this.#localCache?.set(item.key.key, unitSeconds(item.limit.unit))
      statuses[i] = decision.status
    }
    return statuses
  }
}

/** Per-descriptor state of one {@link FixedWindowRateLimitCache.doLimit} call. */
interface Item {
  readonly limit: RateLimit | undefined
  /** Hits this request adds (used for the decision). */
  readonly addend: number
  readonly key: CacheKey
  readonly localHit: boolean
  /** Hits actually sent with INCRBY (0 under the STOP rule). */
  increment: number
  /** INCRBY reply. */
  after: number
}
