/**
 * Wiring: builds every part of the service from settings (the one place where implementations
 * are chosen) and returns it not yet listening. `main.ts` calls {@link RateLimitApp.listen};
 * tests do the same with port 0.
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import type { Server as HttpServer } from 'node:http'
import type { Writable } from 'node:stream'
import type { Logger } from 'pino'
import { Resolver } from 'node:dns/promises'
import type { Registry } from 'prom-client'
import {
  systemClock,
  systemEvery,
  systemMonotonicClock,
  systemRandom,
  type Clock,
  type Every,
  type MonotonicClock,
  type Random,
} from './clock.js'
import type { LoadConfigOptions } from './config/config.js'
import type { CounterStore } from './limiter/cache.js'
import type { StartupPolicy } from './limiter/startup.js'
import { StoreRateLimitCache } from './limiter/store-cache.js'
import { DegradingRateLimitCache } from './limiter/degrade.js'
import { CounterApi } from './service/counters.js'
import { LocalCache } from './limiter/local-cache.js'
import { createLogger } from './logging.js'
import { MemcacheCounterStore, memcacheTlsOptions } from './memcache/memcache-store.js'
import type { SrvResolver } from './memcache/servers.js'
import { MemoryCounterStore } from './memory/memory-store.js'
import { FileConfigProvider } from './provider/file-provider.js'
import type { ConfigProvider, ConfigUpdate } from './provider/provider.js'
import { xdsChannelCredentials, XdsConfigProvider } from './provider/xds-provider.js'
import { RedisCounterStore } from './redis/redis-store.js'
import { buildDebugServer } from './server/debug.js'
import {
  bindGrpcServer,
  buildGrpcServer,
  grpcServerCredentials,
  shutdownGrpcServer,
} from './server/grpc.js'
import { createGrpcHandlers } from './server/grpc-handlers.js'
import {
  buildNativeGrpcServer,
  listenNativeGrpc,
  type NativeGrpcDeps,
} from './server/grpc-native.js'
import { HealthChecker } from './server/health.js'
import { buildHttpServer } from './server/http.js'
import { listenHttp } from './listen.js'
import { ServerTls } from './server/tls.js'
import { RateLimitService } from './service/service.js'
import type { StatEntry } from './server/workers.js'
import { SettingsError } from '@gatehouse/settings'
import { type Settings } from './settings/settings.js'
import { TaggedStatsdSink } from './stats/dogstatsd.js'
import { StatsManager } from './stats/manager.js'
import { defaultMapperYaml, MetricMapper } from './stats/mapper.js'
import { buildPrometheusServer, listenPrometheus, PrometheusSink } from './stats/prometheus.js'
import { NullSink, StatsdSink, StreamSink } from './stats/sinks.js'
import { StatsStore, type StatsSink } from './stats/store.js'
import { buildTracing, type Tracing } from './telemetry/tracing.js'

/** Optional replacements for the real dependencies (tests, embedding). */
export interface AppDeps {
  /** @default the system clock */
  readonly clock?: Clock
  /** @default a pino logger from LOG_LEVEL / LOG_FORMAT on standard error */
  readonly logger?: Logger
  /**
   * Where the lines go that every worker of the executable would write alike: configuration
   * loads, the backend's connections and start-up attempts, start-up and TLS certificate reloads,
   * xDS. The executable's workers other than the first pass a quieter one
   * ({@link sharedLinesLogger}), so that each such line appears once. @default {@link logger}
   */
  readonly sharedLogger?: Logger
  /** Counter backend instead of the one `BACKEND_TYPE` selects. */
  readonly store?: CounterStore
  /** Configuration source instead of the one `CONFIG_TYPE` selects. */
  readonly provider?: ConfigProvider
  /** Stats sink instead of the one the settings select. */
  readonly statsSink?: StatsSink
  /** Where the stdout stats sink writes. @default process.stdout */
  readonly stdout?: Writable
  /**
   * Monotonic time for durations and deadlines (response times, gRPC deadlines, idle
   * connections). @default {@link systemMonotonicClock}
   */
  readonly monotonicClock?: MonotonicClock
  /**
   * Random source for the expiration jitter, the connection age jitter, the jitter of the Redis
   * start-up retries and the stats timers' sampling. @default {@link systemRandom}
   */
  readonly random?: Random
  /** DNS resolver for `MEMCACHE_SRV`. @default a `node:dns` Resolver on the system's servers */
  readonly resolver?: SrvResolver
  /** Runs repeating tasks (the `MEMCACHE_SRV_REFRESH` lookups). @default {@link systemEvery} */
  readonly every?: Every
  /**
   * What the debug port's `/stats` lists; the executable's workers pass the sum over all
   * workers. @default this process' stats
   */
  readonly statsListing?: () => Promise<StatEntry[]>
  /**
   * The primary process serves `PROMETHEUS_ADDR` with the sum of the workers' registries: this
   * process keeps its Prometheus registry but does not listen. @default false
   */
  readonly prometheusServedByPrimary?: boolean
  /** Tracing instead of the one `TRACING_ENABLED` builds. */
  readonly tracing?: Tracing
}

