/**
 * The store-backed limiter shared by every backend: upstream's fixed window (`base_limiter.go` +
 * `fixed_cache_impl.go`: cache keys per window, hits addends, the local over-limit cache,
 * `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`, and the near/over/within stat arithmetic), and, per
 * rule (issue 15), the sliding-window counter (`sliding-window.ts`, the store's `slide`: one
 * script that counts the current window and reads the previous one) and the token bucket
 * (`token-bucket.ts`, the store's atomic `take`), all of one request in one round trip.
 *
 * @module
 */
import { systemRandom, type Clock, type Random } from '../clock.js'
import type { RateLimit } from '../config/config.js'
import type {
  CurrentLimit,
  Descriptor,
  DescriptorStatus,
  RateLimitRequest,
} from '../protocol/types.js'
import { endWhenSettled, type TraceSpan, type Tracing } from '../telemetry/tracing.js'
import {
  BackendError,
  type CounterStore,
  type IncrementOp,
  type RateLimitCache,
  type ReadOp,
  type SlideOp,
  type TakeOp,
  type SlideReply,
  type TakeReply,
} from './cache.js'
import { generateCacheKey, type CacheKey } from './cache-key.js'
import type { LocalCache } from './local-cache.js'
import { slidingWindowEstimate, slidingWindowKeys, slidingWindowResetMs } from './sliding-window.js'
import { tokenBucketKey, tokenBucketTtlMs } from './token-bucket.js'
import { windowSeconds } from './units.js'

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
  /**
   * Counter value after the increment (ignored for local-cache hits): the sliding window's
   * estimate, or for a token bucket the tokens used (`capacity` − whole tokens left, plus the
   * hits when refused).
   */
  readonly after: number
  /** The most `after` may be while allowed. @default limit.requestsPerUnit */
  readonly capacity?: number
  /**
   * Seconds to report as `duration_until_reset`. @default the fixed window's end,
   * `window − now % window` (the window being `unit_multiplier` units)
   */
  readonly durationUntilReset?: number
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
  const rpu = input.capacity ?? limit.requestsPerUnit
  let durationUntilReset = input.durationUntilReset
  if (durationUntilReset === undefined) {
    const divider = windowSeconds(limit)
    durationUntilReset = divider - (nowSeconds % divider)
  }
  const configured = limit.requestsPerUnit
  let currentLimit: CurrentLimit =
    limit.name === undefined
      ? { requestsPerUnit: configured, unit: limit.unit }
      : { name: limit.name, requestsPerUnit: configured, unit: limit.unit }
  if (limit.unitMultiplier !== 1) {
    currentLimit = { ...currentLimit, unitMultiplier: limit.unitMultiplier }
  }

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

/** Settings of {@link StoreRateLimitCache}. */
export interface StoreRateLimitCacheOptions {
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

/** The key of a descriptor without a limit (nothing is stored). */
const NO_KEY: CacheKey = { key: '', perSecond: false }

/** The reply of a token bucket that never refills (`requests_per_unit: 0`): always refused. */
function emptyBucket(unitMs: number): TakeReply {
  return { allowed: false, tokens: 0, waitMs: unitMs }
}

/** Whole seconds covering `ms`. */
function ceilSeconds(ms: number): number {
  return Math.ceil(ms / 1000)
}

/**
 * The {@link RateLimitCache} over any {@link CounterStore}. Per rule's `algorithm`: the fixed
 * window (one `INCRBY` + `EXPIRE` per limited descriptor, upstream's keys), the sliding window
 * (the same on the current window's counter and a read of the previous one, in one
 * {@link CounterStore.slide} step, or, on stores without it, an `INCRBY 0` + `EXPIRE` that reads
 * the previous one; a refused request's hits are then taken back with
 * {@link CounterStore.release}), or the token bucket (one {@link CounterStore.take}); everything
 * of a request in one round trip.
 */
export class StoreRateLimitCache implements RateLimitCache {
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

