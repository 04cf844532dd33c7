import type { Clock } from '../clock.js'
import type { Gauge, StatsStore } from '../stats/store.js'

/** freecache's minimum size, which upstream's `LOCAL_CACHE_SIZE_IN_BYTES` is rounded up to. */
export const MIN_LOCAL_CACHE_BYTES = 512 * 1024

/** Bytes charged per entry on top of the key (freecache's entry header). */
const ENTRY_OVERHEAD = 24

/**
 * The local over-limit cache (upstream's freecache use): remembers cache keys that went over
 * their limit so later requests in the same window are refused without a store round trip.
 * Bounded by a byte budget; the oldest entries are evicted first. Gauges under
 * `ratelimit.localcache.*`.
 */
export class LocalCache {
  readonly #entries = new Map<string, number>()
  readonly #capacity: number
  readonly #clock: Clock
  #bytes = 0
  readonly #gauges: Record<
    | 'entryCount'
    | 'hitCount'
    | 'missCount'
    | 'lookupCount'
    | 'expiredCount'
    | 'evacuateCount'
    | 'overwriteCount',
    Gauge
  >
  #hits = 0
  #misses = 0
  #expired = 0
  #evacuated = 0
  #overwrites = 0

  /**
   * @param sizeInBytes Byte budget (`LOCAL_CACHE_SIZE_IN_BYTES`); raised to 512 KiB like freecache.
   * @param clock Time source for the entries' expiry.
   * @param stats Where the gauges go.
   */
  constructor(sizeInBytes: number, clock: Clock, stats: StatsStore) {
    this.#capacity = Math.max(sizeInBytes, MIN_LOCAL_CACHE_BYTES)
    this.#clock = clock
    const g = (name: string): Gauge => stats.gauge(`ratelimit.localcache.${name}`)
    this.#gauges = {
      entryCount: g('entryCount'),
      hitCount: g('hitCount'),
      missCount: g('missCount'),
      lookupCount: g('lookupCount'),
      expiredCount: g('expiredCount'),
      evacuateCount: g('evacuateCount'),
      overwriteCount: g('overwriteCount'),
    }
    g('averageAccessTime').set(0)
  }

  /** True when `key` is cached and not expired. */
  has(key: string): boolean {
    const expiresAt = this.#entries.get(key)
    let hit = false
    if (expiresAt !== undefined) {
      if (expiresAt > this.#clock.now()) hit = true
      else {
        this.#remove(key)
        this.#expired++
        this.#gauges.expiredCount.set(this.#expired)
      }
    }
    if (hit) this.#hits++
    else this.#misses++
    this.#gauges.hitCount.set(this.#hits)
    this.#gauges.missCount.set(this.#misses)
    this.#gauges.lookupCount.set(this.#hits + this.#misses)
    return hit
  }

  /**
   * When `key`'s entry expires (epoch milliseconds), or undefined when it is not cached; no
   * gauges are touched (call after {@link has}).
   */
  expiresAt(key: string): number | undefined {
    return this.#entries.get(key)
  }

  /**
   * Remembers `key` for `ttlSeconds`.
   *
   * @param ttlSeconds Lifetime in seconds (upstream uses the unit's length; the sliding window and
   *   the token bucket the time until a hit would be allowed, fractional).
   */
  set(key: string, ttlSeconds: number): void {
    if (this.#entries.has(key)) {
      this.#remove(key)
      this.#overwrites++
      this.#gauges.overwriteCount.set(this.#overwrites)
    }
    const cost = key.length + ENTRY_OVERHEAD
    while (this.#bytes + cost > this.#capacity && this.#entries.size > 0) {
      const oldest = this.#entries.keys().next().value as string
      this.#remove(oldest)
      this.#evacuated++
      this.#gauges.evacuateCount.set(this.#evacuated)
    }
    this.#entries.set(key, this.#clock.now() + ttlSeconds * 1000)
    this.#bytes += cost
    this.#gauges.entryCount.set(this.#entries.size)
  }

  /** Forgets `key` (the counter API's reset, issue 32). */
  forget(key: string): void {
    this.#remove(key)
  }

  #remove(key: string): void {
    if (this.#entries.delete(key)) {
      this.#bytes -= key.length + ENTRY_OVERHEAD
      this.#gauges.entryCount.set(this.#entries.size)
    }
  }
}