/** A gRPC server of either implementation. */
export interface GrpcListener {
  /** `native` or `grpc-js`. */
  readonly implementation: 'native' | 'grpc-js'
  /** Binds `host:port` or `unix:/path`; resolves with the port (0 for unix sockets). */
  listen(address: string): Promise<number>
  /** Stops accepting and waits for in-flight calls, at most `timeoutMs`. */
  shutdown(timeoutMs: number): Promise<void>
}

function buildGrpcListener(
  settings: Readonly<Settings>,
  deps: NativeGrpcDeps,
  tls: ServerTls | undefined,
): GrpcListener {
  const options = {
    maxConnectionAgeMs: settings.grpcMaxConnectionAgeMs,
    maxConnectionAgeGraceMs: settings.grpcMaxConnectionAgeGraceMs,
    maxConnectionIdleMs: settings.grpcMaxConnectionIdleMs,
    maxConcurrentStreams: settings.grpcMaxConcurrentStreams,
    maxCallDurationMs: settings.grpcMaxCallDurationMs,
  }
  if (settings.grpcServerImplementation === 'grpc-js') {
    const server = buildGrpcServer(deps, options)
    return {
      implementation: 'grpc-js',
      listen: (address) => bindGrpcServer(server, address, grpcServerCredentials(tls)),
      shutdown: (timeoutMs) => shutdownGrpcServer(server, timeoutMs),
    }
  }
  const native = buildNativeGrpcServer(deps, { ...options, tls })
  return {
    implementation: 'native',
    listen: (address) => listenNativeGrpc(native.server, address),
    shutdown: (timeoutMs) =>
      native.server.listening ? native.shutdown(timeoutMs) : Promise.resolve(),
  }
}

/** Where the servers listen. */
export interface ListeningAddresses {
  /** HTTP port. */
  readonly http: number
  /** gRPC port (0 when on a unix socket). */
  readonly grpc: number
  /** Debug port. */
  readonly debug: number
  /** Prometheus scrape port (`USE_PROMETHEUS`, when this process serves it). */
  readonly prometheus?: number
}

/** The assembled service. */
export interface RateLimitApp {
  readonly settings: Readonly<Settings>
  readonly logger: Logger
  /** {@link AppDeps.sharedLogger}: the lines every worker would write alike. */
  readonly sharedLogger: Logger
  readonly service: RateLimitService
  readonly health: HealthChecker
  readonly stats: StatsStore
  readonly statsManager: StatsManager
  readonly store: CounterStore
  readonly provider: ConfigProvider
  /** The gRPC server (`GRPC_SERVER_IMPLEMENTATION`). */
  readonly grpcServer: GrpcListener
  /** The gRPC server's TLS (`GRPC_SERVER_USE_TLS`), watched while listening; else undefined. */
  readonly grpcTls: ServerTls | undefined
  readonly httpServer: HttpServer
  readonly debugServer: HttpServer
  /** The Prometheus sink's registry (`USE_PROMETHEUS`), else undefined. */
  readonly prometheusRegistry: Registry | undefined
  /** The scrape endpoint on `PROMETHEUS_ADDR`, when this process serves it. */
  readonly prometheusServer: HttpServer | undefined
  /** The tracing (`TRACING_ENABLED`), else undefined. */
  readonly tracing: Tracing | undefined
  /**
   * Loads the initial configuration (waits for it unless `FORCE_START_WITHOUT_INITIAL_CONFIG`),
   * waits until the backend answers (as upstream does; the `backend` health component turns
   * healthy then), starts stats flushing, and binds the three listeners.
   *
   * @throws {Error} When a listener cannot bind, or {@link close} was called while waiting.
   */
  listen(): Promise<ListeningAddresses>
  /**
   * Graceful stop (SIGTERM): health turns unhealthy, listeners stop accepting, in-flight calls
   * finish (up to `drainTimeoutMs`), then the backend closes and stats are flushed.
   */
  close(drainTimeoutMs?: number): Promise<void>
  /** Sends pending stats to the sink now. */
  flushStats(): void
}

