import type { Counter, StatsStore } from './store.js'

/**
 * The counters kept per rate limit key, named
 * `ratelimit.service.rate_limit.<key>.<stat>` as in envoy's ratelimit.
 */
export interface RateLimitStats {
  /** The sanitized key (domain first), e.g. `basic.key1_value1`. */
  readonly key: string
  readonly totalHits: Counter
  readonly overLimit: Counter
  readonly nearLimit: Counter
  readonly overLimitWithLocalCache: Counter
  readonly withinLimit: Counter
  readonly shadowMode: Counter
}

/** Service-level counters (`ratelimit.service.*`). */
export interface ServiceStats {
  readonly configLoadSuccess: Counter
  readonly configLoadError: Counter
  readonly globalShadowMode: Counter
  /** `ratelimit.service.call.should_rate_limit.redis_error` (any backend failure). */
  readonly redisError: Counter
  /** `ratelimit.service.call.should_rate_limit.service_error` (bad request, no config). */
  readonly serviceError: Counter
}

const IPV4 = /\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}/g

/**
 * Makes a key safe inside a dotted stat name, as upstream's `SanitizeStatName`: `:` and `|`
 * become `_`, and the dots of IPv4 literals become `_`.
 */
export function sanitizeStatName(name: string): string {
  return name.replace(/[:|]/g, '_').replace(IPV4, (ip) => ip.replaceAll('.', '_'))
}

/** Creates and caches the rate-limit-specific stats on top of a {@link StatsStore}. */
export class StatsManager {
  readonly store: StatsStore
  readonly service: ServiceStats
  readonly #perKey = new Map<string, RateLimitStats>()

  constructor(store: StatsStore) {
    this.store = store
    this.service = {
      configLoadSuccess: store.counter('ratelimit.service.config_load_success'),
      configLoadError: store.counter('ratelimit.service.config_load_error'),
      globalShadowMode: store.counter('ratelimit.service.global_shadow_mode'),
      redisError: store.counter('ratelimit.service.call.should_rate_limit.redis_error'),
      serviceError: store.counter('ratelimit.service.call.should_rate_limit.service_error'),
    }
  }

  /**
   * The stats of one rate limit key (created on first use).
   *
   * @param key Unsanitized key, domain first: `domain.key1_value1.key2`.
   */
  rateLimitStats(key: string): RateLimitStats {
    let stats = this.#perKey.get(key)
    if (stats === undefined) {
      const clean = sanitizeStatName(key)
      const base = `ratelimit.service.rate_limit.${clean}.`
      const c = (stat: string): Counter => this.store.counter(base + stat)
      stats = {
        key: clean,
        totalHits: c('total_hits'),
        overLimit: c('over_limit'),
        nearLimit: c('near_limit'),
        overLimitWithLocalCache: c('over_limit_with_local_cache'),
        withinLimit: c('within_limit'),
        shadowMode: c('shadow_mode'),
      }
      this.#perKey.set(key, stats)
    }
    return stats
  }

  /** `ratelimit.service.rate_limit.<domain>.domain_not_found` */
  domainNotFound(domain: string): Counter {
    return this.store.counter(
      `ratelimit.service.rate_limit.${sanitizeStatName(domain)}.domain_not_found`,
    )
  }
}
