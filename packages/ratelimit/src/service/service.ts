/**
 * `ShouldRateLimit`: validates a request, finds each descriptor's limit in the current
 * configuration snapshot, asks the backend, and builds the response (overall code, quota mode,
 * `RateLimit-*` headers, global shadow mode, dynamic metadata). Upstream: `src/service/ratelimit.go`.
 *
 * @module
 */
import type { Logger } from 'pino'
import { RateLimitError } from '../errors.js'
import { RateLimitConfig, type ConfigFile, type RateLimit } from '../config/config.js'
import type { Algorithm } from '../limiter/algorithms.js'
import { BackendError, MAX_HITS_ADDEND, type RateLimitCache } from '../limiter/cache.js'
import type { CacheStatuses } from '../limiter/degrade.js'
import { windowSeconds } from '../limiter/units.js'
import {
  checkRequestLimits,
  DEFAULT_REQUEST_LIMITS,
  type RequestLimitError,
  type RequestLimits,
} from '../protocol/limits.js'
import type {
  DescriptorStatus,
  HeaderValue,
  JsonObject,
  JsonValue,
  RateLimitRequest,
  RateLimitResponse,
} from '../protocol/types.js'
import type { StatsManager } from '../stats/manager.js'
import { endWhenSettled, type TraceSpan, type Tracing } from '../telemetry/tracing.js'

/** `limit_remaining` of an unlimited descriptor: the largest uint32. */
export const UNLIMITED_REMAINING = 4_294_967_295

/** What kind of failure a {@link ShouldRateLimitError} is; also its stat name. */
export type ShouldRateLimitErrorType = 'service_error' | 'redis_error'

/**
 * Machine-readable code of a {@link ShouldRateLimitError}: `ERR_BACKEND` (the store failed),
 * `ERR_BACKEND_KEY` (the store cannot hold a descriptor's key; nothing was counted),
 * `ERR_REQUEST_TOO_LARGE` (a cap of {@link RequestLimits} exceeded) or `ERR_SERVICE` (any other
 * request the service refuses).
 */
export type ShouldRateLimitErrorCode =
  'ERR_SERVICE' | 'ERR_BACKEND' | 'ERR_BACKEND_KEY' | 'ERR_REQUEST_TOO_LARGE'

/**
 * A request that could not be decided. The message is upstream's text (e.g.
 * `rate limit domain must not be empty`); gRPC returns it with status UNKNOWN, `/json` with 400.
 * Counted as `ratelimit.service.call.should_rate_limit.<type>`.
 */
export class ShouldRateLimitError extends RateLimitError {
  declare readonly code: ShouldRateLimitErrorCode
  /** The stat the failure is counted under. */
  readonly type: ShouldRateLimitErrorType
  /**
   * @param options.code Overrides the code derived from `type` (`ERR_BACKEND` for
   *   `redis_error`, else `ERR_SERVICE`).
   */
  constructor(
    type: ShouldRateLimitErrorType,
    message: string,
    options?: { cause?: unknown; code?: ShouldRateLimitErrorCode },
  ) {
    super(
      options?.code ?? (type === 'redis_error' ? 'ERR_BACKEND' : 'ERR_SERVICE'),
      message,
      options,
    )
    this.type = type
  }
}