/**
 * How long and how often the store is tried at start: `BACKEND_STARTUP_TIMEOUT_SECONDS`, or
 * upstream's `REDIS_STARTUP_MAX_ELAPSED_TIME` for Redis when it is shorter; the intervals of
 * `REDIS_STARTUP_*` (= `KVSTORE_STARTUP_*`) for every backend.
 */
function startupPolicy(settings: Readonly<Settings>): StartupPolicy {
  const backendMs = settings.backendStartupTimeoutMs
  const redisMs = settings.backendType === 'redis' ? settings.redisStartupMaxElapsedMs : 0
  const redisFirst = redisMs > 0 && (backendMs === 0 || redisMs < backendMs)
  return {
    initialIntervalMs: settings.redisStartupInitialIntervalMs,
    maxIntervalMs: settings.redisStartupMaxIntervalMs,
    timeoutMs: redisFirst ? redisMs : backendMs,
    timeoutSetting: redisFirst
      ? 'REDIS_STARTUP_MAX_ELAPSED_TIME'
      : 'BACKEND_STARTUP_TIMEOUT_SECONDS',
  }
}

function buildStore(
  settings: Readonly<Settings>,
  deps: AppDeps & { clock: Clock; random: Random; logger: Logger },
  health: HealthChecker,
  stats: StatsStore,
): CounterStore {
  const { clock, random, logger } = deps
  const startup = startupPolicy(settings)
  if (settings.backendType === 'memcache') {
    const mc = settings.memcache
    return new MemcacheCounterStore({
      servers:
        mc.srv === ''
          ? mc.hostPort
          : {
              name: mc.srv,
              refreshMs: mc.srvRefreshMs,
              resolver: deps.resolver ?? new Resolver(),
              every: deps.every ?? systemEvery,
            },
      maxIdleConns: mc.maxIdleConns,
      tls: memcacheTlsOptions(mc),
      clock,
      logger,
      stats,
      startup,
      random,
    })
  }
  if (settings.backendType === 'memory') {
    return new MemoryCounterStore({
      clock,
      maxKeys: settings.memoryMaxKeys,
      evictions: stats.counter('ratelimit.memory.evicted_keys'),
    })
  }
  const redis: RedisCounterStore = new RedisCounterStore({
    main: settings.redis,
    perSecond: settings.redisPerSecond ? settings.redisPerSecondSettings : undefined,
    logger,
    random,
    startup,
    onConnectionsChange: settings.redisHealthCheckActiveConnection
      ? (ready) => {
          health.set('backend', ready > 0, redis.unavailableReason())
        }
      : undefined,
  })
  return redis
}

/**
 * `BACKEND_FAILURE_MODE=local` (issue 32): the store's cache, and in-process counters at
 * `ceil(limit / BACKEND_FAILURE_LOCAL_SHARE)` for the time the store fails.
 */
