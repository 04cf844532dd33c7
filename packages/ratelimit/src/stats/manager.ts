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
 * Characters that cannot appear in a statsd name: the line format's separators `:` and `|`, and
 * control characters (`\p{Cc}`: a newline would start a new line).
 */
export const STATSD_ILLEGAL = /[:|\p{Cc}]/gu

/**
 * Makes a key safe inside a dotted stat name, as upstream's `SanitizeStatName` (`:` and `|`
 * become `_`, and the dots of IPv4 literals become `_`), and, beyond upstream (which lets them
 * through to statsd), control characters become `_` too, so that a descriptor value cannot add
 * a line to the statsd stream.
 */
export function sanitizeStatName(name: string): string {
  return name.replace(STATSD_ILLEGAL, '_').replace(IPV4, (ip) => ip.replaceAll('.', '_'))
}

/**
 * Longest stat key made from request values that gets stats of its own; longer ones are counted
 * under the domain's `stats_overflow` key.
 */
export const MAX_DYNAMIC_STATS_KEY_LENGTH = 256

/** Options of {@link StatsManager}. */
export interface StatsManagerOptions {
  /**
   * `STATS_MAX_DYNAMIC_KEYS`: stat keys made from request values (descriptor `limit` overrides,
   * `detailed_metric`, `value_to_metric`) that get stats of their own; later ones are counted
   * under `<domain>.stats_overflow`. @default 1000
   */
  readonly maxDynamicKeys?: number
  /**
   * `STATS_MAX_UNKNOWN_DOMAINS`: distinct unknown domains counted under upstream's
   * `<domain>.domain_not_found` (see {@link StatsManager.domainNotFound}). @default
   * {@link DEFAULT_MAX_UNKNOWN_DOMAINS}
   */
  readonly maxUnknownDomains?: number
}

/** Default of {@link StatsManagerOptions.maxUnknownDomains}. */
export const DEFAULT_MAX_UNKNOWN_DOMAINS = 100

/** Default of {@link StatsManagerOptions.maxDynamicKeys}. */
export const DEFAULT_MAX_DYNAMIC_STATS_KEYS = 1000

/** Creates and caches the rate-limit-specific stats on top of a {@link StatsStore}. */
export class StatsManager {
  readonly store: StatsStore
  readonly service: ServiceStats
  readonly #perKey = new Map<string, RateLimitStats>()
  readonly #maxDynamicKeys: number
  #dynamicKeys = 0
  readonly #domainNotFound: Counter
  readonly #unknownDomains = new Map<string, Counter>()
  readonly #maxUnknownDomains: number

  constructor(store: StatsStore, options: StatsManagerOptions = {}) {
    this.store = store
    this.#maxDynamicKeys = options.maxDynamicKeys ?? DEFAULT_MAX_DYNAMIC_STATS_KEYS
    this.#maxUnknownDomains = options.maxUnknownDomains ?? DEFAULT_MAX_UNKNOWN_DOMAINS
    this.#domainNotFound = store.counter('ratelimit.service.rate_limit.domain_not_found')
    this.service = {
      configLoadSuccess: store.counter('ratelimit.service.config_load_success'),
      configLoadError: store.counter('ratelimit.service.config_load_error'),
      globalShadowMode: store.counter('ratelimit.service.global_shadow_mode'),
      redisError: store.counter('ratelimit.service.call.should_rate_limit.redis_error'),
      serviceError: store.counter('ratelimit.service.call.should_rate_limit.service_error'),
    }
  }

  /**
   * The stats of one configured rate limit key (created on first use). Keys from the
   * configuration only: keys made from request values go through {@link requestStats}.
   *
   * @param key Unsanitized key, domain first: `domain.key1_value1.key2`.
   */
  rateLimitStats(key: string): RateLimitStats {
    let stats = this.#perKey.get(key)
    if (stats === undefined) {
      stats = this.#create(key)
      this.#perKey.set(key, stats)
    }
    return stats
  }

  /**
   * The stats of a key made from request values (a descriptor `limit` override,
   * `detailed_metric`, `value_to_metric`). The first {@link StatsManagerOptions.maxDynamicKeys}
   * such keys of at most {@link MAX_DYNAMIC_STATS_KEY_LENGTH} characters get stats of their own,
   * as upstream names them; any other is counted under `<domain>.stats_overflow`, so callers
   * cannot grow the stats without bound.
   *
   * @param domain The request's domain (a configured one).
   * @param key Unsanitized key, domain first.
   */
  requestStats(domain: string, key: string): RateLimitStats {
    const existing = this.#perKey.get(key)
    if (existing !== undefined) return existing
    if (this.#dynamicKeys >= this.#maxDynamicKeys || key.length > MAX_DYNAMIC_STATS_KEY_LENGTH) {
      return this.rateLimitStats(`${domain}.stats_overflow`)
    }
    this.#dynamicKeys++
    return this.rateLimitStats(key)
  }

  #create(key: string): RateLimitStats {
    const clean = sanitizeStatName(key)
    const base = `ratelimit.service.rate_limit.${clean}.`
    const c = (stat: string): Counter => this.store.counter(base + stat)
    return {
      key: clean,
      totalHits: c('total_hits'),
      overLimit: c('over_limit'),
      nearLimit: c('near_limit'),
      overLimitWithLocalCache: c('over_limit_with_local_cache'),
      withinLimit: c('within_limit'),
      shadowMode: c('shadow_mode'),
    }
  }

  /**
   * The counter of a request for `domain`, which no configuration has. Upstream counts each such
   * domain under `ratelimit.service.rate_limit.<domain>.domain_not_found`, which lets callers
   * create stats without bound; here the first {@link StatsManagerOptions.maxUnknownDomains}
   * distinct domains (of at most {@link MAX_DYNAMIC_STATS_KEY_LENGTH} characters) get upstream's
   * name, and any other is counted under the domain-less
   * `ratelimit.service.rate_limit.domain_not_found`.
   */
  domainNotFound(domain: string): Counter {
    const known = this.#unknownDomains.get(domain)
    if (known !== undefined) return known
    if (
      this.#unknownDomains.size >= this.#maxUnknownDomains ||
      domain.length > MAX_DYNAMIC_STATS_KEY_LENGTH
    ) {
      return this.#domainNotFound
    }
    const counter = this.store.counter(
      `ratelimit.service.rate_limit.${sanitizeStatName(domain)}.domain_not_found`,
    )
    this.#unknownDomains.set(domain, counter)
    return counter
  }
}