/** Response behaviour switches (settings). */
export interface ServiceOptions {
  /** `SHADOW_MODE`: an over-limit overall result is answered OK. @default false */
  readonly globalShadowMode?: boolean
  /** `QUOTA_MODE`: every descriptor is a quota descriptor. @default false */
  readonly quotaMode?: boolean
  /** `RESPONSE_DYNAMIC_METADATA`. @default false */
  readonly responseDynamicMetadata?: boolean
  /** `LIMIT_RESPONSE_HEADERS_ENABLED` and the header names; undefined = no headers. */
  readonly responseHeaders?:
    { readonly limit: string; readonly remaining: string; readonly reset: string } | undefined
  /** `MERGE_DOMAIN_CONFIG`. @default false */
  readonly mergeDomainConfig?: boolean
  /** `RATE_LIMIT_ALGORITHM`: the algorithm of rules that name none. @default 'fixed_window' */
  readonly defaultAlgorithm?: Algorithm
  /**
   * Algorithms the backend cannot run, with the reason: configurations using them fail to load.
   * @default none
   */
  readonly unsupportedAlgorithms?: Readonly<Partial<Record<Algorithm, string>>>
  /**
   * Caps on what one request may carry (`MAX_DESCRIPTORS_PER_REQUEST`,
   * `MAX_ENTRIES_PER_DESCRIPTOR`, `MAX_DESCRIPTOR_ENTRY_BYTES`). @default
   * {@link DEFAULT_REQUEST_LIMITS}
   */
  readonly requestLimits?: RequestLimits
  /**
   * The cache decides a request's descriptors together (`STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`
   * with a backend that implements it: one descriptor over its limit, or refused by the local
   * cache, stops the counting of the others). See {@link RateLimitService.independentDescriptors}.
   * @default false
   */
  readonly cacheCouplesDescriptors?: boolean
}

/** Dependencies of {@link RateLimitService}. */
export interface ServiceDeps {
  readonly cache: RateLimitCache
  readonly stats: StatsManager
  readonly logger: Logger
  /** Spans for the decisions (`TRACING_ENABLED`); undefined = no tracer calls. */
  readonly tracing?: Tracing
}

const NO_HEADERS: readonly HeaderValue[] = Object.freeze([])

/** The limit of each descriptor of a request (undefined: none), and which ones are unlimited. */
interface Limits {
  readonly limits: (RateLimit | undefined)[]
  readonly unlimited: boolean[] | undefined
}

/** Listener of configuration changes (health, debug). */
export type ConfigListener = (config: RateLimitConfig) => void

/**
 * What {@link RateLimitService.loadConfig} did: the new configuration, or why the files did not
 * load (a `RateLimitConfigError` with upstream's `<file>: <problem>` text).
 */
export type ConfigLoadResult =
  | { readonly ok: true; readonly config: RateLimitConfig }
  | { readonly ok: false; readonly error: Error }

/** The decision service. Holds the current configuration snapshot. */
export class RateLimitService {
  readonly #cache: RateLimitCache
  readonly #stats: StatsManager
  readonly #logger: Logger
  readonly #tracing: Tracing | undefined
  readonly #options: ServiceOptions
  readonly #listeners: ConfigListener[] = []
  readonly #requestLimits: RequestLimits
  #config: RateLimitConfig | undefined
  /** {@link independentDescriptors}, set at each configuration load. */
  #independent = false

  constructor(deps: ServiceDeps, options: ServiceOptions = {}) {
    this.#cache = deps.cache
    this.#stats = deps.stats
    this.#logger = deps.logger
    this.#tracing = deps.tracing
    this.#options = options
    this.#requestLimits = options.requestLimits ?? DEFAULT_REQUEST_LIMITS
  }

  /** The caps on what one request may carry; the servers decode requests with them. */
  get requestLimits(): RequestLimits {
    return this.#requestLimits
  }

  /**
   * Refuses a request that exceeds a cap (found while decoding it): counts it as
   * `should_rate_limit.service_error`, as every refused request is.
   *
   * @returns The error to answer with (code `ERR_REQUEST_TOO_LARGE`).
   */
  refuse(error: RequestLimitError): ShouldRateLimitError {
    this.#stats.service.serviceError.add()
    this.#logger.debug(`request refused: ${error.message}`)
    return new ShouldRateLimitError('service_error', error.message, {
      cause: error,
      code: 'ERR_REQUEST_TOO_LARGE',
    })
  }