function degradingCache(
  settings: Readonly<Settings>,
  parts: {
    cache: StoreRateLimitCache
    store: CounterStore
    clock: Clock
    random: Random
    stats: StatsStore
    logger: Logger
  },
): DegradingRateLimitCache {
  const { clock } = parts
  const local = new MemoryCounterStore({ clock, maxKeys: settings.memoryMaxKeys })
  return new DegradingRateLimitCache({
    primary: parts.cache,
    store: parts.store,
    fallback: new StoreRateLimitCache({
      store: local,
      clock,
      nearLimitRatio: settings.nearLimitRatio,
      cacheKeyPrefix: settings.cacheKeyPrefix,
      expirationJitterMaxSeconds: 0,
      random: parts.random,
    }),
    local,
    share: settings.backendFailureLocalShare,
    checkIntervalMs: settings.backendFailureCheckIntervalMs,
    checkKey: `${settings.cacheKeyPrefix}gatehouse_backend_check`,
    degraded: parts.stats.counter('ratelimit.service.backend_degraded'),
    clock,
    logger: parts.logger,
  })
}

/**
 * Waits until the backend `BACKEND_TYPE` selects answers, as {@link RateLimitApp.listen} does,
 * then closes it: what the executable's primary process does before forking workers, so that an
 * unreachable backend is reported once (its `warn` lines, then one error) instead of by every
 * worker. Nothing to wait for with the memory backend.
 *
 * @throws {@link BackendUnavailableError} When the backend does not answer within
 *   `BACKEND_STARTUP_TIMEOUT_SECONDS` (naming the variable of its address).
 * @throws {Error} When the Redis or memcache TLS files cannot be read or an address is malformed.
 */
export async function waitForBackendAtStart(
  settings: Readonly<Settings>,
  logger: Logger,
): Promise<void> {
  if (settings.backendType === 'memory') return
  const stats = new StatsStore()
  const store = buildStore(
    settings,
    { clock: systemClock, random: systemRandom, logger },
    new HealthChecker(),
    stats,
  )
  try {
    await store.ready()
  } finally {
    await store.close()
  }
}

function buildProvider(
  settings: Readonly<Settings>,
  logger: Logger,
  random: Random,
): ConfigProvider {
  if (settings.configType === 'GRPC_XDS_SOTW') {
    const { xds } = settings
    return new XdsConfigProvider({
      serverUrl: xds.serverUrl,
      node: { id: xds.nodeId, metadata: { ...xds.nodeMetadata } },
      connectRetryIntervalMs: xds.connectRetryIntervalMs,
      additionalHeaders: xds.additionalHeaders,
      ...xdsChannelCredentials(xds),
      backoff: {
        initialMs: xds.backoffInitialMs,
        maxMs: xds.backoffMaxMs,
        randomFactor: xds.backoffRandomFactor,
        jitter: xds.backoffJitter,
      },
      maxMsgSizeBytes: xds.maxMsgSizeBytes,
      logger,
      random,
    })
  }
  return fileConfigProvider(settings, logger)
}

/**
 * The FILE provider of the settings (`RUNTIME_*`): the files the service loads, named as its
 * errors name them; `gatehouse-ratelimit check` reads them through it too.
 */
export function fileConfigProvider(
  settings: Readonly<Settings>,
  logger: Logger,
): FileConfigProvider {
  return new FileConfigProvider({
    root: settings.runtimeRoot,
    subdirectory: settings.runtimeSubdirectory,
    appDirectory: settings.runtimeAppDirectory,
    ignoreDotFiles: settings.runtimeIgnoreDotFiles,
    watchRoot: settings.runtimeWatchRoot,
    logger,
  })
}

/**
 * How the settings load configuration files (the service's loads and `gatehouse-ratelimit
 * check`): `MERGE_DOMAIN_CONFIG`, `RATE_LIMIT_ALGORITHM`, and the algorithms the backend cannot
 * run (a store without an atomic `take`, memcache's, has no token bucket).
 *
 * @param canTake Whether the backend's store has `take`.
 */
export function configLoadOptions(
  settings: Readonly<Settings>,
  canTake: boolean,
): Required<Omit<LoadConfigOptions, 'stats'>> {
  return {
    mergeDomainConfig: settings.mergeDomainConfig,
    defaultAlgorithm: settings.rateLimitAlgorithm,
    unsupportedAlgorithms: canTake
      ? {}
      : {
          token_bucket: `BACKEND_TYPE=${settings.backendType} has no atomic token bucket (use redis or memory)`,
        },
  }
}

