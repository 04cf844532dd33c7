/**
 * The counter API's work (issue 32): for each descriptor of a request, the counters of every
 * window of its limit (count, remaining, reset, algorithm state), read from the store without
 * counting a hit, and their reset. The HTTP side (`GET`/`DELETE /counters`, the token) is in
 * `server/counters-http.ts`.
 *
 * @module
 */
import type { Clock } from '../clock.js'
import type { RateLimit } from '../config/config.js'
import type { Algorithm } from '../limiter/algorithms.js'
import type { CounterStore, ReadOp } from '../limiter/cache.js'
import { generateCacheKey } from '../limiter/cache-key.js'
import type { LocalCache } from '../limiter/local-cache.js'
import {
  slidingWindowEstimate,
  slidingWindowKeys,
  slidingWindowResetMs,
} from '../limiter/sliding-window.js'
import { tokenBucketKey, tokenBucketTtlMs } from '../limiter/token-bucket.js'
import { windowSeconds } from '../limiter/units.js'
import type { Entry, RateLimitRequest, Unit } from '../protocol/types.js'
import { BackendError } from '../limiter/cache.js'
import type { RateLimitService } from './service.js'

/** One window of a descriptor's limit, as the counter API reports it. */
export interface WindowCounters {
  readonly unit: Unit
  /** Units per window (`unit_multiplier`). */
  readonly unitMultiplier: number
  readonly requestsPerUnit: number
  readonly algorithm: Algorithm
  /** Hits counted (fixed window), the estimate (sliding window), or tokens used (bucket). */
  readonly count: number
  readonly remaining: number
  /** Seconds until the window ends (fixed), the budget is back (sliding) or the bucket is full. */
  readonly resetSeconds: number
  /**
   * The algorithm's stored state: `{ current, previous }` counts (sliding window), `{ tokens,
   * burst }` (token bucket), `{}` (fixed window).
   */
  readonly state: Readonly<Record<string, number>>
}

/** One descriptor of a counter API answer. */
export interface DescriptorCounters {
  readonly entries: readonly Entry[]
  /** No limit applies (no rule, or `unlimited`): nothing is counted. */
  readonly limited: boolean
  /** One entry per window (one for a rule of one window), in the rule's order. */
  readonly windows: readonly WindowCounters[]
}

/** What {@link CounterApi} needs. */
export interface CounterApiDeps {
  readonly service: RateLimitService
  readonly store: CounterStore
  readonly clock: Clock
  /** `CACHE_KEY_PREFIX`. */
  readonly cacheKeyPrefix: string
  /** The over-limit cache: a reset forgets the keys there too. */
  readonly localCache?: LocalCache | undefined
}

/** The keys of one window, and how to read them. */
interface WindowKeys {
  readonly limit: RateLimit
  /** Counters to read and delete (sliding: current then previous). */
  readonly counters: readonly ReadOp[]
  readonly sliding?: { readonly elapsedMs: number; readonly windowMs: number }
  readonly bucket?: ReadOp
}

/**
 * Inspects and resets the counters of request descriptors on the service's store, with the same
 * keys the limiter uses. Inspecting counts no hit (a token bucket is checked with a cost of 0,
 * which stores its refill: the same bucket).
 */
export class CounterApi {
  readonly #deps: CounterApiDeps

  constructor(deps: CounterApiDeps) {
    this.#deps = deps
  }

