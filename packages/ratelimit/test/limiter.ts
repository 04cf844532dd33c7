/** The limiter the algorithms' unit tests drive: a real memory store and a fake clock. */
import { FakeClock } from '@gatehouse/testing'
import { StoreRateLimitCache } from '#internal/limiter/store-cache.js'
import { LocalCache } from '#internal/limiter/local-cache.js'
import { MemoryCounterStore } from '#internal/memory/memory-store.js'
import type { RateLimitRequest } from '#internal/protocol/types.js'
import { StatsStore } from '#internal/stats/store.js'

/** A request of domain `d` with one descriptor `k=v`. */
export function oneKeyRequest(hitsAddend = 1): RateLimitRequest {
  return { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }], hitsAddend }
}

/**
 * A limiter over a real memory store and a fake clock starting at `start` (epoch ms), without
 * expiration jitter; with `localCache`, the local over-limit cache on the same clock.
 */
export function memoryLimiter(start: number, localCache = false) {
  const clock = new FakeClock(start)
  const store = new MemoryCounterStore({ clock, sweepIntervalMs: 0 })
  const cache = new StoreRateLimitCache({
    store,
    clock,
    expirationJitterMaxSeconds: 0,
    localCache: localCache ? new LocalCache(0, clock, new StatsStore()) : undefined,
  })
  return { clock, store, cache }
}