  /**
   * Whether each descriptor of a request is decided as if it came alone, so that requests
   * concatenated into one get the statuses they would have got one by one (what a coalescing
   * client relies on; see `COALESCE_MAX_DESCRIPTORS_HEADER`). It is not so, and this is false:
   * before a configuration is loaded; with {@link ServiceOptions.cacheCouplesDescriptors}
   * (`STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`); with `QUOTA_MODE`; or while the configuration
   * has a rule with `replaces` or `quota_mode` (`RateLimitConfig.couplesDescriptors`).
   *
   * Nothing else couples them: counters are incremented one descriptor at a time (the same key
   * twice in one request is counted twice, in order, as in two requests), and the local cache,
   * which only refuses keys already over their limit, affects the other descriptors only under
   * the STOP rule. `SHADOW_MODE` (global) answers the whole request OK; a client splitting
   * answers keeps that (a caller is over the limit only when the whole answer is).
   */
  get independentDescriptors(): boolean {
    return this.#independent
  }

  /** The current configuration, or undefined before the first successful load. */
  get config(): RateLimitConfig | undefined {
    return this.#config
  }

  /** Calls `listener` after every successful (re)load. */
  onConfig(listener: ConfigListener): void {
    this.#listeners.push(listener)
  }

  /**
   * Loads a full set of configuration files (a provider update). On success the new snapshot
   * replaces the old one and `config_load_success` is counted; on failure the previous snapshot
   * stays, `config_load_error` is counted and the error is logged.
   *
   * @returns `{ ok: true, config }` with the new snapshot, or `{ ok: false, error }` (the
   *   snapshot stays).
   */
  loadConfig(files: readonly ConfigFile[]): ConfigLoadResult {
    let config: RateLimitConfig
    try {
      config = RateLimitConfig.load(files, {
        stats: this.#stats,
        mergeDomainConfig: this.#options.mergeDomainConfig ?? false,
        defaultAlgorithm: this.#options.defaultAlgorithm ?? 'fixed_window',
        unsupportedAlgorithms: this.#options.unsupportedAlgorithms ?? {},
      })
    } catch (error) {
      this.#stats.service.configLoadError.add()
      this.#logger.error(`Error loading new configuration: ${(error as Error).message}`)
      return { ok: false, error: error as Error }
    }
    this.#config = config
    this.#independent =
      this.#options.cacheCouplesDescriptors !== true &&
      this.#options.quotaMode !== true &&
      !config.couplesDescriptors
    this.#stats.service.configLoadSuccess.add()
    this.#logger.info(
      `Successfully loaded new configuration (${String(config.domains.length)} domain(s))`,
    )
    for (const listener of this.#listeners) listener(config)
    return { ok: true, config }
  }