function loadGrpcTls(settings: Readonly<Settings>, logger: Logger): ServerTls | undefined {
  if (!settings.grpcServerUseTls) return undefined
  return ServerTls.load(
    {
      certFile: settings.grpcServerTlsCert,
      keyFile: settings.grpcServerTlsKey,
      clientCaFile: settings.grpcClientTlsCaCert,
      clientSan: settings.grpcClientTlsSan,
    },
    { logger },
  )
}

/**
 * Checks, without building the service, that the TLS files the settings name (gRPC server, xDS
 * client) can be read and used: what the executable's primary process does before forking
 * workers, so that a bad file ends the start with exit 2 there too.
 *
 * @throws {@link SettingsError} As {@link buildRateLimitApp} does for these files.
 */
export function checkTlsFiles(settings: Readonly<Settings>, logger: Logger): void {
  loadGrpcTls(settings, logger)
  if (settings.configType === 'GRPC_XDS_SOTW') xdsChannelCredentials(settings.xds)
}

/**
 * The statsd_exporter mapping: `PROMETHEUS_MAPPER_YAML`'s file, else the default mapping.
 *
 * @throws {@link SettingsError} When the file cannot be read or is not a valid mapping.
 */
export function loadMetricMapper(settings: Readonly<Settings>): MetricMapper {
  const path = settings.prometheusMapperYaml
  if (path === '') {
    return MetricMapper.fromYaml(
      defaultMapperYaml(settings.prometheusResponseTimeAsMilliseconds),
      'default mapping',
    )
  }
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new SettingsError([
      `PROMETHEUS_MAPPER_YAML: cannot read ${path}: ${(error as Error).message}`,
    ])
  }
  return MetricMapper.fromYaml(text, `PROMETHEUS_MAPPER_YAML (${path})`)
}

/**
 * Which stats sink the settings enable (`loadSettings` refuses two), as upstream's `runner.go`:
 * `none` (`DISABLE_STATS`), `prometheus`, `dogstatsd` (`USE_DOG_STATSD`), `statsd`, or `stdout`
 * (none of these: gostats' logging sink on standard output).
 */
export function statsSinkKind(
  settings: Readonly<Settings>,
): 'none' | 'prometheus' | 'dogstatsd' | 'statsd' | 'stdout' {
  if (settings.disableStats) return 'none'
  if (settings.usePrometheus) return 'prometheus'
  if (settings.useTaggedStatsd) return 'dogstatsd'
  return settings.useStatsd ? 'statsd' : 'stdout'
}

/** The one sink the settings enable ({@link statsSinkKind}). */
function buildSink(settings: Readonly<Settings>, clock: Clock, stdout: Writable): StatsSink {
  const kind = statsSinkKind(settings)
  if (kind === 'none') return new NullSink()
  if (kind === 'prometheus') {
    return new PrometheusSink({
      mapper: loadMetricMapper(settings),
      extraTagNames: Object.keys(settings.extraTags),
    })
  }
  if (kind === 'dogstatsd') {
    return new TaggedStatsdSink(
      settings.statsdHost,
      settings.statsdPort,
      settings.taggedStatsdMogrifiers,
    )
  }
  if (kind === 'statsd') return new StatsdSink(settings.statsdHost, settings.statsdPort)
  return new StreamSink(stdout, clock)
}

function closeHttp(server: HttpServer, timeoutMs: number): Promise<void> {
  if (!server.listening) return Promise.resolve()
  return new Promise((resolve) => {
    const poll = setInterval(() => {
      server.closeIdleConnections()
    }, 50)
    const force = setTimeout(() => {
      server.closeAllConnections()
    }, timeoutMs)
    server.close(() => {
      clearInterval(poll)
      clearTimeout(force)
      resolve()
    })
    server.closeIdleConnections()
  })
}

/**
 * The span around one store round trip, per `BACKEND_TYPE`: upstream's `Redis Pipeline Execution`
 * (its Redis cache); upstream's memcache cache makes no span, so memcache and the memory backend
 * (a Gatehouse addition) get parallel names.
 */
const STORE_SPAN_NAMES: Readonly<Record<Settings['backendType'], string>> = {
  redis: 'Redis Pipeline Execution',
  memcache: 'Memcache Pipeline Execution',
  memory: 'Memory Pipeline Execution',
}

