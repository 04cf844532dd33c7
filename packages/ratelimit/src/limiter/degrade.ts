/**
 * Degrade, don't fail (issue 32, `BACKEND_FAILURE_MODE=local`): while the store errors or times
 * out, each instance decides from counters of its own process at `ceil(limit / share)` (share:
 * `BACKEND_FAILURE_LOCAL_SHARE`, the expected number of instances), marks its answers as
 * degraded and counts `ratelimit.service.backend_degraded`; a check every
 * `BACKEND_FAILURE_CHECK_INTERVAL` finds the store answering again, decisions return to it, and
 * the hits counted locally in the current windows are added to the store's counters (best
 * effort, once).
 *
 * @module
 */
import type { Logger } from 'pino'
import type { Clock } from '../clock.js'
import type { RateLimit } from '../config/config.js'
import type { DescriptorStatus, RateLimitRequest } from '../protocol/types.js'
import type { Counter } from '../stats/store.js'
import type { TraceSpan } from '../telemetry/tracing.js'
import { BackendError, type CounterStore, type RateLimitCache } from './cache.js'
import type { MemoryCounterStore } from '../memory/memory-store.js'

/** The statuses of a request, marked when decided from local counters. */
export type CacheStatuses = DescriptorStatus[] & { degraded?: true }

/** Settings and parts of {@link DegradingRateLimitCache}. */
export interface DegradingCacheOptions {
  /** Decides on the store (the ordinary path). */
  readonly primary: RateLimitCache
  /** The store itself, checked while degraded and given the local hits back. */
  readonly store: CounterStore
  /** Decides on {@link local} (same key rules, no local over-limit cache). */
  readonly fallback: RateLimitCache
  /** The in-process counters {@link fallback} counts on. */
  readonly local: MemoryCounterStore
  /** `BACKEND_FAILURE_LOCAL_SHARE` (at least 1). */
  readonly share: number
  /** `BACKEND_FAILURE_CHECK_INTERVAL`, milliseconds. */
  readonly checkIntervalMs: number
  /** A key the check reads (never written): `CACHE_KEY_PREFIX` + a name of its own. */
  readonly checkKey: string
  /** `ratelimit.service.backend_degraded`: requests decided locally. */
  readonly degraded: Counter
  readonly clock: Clock
  readonly logger: Logger
}

/** A counter that counts nothing. */
const UNCOUNTED: Counter = {
  add() {
    // Already counted.
  },
  value: () => 0,
}

/**
 * A limit with its requests (and burst) divided by the share, rounded up; with `counted`, its
 * `total_hits` not counted again (the store's attempt counted them).
 */
function shareOf(limit: RateLimit, share: number, counted: boolean): RateLimit {
  const scale = (n: number): number => (n === 0 ? 0 : Math.ceil(n / share))
  const windows = limit.windows?.map((w) => shareOf(w, share, counted))
  return {
    ...limit,
    requestsPerUnit: scale(limit.requestsPerUnit),
    burst: scale(limit.burst),
    windows,
    stats: counted ? { ...limit.stats, totalHits: UNCOUNTED } : limit.stats,
  }
}

/**
 * The {@link RateLimitCache} of `BACKEND_FAILURE_MODE=local`: the store's decisions while it
 * answers, local ones while it fails. A refused key (`ERR_BACKEND_KEY`, memcache's key rules)
 * is no store failure: it is answered as an error as before.
 */
export class DegradingRateLimitCache implements RateLimitCache {
  readonly #o: DegradingCacheOptions
  /** The shared-down limits: of calls decided locally, of calls the store failed. */
  readonly #shared = [new WeakMap<RateLimit, RateLimit>(), new WeakMap<RateLimit, RateLimit>()]
  #since: number | undefined
  #timer: NodeJS.Timeout | undefined
  #checking = false

  constructor(options: DegradingCacheOptions) {
    this.#o = options
  }

  /** Whether decisions are local now. */
  get isDegraded(): boolean {
    return this.#since !== undefined
  }

  /** {@inheritDoc RateLimitCache.doLimit} */
  doLimit(
    request: RateLimitRequest,
    limits: readonly (RateLimit | undefined)[],
    trace?: TraceSpan,
  ): Promise<CacheStatuses> {
    if (this.#since !== undefined) return this.#local(request, limits, false)
    return this.#o.primary.doLimit(request, limits, trace).catch((error: unknown) => {
      if (!(error instanceof BackendError) || error.code !== 'ERR_BACKEND') throw error
      this.#degrade(error)
      return this.#local(request, limits, true)
    })
  }

  /** Stops the checks. */
  close(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer)
    this.#timer = undefined
  }

  /** Decides on the local counters; `counted`: the store's attempt counted `total_hits`. */
  #local(request: RateLimitRequest, limits: readonly (RateLimit | undefined)[], counted: boolean) {
    this.#o.degraded.add()
    const cache = this.#shared[counted ? 1 : 0] as WeakMap<RateLimit, RateLimit>
    const shared = limits.map((limit) => {
      if (limit === undefined) return undefined
      let scaled = cache.get(limit)
      if (scaled === undefined) {
        scaled = shareOf(limit, this.#o.share, counted)
        cache.set(limit, scaled)
      }
      return scaled
    })
    return this.#o.fallback.doLimit(request, shared).then((statuses): CacheStatuses => {
      const marked: CacheStatuses = statuses
      marked.degraded = true
      return marked
    })
  }

  #degrade(error: Error): void {
    if (this.#since !== undefined) return
    this.#since = this.#o.clock.now()
    this.#o.logger.warn(
      `the store failed (${error.message}): deciding from local counters at 1/${String(this.#o.share)} of each limit until it answers again`,
    )
    this.#timer = setInterval(() => {
      void this.#check()
    }, this.#o.checkIntervalMs)
    this.#timer.unref()
  }

  /** Reads the check key; once it answers, back to the store with the local hits. */
  async #check(): Promise<void> {
    if (this.#checking || this.#since === undefined) return
    this.#checking = true
    try {
      await this.#o.store.get([{ key: this.#o.checkKey, perSecond: false }])
    } catch {
      return
    } finally {
      this.#checking = false
    }
    const since = this.#since
    this.close()
    this.#since = undefined
    const hits = this.#o.local.counters()
    this.#o.local.clear()
    this.#o.logger.info(
      `the store answers again after ${String(this.#o.clock.now() - since)} ms: deciding on it; adding ${String(hits.length)} local counters to it`,
    )
    if (hits.length === 0) return
    try {
      await this.#o.store.increment(hits)
    } catch (error) {
      this.#o.logger.warn(
        `could not add the local counters to the store: ${(error as Error).message}`,
      )
    }
  }
}