  /**
   * Decides a request.
   *
   * @throws {@link ShouldRateLimitError} `service_error` for an empty domain, no descriptors, a
   *   request beyond {@link requestLimits}, no configuration loaded, or an invalid descriptor
   *   override/hits_addend; `redis_error` when the backend fails.
   * @param trace The call's span (tracing on): the decision gets a child span,
   *   `ShouldRateLimit Execution` with the `domain` (upstream's).
   */
  shouldRateLimit(request: RateLimitRequest, trace?: TraceSpan): Promise<RateLimitResponse> {
    if (trace !== undefined && this.#tracing !== undefined) {
      const span = this.#tracing.startChild(trace, 'ShouldRateLimit Execution', {
        domain: request.domain,
        'descriptors count': request.descriptors.length,
      })
      const decided = this.#decide(request, span)
      endWhenSettled(span.span, decided)
      return decided
    }
    return this.#decide(request, undefined)
  }

  #decide(request: RateLimitRequest, trace: TraceSpan | undefined): Promise<RateLimitResponse> {
    let limits: Limits
    let decided: Promise<DescriptorStatus[]>
    try {
      limits = this.#limitsFor(request)
      decided = this.#cache.doLimit(request, limits.limits, trace)
    } catch (error) {
      // Rejects with whatever was thrown, as an async function would.
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
      return Promise.reject(this.#backendFailure(error))
    }
    return decided.then(
      (statuses) => this.#respond(request, limits, statuses),
      (error: unknown) => {
        throw this.#backendFailure(error)
      },
    )
  }

  /** A backend failure becomes a counted `redis_error`; anything else passes unchanged. */
  #backendFailure(error: unknown): unknown {
    if (!(error instanceof BackendError)) return error
    this.#stats.service.redisError.add()
    return new ShouldRateLimitError('redis_error', error.message, {
      cause: error,
      code: error.code,
    })
  }

  /** The response to a decided request: overall code, quota mode, headers, shadow mode, metadata. */
  #respond(
    request: RateLimitRequest,
    limits: Limits,
    statuses: DescriptorStatus[],
  ): RateLimitResponse {
    const count = request.descriptors.length
    const unlimited = limits.unlimited
    const globalQuota = this.#options.quotaMode === true
    const withMetadata = this.#options.responseDynamicMetadata === true
    let failedRateLimit = 0
    let quotaTotal = 0
    let failedQuota = 0
    const passed: RateLimit[] | undefined = withMetadata ? [] : undefined
    for (let i = 0; i < count; i++) {
      if (unlimited?.[i] === true) {
        statuses[i] = { code: 'OK', limitRemaining: UNLIMITED_REMAINING }
        continue
      }
      const limit = limits.limits[i]
      const quota = limit !== undefined && (globalQuota || limit.quotaMode)
      if (quota) quotaTotal++
      if (statuses[i]?.code === 'OVER_LIMIT') {
        if (quota) failedQuota++
        else failedRateLimit++
      } else if (limit !== undefined) passed?.push(limit)
    }
    let overallCode: 'OK' | 'OVER_LIMIT' =
      failedRateLimit > 0 || (quotaTotal > 0 && quotaTotal === failedQuota) ? 'OVER_LIMIT' : 'OK'

    let responseHeadersToAdd = this.#headers(statuses, limits.limits, globalQuota)
    if ((statuses as CacheStatuses).degraded === true) {
      responseHeadersToAdd = [...responseHeadersToAdd, DEGRADED_HEADER]
    }
    if (this.#options.globalShadowMode === true && overallCode === 'OVER_LIMIT') {
      overallCode = 'OK'
      this.#stats.service.globalShadowMode.add()
    }
    return {
      overallCode,
      statuses,
      responseHeadersToAdd,
      dynamicMetadata: passed === undefined ? undefined : dynamicMetadata(request, passed),
    }
  }

  #serviceError(message: string): ShouldRateLimitError {
    this.#stats.service.serviceError.add()
    return new ShouldRateLimitError('service_error', message)
  }

  #limitsFor(request: RateLimitRequest): Limits {
    if (request.domain === '') throw this.#serviceError('rate limit domain must not be empty')
    if (request.descriptors.length === 0) {
      throw this.#serviceError('rate limit descriptor list must not be empty')
    }
    const excess = checkRequestLimits(request, this.#requestLimits)
    if (excess !== undefined) throw this.refuse(excess)
    const config = this.#config
    if (config === undefined) throw this.#serviceError('no rate limit configuration loaded')

    const limits: (RateLimit | undefined)[] = []
    let unlimited: boolean[] | undefined
    let replacing: Set<string> | undefined
    const descriptors = request.descriptors
    for (let i = 0; i < descriptors.length; i++) {
      const descriptor = descriptors[i] as (typeof descriptors)[number]
      if (descriptor.hitsAddend !== undefined && descriptor.hitsAddend > MAX_HITS_ADDEND) {
        throw this.#serviceError(
          `descriptor ${String(i)}: hits_addend must not exceed ${String(MAX_HITS_ADDEND)}`,
        )
      }
      let limit = config.getLimit(request.domain, descriptor)
      if (limit !== undefined) {
        if (limit.unit === 'UNKNOWN' && !limit.unlimited) {
          throw this.#serviceError(
            `descriptor ${String(i)}: rate limit override must have a unit other than UNKNOWN`,
          )
        }
        if (limit.replaces.length > 0) {
          replacing ??= new Set()
          for (const name of limit.replaces) replacing.add(name)
        }
        if (limit.unlimited) {
          unlimited ??= []
          unlimited[i] = true
          limit = undefined
        }
      }
      limits.push(limit)
    }
    if (replacing !== undefined) {
      for (let i = 0; i < limits.length; i++) {
        const name = limits[i]?.name
        if (name !== undefined && replacing.has(name)) limits[i] = undefined
      }
    }
    return { limits, unlimited }
  }

  #headers(
    statuses: readonly DescriptorStatus[],
    limits: readonly (RateLimit | undefined)[],
    globalQuota: boolean,
  ): readonly HeaderValue[] {
    const names = this.#options.responseHeaders
    if (names === undefined) return NO_HEADERS
    // The smallest remaining (first wins ties), unless a non-quota descriptor is over its
    // limit: then the last such one.
    let smallest = -1
    let lastOver = -1
    for (const [i, status] of statuses.entries()) {
      if (status.currentLimit === undefined) continue
      const quota = globalQuota || limits[i]?.quotaMode === true
      if (status.code === 'OVER_LIMIT' && !quota) lastOver = i
      if (smallest < 0 || status.limitRemaining < (statuses[smallest]?.limitRemaining ?? 0))
        smallest = i
    }
    const index = lastOver >= 0 ? lastOver : smallest
    const chosen = statuses[index]
    if (chosen?.currentLimit === undefined) return NO_HEADERS
    const headers = [
      { key: names.limit, value: String(chosen.currentLimit.requestsPerUnit) },
      { key: names.remaining, value: String(chosen.limitRemaining) },
      { key: names.reset, value: String(chosen.durationUntilReset ?? 0) },
    ]
    const windows = limits[index]?.windows
    if (windows !== undefined) headers.push({ key: POLICY_HEADER, value: policyValue(windows) })
    return headers
  }
}