/**
 * Builds the service. Nothing listens and no configuration is read until
 * {@link RateLimitApp.listen}; the Redis connections are opened here (in the background).
 *
 * @throws {Error} When the Redis or memcache TLS files cannot be read (or, for memcache, are not a
 *   valid certificate or key) or the Redis address is malformed.
 * @throws {@link SettingsError} When the gRPC server's TLS files (`GRPC_SERVER_TLS_CERT`,
 *   `GRPC_SERVER_TLS_KEY`, `GRPC_CLIENT_TLS_CACERT`) cannot be read or do not make a valid key
 *   pair, or the xDS client's (`CONFIG_GRPC_XDS_*TLS*`) cannot be read (the executable exits 2,
 *   as for any invalid setting).
 */
export function buildRateLimitApp(settings: Readonly<Settings>, deps: AppDeps = {}): RateLimitApp {
  const clock = deps.clock ?? systemClock
  const monotonicClock = deps.monotonicClock ?? systemMonotonicClock
  const random = deps.random ?? systemRandom
  const logger =
    deps.logger ??
    createLogger({ level: settings.logLevel, format: settings.logFormat }, process.stderr, clock)
  const shared = deps.sharedLogger ?? logger
  const stats = new StatsStore({ extraTags: settings.extraTags, random })
  const statsManager = new StatsManager(stats, {
    maxDynamicKeys: settings.statsMaxDynamicKeys,
    maxUnknownDomains: settings.statsMaxUnknownDomains,
  })
  const health = new HealthChecker({ configComponent: settings.healthyWithAtLeastOneConfigLoaded })
  const store =
    deps.store ?? buildStore(settings, { ...deps, clock, random, logger: shared }, health, stats)
  // Upstream's memcache backend does not implement it: it increments every key.
  const stopIncrement =
    settings.stopCacheKeyIncrementWhenOverlimit && settings.backendType !== 'memcache'
  if (settings.backendType === 'memcache' && settings.stopCacheKeyIncrementWhenOverlimit) {
    shared.warn('STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT has no effect with the memcache backend')
  }
  const tracing = deps.tracing ?? buildTracing(settings, random)
  const localCache =
    settings.localCacheSizeInBytes > 0
      ? new LocalCache(settings.localCacheSizeInBytes, clock, stats)
      : undefined
  const cache = new StoreRateLimitCache({
    store,
    clock,
    localCache,
    nearLimitRatio: settings.nearLimitRatio,
    cacheKeyPrefix: settings.cacheKeyPrefix,
    expirationJitterMaxSeconds: settings.expirationJitterMaxMs / 1000,
    stopCacheKeyIncrementWhenOverlimit: stopIncrement,
    random,
    tracing,
    storeSpanName: STORE_SPAN_NAMES[settings.backendType],
  })
  const degrading =
    settings.backendFailureMode === 'local'
      ? degradingCache(settings, { cache, store, clock, random, stats, logger: shared })
      : undefined
  const service = new RateLimitService(
    { cache: degrading ?? cache, stats: statsManager, logger: shared, tracing },
    {
      globalShadowMode: settings.shadowMode,
      quotaMode: settings.quotaMode,
      cacheCouplesDescriptors: stopIncrement,
      responseDynamicMetadata: settings.responseDynamicMetadata,
      ...configLoadOptions(settings, store.take !== undefined),
      requestLimits: {
        maxDescriptors: settings.maxDescriptorsPerRequest,
        maxEntries: settings.maxEntriesPerDescriptor,
        maxEntryBytes: settings.maxDescriptorEntryBytes,
      },
      responseHeaders: settings.limitResponseHeadersEnabled
        ? {
            limit: settings.limitLimitHeader,
            remaining: settings.limitRemainingHeader,
            reset: settings.limitResetHeader,
          }
        : undefined,
    },
  )
  const provider = deps.provider ?? buildProvider(settings, shared, random)
  const sink = deps.statsSink ?? buildSink(settings, clock, deps.stdout ?? process.stdout)
  const handlers = createGrpcHandlers({
    service,
    health,
    stats,
    logger,
    monotonicClock,
    tracing,
  })
  const grpcTls = loadGrpcTls(settings, shared)
  const grpcServer = buildGrpcListener(settings, { handlers, monotonicClock, random }, grpcTls)
  const httpServer = buildHttpServer({
    service,
    health,
    logger,
    tracing,
    counters:
      settings.adminApiToken === ''
        ? undefined
        : {
            api: new CounterApi({
              service,
              store,
              clock,
              cacheKeyPrefix: settings.cacheKeyPrefix,
              localCache,
            }),
            token: settings.adminApiToken,
            logger: shared,
            stats,
            requestLimits: service.requestLimits,
          },
  })
  const debugServer = buildDebugServer({
    service,
    stats,
    logger,
    statsListing: deps.statsListing,
  })
  const prometheusRegistry = sink instanceof PrometheusSink ? sink.registry : undefined
  const prometheusServer =
    prometheusRegistry !== undefined && deps.prometheusServedByPrimary !== true
      ? buildPrometheusServer(
          settings.prometheusPath,
          () => prometheusRegistry.metrics(),
          (error) => {
            logger.error({ err: error }, 'cannot collect the metrics')
          },
        )
      : undefined

  let flushTimer: NodeJS.Timeout | undefined
  let closed = false
  const flushStats = (): void => {
    sink.flush(stats.collect())
  }
  const onUpdate = (update: ConfigUpdate): Error | undefined => {
    if ('error' in update) {
      statsManager.service.configLoadError.add()
      shared.error(`Error loading new configuration: ${update.error.message}`)
      return update.error
    }
    const result = service.loadConfig(update.files)
    if (!result.ok) return result.error
    health.set('config', result.config.domains.length > 0)
    return undefined
  }

  return {
    settings,
    logger,
    sharedLogger: shared,
    service,
    health,
    stats,
    statsManager,
    store,
    provider,
    grpcServer,
    grpcTls,
    httpServer,
    debugServer,
    prometheusRegistry,
    prometheusServer,
    tracing,
    flushStats,
    async listen() {
      const backendReady = store.ready().then(() => {
        health.set('backend', true)
      })
      // Awaited below; a store that fails at once (memcache: no SRV record) must not count as an
      // unhandled rejection while the configuration loads.
      backendReady.catch(() => undefined)
      const started = provider.start(onUpdate)
      if (settings.forceStartWithoutInitialConfig) {
        started.catch((error: unknown) => {
          shared.error(`configuration provider failed: ${(error as Error).message}`)
        })
      } else {
        shared.info('Waiting for initial ratelimit config update event')
        await started
      }
      // Like upstream, listen only once the store answers (so no call fails just for starting).
      shared.info('Waiting for the backend to answer')
      await backendReady
      flushTimer = setInterval(flushStats, settings.statsFlushIntervalMs)
      flushTimer.unref()
      grpcTls?.watch()
      const grpcAddress =
        settings.grpcUds !== ''
          ? `unix:${settings.grpcUds}`
          : `${settings.grpcHost}:${String(settings.grpcPort)}`
      const [grpc, http, debug, prometheus] = await Promise.all([
        grpcServer.listen(grpcAddress),
        listenHttp(httpServer, settings.port, settings.host),
        listenHttp(debugServer, settings.debugPort, settings.debugHost),
        prometheusServer && listenPrometheus(prometheusServer, settings.prometheusAddr),
      ])
      shared.info(`listening: http ${String(http)}, grpc ${grpcAddress}, debug ${String(debug)}`)
      return { http, grpc, debug, prometheus }
    },
    async close(drainTimeoutMs = 10_000) {
      if (closed) return
      closed = true
      health.set('sigterm', false)
      grpcTls?.close()
      await provider.stop()
      await Promise.all([
        grpcServer.shutdown(drainTimeoutMs),
        closeHttp(httpServer, drainTimeoutMs),
        closeHttp(debugServer, 0),
        prometheusServer && closeHttp(prometheusServer, 0),
      ])
      clearInterval(flushTimer)
      degrading?.close()
      await store.close()
      flushStats()
      await Promise.all([sink.close(), tracing?.shutdown().catch(() => undefined)])
    },
  }
}