  constructor(options: StoreRateLimitCacheOptions) {
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
    for (const limit of limits) {
      if (limit?.windows !== undefined) return this.#limitWindows(request, limits, trace)
    }
    return this.#limitEach(request, limits, trace, undefined)
  }

  /**
   * A request with a rule of several windows (issue 32): every window of every descriptor is
   * an item of one {@link #limitEach} call (so all go in the same round trip, with the local
   * cache and the STOP rule per window), and each descriptor's status is its deciding window's
   * ({@link decidingWindow}).
   */
  #limitWindows(
    request: RateLimitRequest,
    limits: readonly (RateLimit | undefined)[],
    trace: TraceSpan | undefined,
  ): Promise<DescriptorStatus[]> {
    const descriptors: Descriptor[] = []
    const flat: (RateLimit | undefined)[] = []
    const owners: number[] = []
    for (let i = 0; i < limits.length; i++) {
      const descriptor = request.descriptors[i] as Descriptor
      const limit = limits[i]
      for (const window of limit?.windows ?? [limit]) {
        descriptors.push(descriptor)
        flat.push(window)
        owners.push(i)
      }
    }
    return this.#limitEach({ ...request, descriptors }, flat, trace, owners).then((statuses) => {
      const combined = new Array<DescriptorStatus>(limits.length)
      let from = 0
      for (let i = 0; i < limits.length; i++) {
        let to = from
        while (to < owners.length && owners[to] === i) to++
        combined[i] = decidingWindow(statuses, from, to)
        from = to
      }
      return combined
    })
  }

  /**
   * Counts and decides each item (a descriptor, or one window of it).
   *
   * @param owners For each item, the index of its request descriptor (for error texts); undefined
   *   when items are the descriptors.
   */
  #limitEach(
    request: RateLimitRequest,
    limits: readonly (RateLimit | undefined)[],
    trace: TraceSpan | undefined,
    owners: readonly number[] | undefined,
  ): Promise<DescriptorStatus[]> {
    const nowMs = this.#clock.now()
    const nowSeconds = Math.floor(nowMs / 1000)
    const fallback = Math.max(1, request.hitsAddend) // hitsAddends(), without its array
    const descriptors = request.descriptors
    const items: Item[] = new Array<Item>(descriptors.length)
    for (let i = 0; i < descriptors.length; i++) {
      const descriptor = descriptors[i] as (typeof descriptors)[number]
      const limit = limits[i]
      const item: Item = {
        limit,
        addend: descriptor.hitsAddend ?? fallback,
        key: NO_KEY,
        localHit: false,
        increment: 0,
        after: 0,
        sliding: undefined,
        bucket: undefined,
      }
      item.increment = item.addend
      if (limit !== undefined) {
        switch (limit.algorithm) {
          case 'fixed_window':
            item.key = generateCacheKey(this.#prefix, request.domain, descriptor, limit, nowSeconds)
            break
          case 'sliding_window': {
            const keys = slidingWindowKeys(this.#prefix, request.domain, descriptor, limit, nowMs)
            item.key = { key: keys.current, perSecond: keys.perSecond }
            item.sliding = {
              previousKey: keys.previous,
              oneSlot: keys.oneSlot,
              previous: 0,
              current: 0,
              elapsedMs: keys.elapsedMs,
              windowMs: keys.windowMs,
            }
            break
          }
          case 'token_bucket':
            item.key = tokenBucketKey(this.#prefix, request.domain, descriptor, limit)
            break
        }
      }
      items[i] = item
    }
    if (this.#store.keyProblem !== undefined) this.#checkKeys(items, owners)
    let limited = 0
    let localHits = 0
    for (const item of items) {
      const limit = item.limit
      if (limit === undefined) continue
      limited++
      limit.stats.totalHits.add(item.addend)
      item.localHit = this.#localCache?.has(item.key.key) === true
      if (item.localHit) localHits++
    }
    if (limited === localHits) return Promise.resolve(this.#decide(items, nowMs))
    if (this.#stop) {
      if (localHits > 0) {
        // The local cache already refused one: increment nothing (upstream's rule).
        for (const item of items) item.increment = 0
      } else {
        return this.#onlyExceeding(items).then(() => this.#increment(items, nowMs, trace))
      }
    }
    return this.#increment(items, nowMs, trace)
  }

  /** Throws the store's problem with the first limited descriptor's key it refuses. */
  #checkKeys(items: readonly Item[], owners: readonly number[] | undefined): void {
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as Item
      if (item.limit === undefined) continue
      const problem =
        this.#store.keyProblem?.(item.key.key) ??
        (item.sliding === undefined
          ? undefined
          : this.#store.keyProblem?.(item.sliding.previousKey))
      if (problem !== undefined) {
        throw new BackendError(`descriptor ${String(owners?.[i] ?? i)}: ${problem}`, {
          code: 'ERR_BACKEND_KEY',
        })
      }
    }
  }

  /**
   * `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`: reads the counters first and, when some key would
   * go over its limit, increments only those (upstream's rule; a sliding window compares its
   * estimate). Token buckets never take beyond their content, so they are not read; when some
   * counter would go over, they only check.
   */
  async #onlyExceeding(items: Item[]): Promise<void> {
    const counted = items.filter(
      (item): item is Item & { limit: RateLimit } =>
        item.limit !== undefined && item.limit.algorithm !== 'token_bucket',
    )
    const reads: ReadOp[] = []
    for (const item of counted) {
      reads.push(item.key)
      if (item.sliding !== undefined) {
        reads.push({ key: item.sliding.previousKey, perSecond: item.key.perSecond })
      }
    }
    const current = await this.#store.get(reads)
    const exceeding = new Set<Item>()
    let r = 0
    for (const item of counted) {
      let used = current[r++] ?? 0
      const sliding = item.sliding
      if (sliding !== undefined) {
        used = slidingWindowEstimate({ ...sliding, previous: current[r++] ?? 0, current: used })
      }
      if (used + item.addend > item.limit.requestsPerUnit) exceeding.add(item)
    }
    if (exceeding.size > 0) {
      for (const item of items) if (!exceeding.has(item)) item.increment = 0
    }
  }

  /**
   * One `INCRBY` + `EXPIRE` per counter (and one `take` per bucket) not refused by the local
   * cache, then the decisions.
   */
  #increment(items: Item[], nowMs: number, trace?: TraceSpan): Promise<DescriptorStatus[]> {
    const ops: IncrementOp[] = []
    const incremented: Item[] = []
    const canSlide = this.#store.slide !== undefined
    let slides: SlideOp[] | undefined
    let sliding: Item[] | undefined
    let takes: TakeOp[] | undefined
    let taking: Item[] | undefined
    for (const item of items) {
      const limit = item.limit
      if (limit === undefined || item.localHit) continue
      const jitter = this.#jitterMax > 0 ? Math.floor(this.#random() * this.#jitterMax) : 0
      const seconds = windowSeconds(limit)
      switch (limit.algorithm) {
        case 'fixed_window':
          ops.push({
            key: item.key.key,
            addend: item.increment,
            expireSeconds: seconds + jitter,
            perSecond: item.key.perSecond,
          })
          incremented.push(item)
          break
        case 'sliding_window': {
          const state = item.sliding as SlidingState
          // The current window's counter is the previous one during the next window.
          const expireSeconds = 2 * seconds + jitter
          if (canSlide && state.oneSlot) {
            slides ??= []
            sliding ??= []
            slides.push({
              key: item.key.key,
              previousKey: state.previousKey,
              addend: item.increment,
              expireSeconds,
              perSecond: item.key.perSecond,
            })
            sliding.push(item)
            break
          }
          ops.push({
            key: item.key.key,
            addend: item.increment,
            expireSeconds,
            perSecond: item.key.perSecond,
          })
          ops.push({
            key: state.previousKey,
            addend: 0,
            expireSeconds: seconds + jitter,
            perSecond: item.key.perSecond,
          })
          incremented.push(item)
          break
        }
        case 'token_bucket': {
          const unitMs = seconds * 1000
          if (limit.requestsPerUnit === 0) {
            item.bucket = emptyBucket(unitMs)
            break
          }
          const params = { requestsPerUnit: limit.requestsPerUnit, unitMs, burst: limit.burst }
          takes ??= []
          taking ??= []
          takes.push({
            key: item.key.key,
            cost: item.increment,
            nowMs,
            ...params,
            expireMs: tokenBucketTtlMs(params) + jitter * 1000,
            perSecond: item.key.perSecond,
          })
          taking.push(item)
          break
        }
      }
    }
    const span =
      trace === undefined || this.#tracing === undefined
        ? undefined
        : this.#tracing.startChild(trace, this.#storeSpanName, {
            'pipeline length': ops.length + (slides?.length ?? 0) + (takes?.length ?? 0),
          })
    const store = this.#store
    // Each store call, and how its replies reach the items. A request of one call (the usual)
    // is decided in that call's own continuation; several are joined first.
    const calls: Promise<unknown>[] = []
    const takeReplies: ((replies: unknown) => void)[] = []
    if (ops.length > 0) {
      calls.push(store.increment(ops))
      takeReplies.push((results) => {
        takeCounters(incremented, results as readonly number[])
      })
    }
    if (slides !== undefined && store.slide !== undefined) {
      calls.push(store.slide(slides))
      takeReplies.push((replies) => {
        const list = sliding as Item[]
        for (let j = 0; j < list.length; j++) {
          const item = list[j] as Item
          const reply = (replies as readonly (SlideReply | undefined)[])[j]
          item.after = reply?.current ?? 0
          ;(item.sliding as SlidingState).previous = reply?.previous ?? 0
        }
      })
    }
    if (takes !== undefined) {
      calls.push(
        store.take === undefined
          ? Promise.reject(new BackendError('this backend cannot run token_bucket rules'))
          : store.take(takes),
      )
      takeReplies.push((replies) => {
        const list = taking as Item[]
        for (let j = 0; j < list.length; j++) {
          ;(list[j] as Item).bucket = (replies as readonly (TakeReply | undefined)[])[j]
        }
      })
    }
    const decide = (replies: readonly unknown[]): DescriptorStatus[] => {
      for (let c = 0; c < takeReplies.length; c++)
        (takeReplies[c] as (r: unknown) => void)(replies[c])
      return this.#decide(items, nowMs)
    }
    const decided =
      calls.length === 1
        ? (calls[0] as Promise<unknown>).then((replies) => decide([replies]))
        : Promise.all(calls).then(decide)
    if (span !== undefined) endWhenSettled(span.span, decided)
    return decided
  }

  #decide(items: readonly Item[], nowMs: number): DescriptorStatus[] {
    const nowSeconds = Math.floor(nowMs / 1000)
    const statuses = new Array<DescriptorStatus>(items.length)
    let releases: IncrementOp[] | undefined
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as Item
      const limit = item.limit
      if (limit === undefined) {
        statuses[i] = NO_LIMIT
        continue
      }
      let after = item.after
      let capacity: number | undefined
      let durationUntilReset: number | undefined
      /** Local over-limit cache lifetime, seconds. */
      let ttlSeconds = windowSeconds(limit)
      if (item.localHit) {
        if (limit.algorithm !== 'fixed_window') {
          const expiresAt = this.#localCache?.expiresAt(item.key.key) ?? nowMs
          durationUntilReset = Math.max(1, ceilSeconds(expiresAt - nowMs))
        }
      } else if (item.sliding !== undefined) {
        const counts = item.sliding
        counts.current = item.after
        after = slidingWindowEstimate(counts)
        const over = after > limit.requestsPerUnit
        if (over && item.increment > 0) {
          // Only allowed hits count: take back the refused ones (then the wait is from there).
          releases ??= []
          releases.push({
            key: item.key.key,
            addend: item.increment,
            expireSeconds: 0,
            perSecond: item.key.perSecond,
          })
          counts.current -= item.increment
        }
        const ms = slidingWindowResetMs(counts, limit.requestsPerUnit, over)
        durationUntilReset = ceilSeconds(ms)
        ttlSeconds = ms / 1000
      } else if (item.bucket !== undefined) {
        const { allowed, tokens, waitMs } = item.bucket
        capacity = limit.burst
        after = capacity - tokens + (allowed ? 0 : item.addend)
        durationUntilReset = allowed ? ceilSeconds(waitMs) : Math.max(1, ceilSeconds(waitMs))
        ttlSeconds = waitMs / 1000
      }
      const decision = decideStatus({
        limit,
        hitsAddend: item.addend,
        after,
        capacity,
        durationUntilReset,
        localCacheHit: item.localHit,
        nearLimitRatio: this.#nearLimitRatio,
        nowSeconds,
      })
      if (decision.overLimit) this.#localCache?.set(item.key.key, ttlSeconds)
      statuses[i] = decision.status
    }
    if (releases !== undefined) this.#store.release?.(releases).catch(keepCounted)
    return statuses
  }
}