/**
 * Added to every answer decided from local counters while the store fails
 * (`BACKEND_FAILURE_MODE=local`, issue 32).
 */
export const DEGRADED_HEADER: HeaderValue = Object.freeze({
  key: 'x-ratelimit-degraded',
  value: '1',
})

/**
 * The header listing a rule's windows when the `RateLimit-*` headers follow a rule of several
 * windows (issue 32), as draft-ietf-httpapi-ratelimit-headers-06 defines it beside
 * `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`.
 */
export const POLICY_HEADER = 'RateLimit-Policy'

/**
 * `RateLimit-Policy`'s value: each window as `<requests_per_unit>;w=<window seconds>`, in the
 * rule's order (draft-ietf-httpapi-ratelimit-headers-06, section 5.1), e.g. `10;w=1, 10000;w=86400`.
 */
export function policyValue(windows: readonly RateLimit[]): string {
  return windows.map((w) => `${String(w.requestsPerUnit)};w=${String(windowSeconds(w))}`).join(', ')
}

function mergeInto(target: JsonObject, source: JsonObject): void {
  for (const [key, value] of Object.entries(source)) {
    const existing = target[key]
    if (existing === undefined) target[key] = structuredClone(value)
    else if (isObject(existing) && isObject(value)) mergeInto(existing, value)
  }
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function dynamicMetadata(request: RateLimitRequest, passed: readonly RateLimit[]): JsonObject {
  const out: JsonObject = {
    domain: request.domain,
    descriptors: request.descriptors.map((d) => {
      const entry: JsonObject = { entries: d.entries.map((e) => `${e.key}=${e.value}`) }
      if (d.limit !== undefined) {
        entry.limit = `requests_per_unit:${String(d.limit.requestsPerUnit)} unit:${d.limit.unit}`
      }
      if (d.hitsAddend !== undefined) entry.hitsAddend = d.hitsAddend
      return entry
    }),
  }
  if (request.hitsAddend !== 0) out.hitsAddend = request.hitsAddend
  const metadata: JsonObject = {}
  let any = false
  for (const limit of passed) {
    if (limit.metadata === undefined) continue
    mergeInto(metadata, limit.metadata)
    any = true
  }
  if (any) out.metadata = metadata
  return out
}