  /**
   * The counters of each descriptor's windows.
   *
   * @throws {@link BackendError} When the store fails.
   * @throws {Error} `no rate limit configuration loaded` before the first configuration.
   */
  async inspect(request: RateLimitRequest): Promise<DescriptorCounters[]> {
    const plan = this.#plan(request)
    const nowMs = this.#deps.clock.now()
    const store = this.#deps.store
    const reads = plan.flatMap((d) => d.windows.flatMap((w) => w.counters))
    const buckets = plan.flatMap((d) => d.windows.flatMap((w) => (w.bucket ? [w] : [])))
    const [values, taken] = await Promise.all([
      reads.length > 0 ? store.get(reads) : Promise.resolve([]),
      buckets.length === 0
        ? Promise.resolve([])
        : store.take === undefined
          ? Promise.reject(new BackendError('this backend cannot run token_bucket rules'))
          : store.take(
              buckets.map((w) => {
                const params = bucketParams(w.limit)
                return {
                  key: (w.bucket as ReadOp).key,
                  perSecond: (w.bucket as ReadOp).perSecond,
                  cost: 0,
                  nowMs,
                  ...params,
                  expireMs: tokenBucketTtlMs(params),
                }
              }),
            ),
    ])
    let r = 0
    let b = 0
    return plan.map((d) => ({
      entries: d.entries,
      limited: d.windows.length > 0,
      windows: d.windows.map((w): WindowCounters => {
        const { limit } = w
        const base = {
          unit: limit.unit,
          unitMultiplier: limit.unitMultiplier,
          requestsPerUnit: limit.requestsPerUnit,
          algorithm: limit.algorithm,
        }
        const rpu = limit.requestsPerUnit
        if (w.bucket !== undefined) {
          const reply = taken[b++]
          const tokens = limit.requestsPerUnit === 0 ? 0 : (reply?.tokens ?? 0)
          return {
            ...base,
            count: limit.burst - tokens,
            remaining: tokens,
            resetSeconds: Math.ceil((reply?.waitMs ?? 0) / 1000),
            state: { tokens, burst: limit.burst },
          }
        }
        if (w.sliding !== undefined) {
          const current = values[r++] ?? 0
          const previous = values[r++] ?? 0
          const counts = { current, previous, ...w.sliding }
          const estimate = slidingWindowEstimate(counts)
          return {
            ...base,
            count: estimate,
            remaining: Math.max(0, rpu - estimate),
            resetSeconds: Math.ceil(slidingWindowResetMs(counts, rpu, estimate > rpu) / 1000),
            state: { current, previous },
          }
        }
        const count = values[r++] ?? 0
        const seconds = windowSeconds(limit)
        return {
          ...base,
          count,
          remaining: Math.max(0, rpu - count),
          resetSeconds: seconds - (Math.floor(nowMs / 1000) % seconds),
          state: {},
        }
      }),
    }))
  }

  /**
   * Deletes the counters of each descriptor's windows (the current window's and, for a sliding
   * window, the previous one's; a bucket) and forgets them in the local over-limit cache.
   *
   * @returns The counters as they were before the reset.
   * @throws {@link BackendError} When the store fails or cannot delete (`remove` missing).
   */
  async reset(request: RateLimitRequest): Promise<DescriptorCounters[]> {
    const before = await this.inspect(request)
    const keys = this.#plan(request).flatMap((d) =>
      d.windows.flatMap((w) => (w.bucket === undefined ? w.counters : [w.bucket])),
    )
    const store = this.#deps.store
    if (store.remove === undefined) throw new BackendError('this backend cannot delete counters')
    if (keys.length > 0) await store.remove(keys)
    for (const { key } of keys) this.#deps.localCache?.forget(key)
    return before
  }

  /** The keys of every window of every descriptor, as the limiter builds them now. */
  #plan(request: RateLimitRequest) {
    const config = this.#deps.service.config
    if (config === undefined) throw new Error('no rate limit configuration loaded')
    const { cacheKeyPrefix: prefix, clock } = this.#deps
    const nowMs = clock.now()
    const nowSeconds = Math.floor(nowMs / 1000)
    return request.descriptors.map((descriptor) => {
      const limit = config.getLimit(request.domain, descriptor)
      const windows: WindowKeys[] = []
      if (limit !== undefined && !limit.unlimited) {
        for (const window of limit.windows ?? [limit]) {
          switch (window.algorithm) {
            case 'fixed_window':
              windows.push({
                limit: window,
                counters: [
                  generateCacheKey(prefix, request.domain, descriptor, window, nowSeconds),
                ],
              })
              break
            case 'sliding_window': {
              const keys = slidingWindowKeys(prefix, request.domain, descriptor, window, nowMs)
              windows.push({
                limit: window,
                counters: [
                  { key: keys.current, perSecond: keys.perSecond },
                  { key: keys.previous, perSecond: keys.perSecond },
                ],
                sliding: { elapsedMs: keys.elapsedMs, windowMs: keys.windowMs },
              })
              break
            }
            case 'token_bucket':
              windows.push({
                limit: window,
                counters: [],
                bucket: tokenBucketKey(prefix, request.domain, descriptor, window),
              })
              break
          }
        }
      }
      return { entries: descriptor.entries, windows }
    })
  }
}

/** A bucket's shape as the limiter takes from it. */
function bucketParams(limit: RateLimit) {
  return {
    requestsPerUnit: Math.max(1, limit.requestsPerUnit),
    unitMs: windowSeconds(limit) * 1000,
    burst: limit.burst,
  }
}