/**
 * The status of a descriptor from its windows' statuses `statuses[from..to)` (list order): over
 * the limit, the first window over it; otherwise the one with the least remaining, the first of
 * equals.
 */
export function decidingWindow(
  statuses: readonly DescriptorStatus[],
  from: number,
  to: number,
): DescriptorStatus {
  let least = statuses[from] as DescriptorStatus
  for (let j = from; j < to; j++) {
    const status = statuses[j] as DescriptorStatus
    if (status.code === 'OVER_LIMIT') return status
    if (status.limitRemaining < least.limitRemaining) least = status
  }
  return least
}

/**
 * The best-effort path of a failed release: the refused hits stay counted, which errs on the
 * refusing side; the store's failure shows in the next call that needs it.
 */
function keepCounted(): void {
  // Nothing to undo.
}

/** The sliding window's second counter, its counts and the position in the window. */
interface SlidingState {
  readonly previousKey: string
  /** Both keys in one Redis Cluster slot (`SlidingWindowKeys.oneSlot`). */
  readonly oneSlot: boolean
  /** The previous window's count (read with the current one's increment). */
  previous: number
  /** The current window's count (the INCRBY reply; less the refused hits once taken back). */
  current: number
  readonly elapsedMs: number
  readonly windowMs: number
}

/**
 * Gives each incremented item its counter after the increment (and a sliding window counted
 * with two `INCRBY`s its previous counter), from the store's replies in the order of the ops.
 */
function takeCounters(incremented: readonly Item[], results: readonly number[]): void {
  let r = 0
  for (const item of incremented) {
    item.after = results[r++] ?? 0
    if (item.sliding !== undefined) item.sliding.previous = results[r++] ?? 0
  }
}

/** Per-descriptor state of one {@link StoreRateLimitCache.doLimit} call. */
interface Item {
  readonly limit: RateLimit | undefined
  /** Hits this request adds (used for the decision). */
  readonly addend: number
  /** The counter (fixed window), the current window's counter (sliding) or the bucket. */
  key: CacheKey
  localHit: boolean
  /** Hits actually sent with INCRBY, or tokens asked for (0 under the STOP rule). */
  increment: number
  /** INCRBY reply (the current window's counter for a sliding window). */
  after: number
  /** Sliding window only. */
  sliding: SlidingState | undefined
  /** Token bucket only: the store's reply. */
  bucket: TakeReply | undefined
}
