/**
 * Service settings from environment variables, with upstream's names and defaults
 * (envoyproxy/ratelimit `src/settings/settings.go`). The key-value store's variables are
 * accepted both as `REDIS_*` (upstream) and `KVSTORE_*` (the spec's spelling).
 *
 * @module
 */
import { RateLimitError } from '../errors.js'
import { EnvReader } from './env.js'

/** Thrown by {@link loadSettings}; lists every problem, one per line. */
export class ConfigError extends RateLimitError {
  declare readonly code: 'ERR_INVALID_SETTINGS'
  /** Each problem as `NAME: problem (got "…")`. */
  readonly problems: readonly string[]
  constructor(problems: readonly string[]) {
    super('ERR_INVALID_SETTINGS', `invalid settings:\n  ${problems.join('\n  ')}`)
    this.problems = problems
  }
}

/** Log levels (logrus names, as upstream's `LOG_LEVEL`). */
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'

/** Connection settings of one Redis instance (the main one or the per-second one). */
export interface RedisSettings {
  /** `REDIS_SOCKET_TYPE`: how `url` is dialled when it is not a `redis://` URL. @default 'unix' */
  readonly socketType: 'tcp' | 'unix'
  /** `REDIS_TYPE`; only `single` in this version. @default 'single' */
  readonly type: 'single'
  /** `REDIS_URL`: `host:port`, a socket path, or `redis://[user:pass@]host:port[/db]`. */
  readonly url: string
  /** `REDIS_POOL_SIZE`: connections, used round-robin. @default 10 */
  readonly poolSize: number
  /** `REDIS_AUTH`: `password` or `user:password`. Secret. @default '' */
  readonly auth: string
  /** `REDIS_TLS`. @default false */
  readonly tls: boolean
  /** `REDIS_TLS_CLIENT_CERT` (PEM file path). */
  readonly tlsClientCert: string
  /** `REDIS_TLS_CLIENT_KEY` (PEM file path). */
  readonly tlsClientKey: string
  /** `REDIS_TLS_CACERT` (PEM file path). */
  readonly tlsCaCert: string
  /** `REDIS_TLS_SKIP_HOSTNAME_VERIFICATION`: verify the chain but not the host name. */
  readonly tlsSkipHostnameVerification: boolean
  /** `REDIS_TIMEOUT`: connect and command timeout, milliseconds. @default 10000 */
  readonly timeoutMs: number
  /** `REDIS_POOL_ON_EMPTY_BEHAVIOR` (accepted; connections multiplex, so never empty). */
  readonly poolOnEmptyBehavior: 'CREATE' | 'ERROR' | 'WAIT'
  /** `REDIS_PIPELINE_WINDOW`, milliseconds (cluster only upstream; accepted, no effect). */
  readonly pipelineWindowMs: number
}

/** Every setting of the service. */
export interface Settings {
  /** `HOST` of the HTTP server. @default '0.0.0.0' */
  readonly host: string
  /** `PORT` of the HTTP server. @default 8080 */
  readonly port: number
  /** `DEBUG_HOST`. @default '0.0.0.0' */
  readonly debugHost: string
  /** `DEBUG_PORT`. @default 6070 */
  readonly debugPort: number
  /** `GRPC_HOST`. @default '0.0.0.0' */
  readonly grpcHost: string
  /** `GRPC_PORT`. @default 8081 */
  readonly grpcPort: number
  /** `GRPC_UDS`: a unix socket path to serve gRPC on instead of host:port. @default '' */
  readonly grpcUds: string
  /** `GRPC_MAX_CONNECTION_AGE`, milliseconds (±10% jitter applied by the server). @default 24h */
  readonly grpcMaxConnectionAgeMs: number
  /** `GRPC_MAX_CONNECTION_AGE_GRACE`, milliseconds. @default 1h */
  readonly grpcMaxConnectionAgeGraceMs: number
  /**
   * `GRPC_MAX_CONNECTION_IDLE` (Gatehouse addition; grpc-go's `MaxConnectionIdle`), milliseconds:
   * a connection without calls for this long gets GOAWAY; 0 never. @default 5m
   */
  readonly grpcMaxConnectionIdleMs: number
  /**
   * `GRPC_MAX_CONCURRENT_STREAMS` (Gatehouse addition): calls one connection may have open at
   * once (HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS`). @default 100
   */
  readonly grpcMaxConcurrentStreams: number
  /**
   * `GRPC_MAX_CALL_DURATION` (Gatehouse addition), milliseconds: the longest a call may take,
   * from its headers to its answer, whatever its `grpc-timeout`; then DEADLINE_EXCEEDED. A
   * `Health/Watch` is bound by it only until its request arrives. @default 10s
   */
  readonly grpcMaxCallDurationMs: number
  /**
   * `GRPC_SERVER_IMPLEMENTATION` (Gatehouse addition): `native` (a lean gRPC server on
   * node:http2, the default) or `grpc-js` (@grpc/grpc-js). Same wire behaviour.
   */
  readonly grpcServerImplementation: 'native' | 'grpc-js'
  /**
   * `RATELIMIT_WORKERS` (Gatehouse addition): processes serving the same ports (node:cluster), to
   * use more than one core. More than 1 requires the Redis backend. @default 2 with the Redis
   * backend on a host with at least 2 cores ({@link HostInfo.availableCores}), else 1
   */
  readonly workers: number
  /**
   * `MAX_DESCRIPTORS_PER_REQUEST` (Gatehouse addition): descriptors one request may carry; more
   * is refused as a service error. @default 64
   */
  readonly maxDescriptorsPerRequest: number
  /**
   * `MAX_ENTRIES_PER_DESCRIPTOR` (Gatehouse addition): entries one descriptor may carry. @default 32
   */
  readonly maxEntriesPerDescriptor: number
  /**
   * `MAX_DESCRIPTOR_ENTRY_BYTES` (Gatehouse addition): longest descriptor entry key, and longest
   * value, in UTF-8 bytes. @default 4096
   */
  readonly maxDescriptorEntryBytes: number
  /** `LOG_LEVEL`. @default 'warn' */
  readonly logLevel: LogLevel
  /** `LOG_FORMAT`: `json` gives `@timestamp`, `@message`, `level`. @default 'text' */
  readonly logFormat: 'text' | 'json'

  /** `CONFIG_TYPE`; only `FILE` in this version. */
  readonly configType: 'FILE'
  /** `FORCE_START_WITHOUT_INITIAL_CONFIG`. @default false */
  readonly forceStartWithoutInitialConfig: boolean
  /** `RUNTIME_ROOT`. @default '/srv/runtime_data/current' */
  readonly runtimeRoot: string
  /** `RUNTIME_SUBDIRECTORY`. @default '' */
  readonly runtimeSubdirectory: string
  /** `RUNTIME_APPDIRECTORY`. @default 'config' */
  readonly runtimeAppDirectory: string
  /** `RUNTIME_IGNOREDOTFILES`. @default false */
  readonly runtimeIgnoreDotFiles: boolean
  /** `RUNTIME_WATCH_ROOT`: true = reload when the root symlink is swapped; false = on content changes. @default true */
  readonly runtimeWatchRoot: boolean
  /** `MERGE_DOMAIN_CONFIG`. @default false */
  readonly mergeDomainConfig: boolean
  /** `HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED`. @default false */
  readonly healthyWithAtLeastOneConfigLoaded: boolean

  /** `USE_STATSD`: statsd sink (TCP); false writes stats to standard output. @default true */
  readonly useStatsd: boolean
  /** `STATSD_HOST`. @default 'localhost' */
  readonly statsdHost: string
  /** `STATSD_PORT`. @default 8125 */
  readonly statsdPort: number
  /** `EXTRA_TAGS` (`k1:v1,k2:v2`). */
  readonly extraTags: Readonly<Record<string, string>>
  /** `STATS_FLUSH_INTERVAL`, milliseconds. @default 10000 */
  readonly statsFlushIntervalMs: number
  /** `DISABLE_STATS`. @default false */
  readonly disableStats: boolean
  /**
   * `STATS_MAX_DYNAMIC_KEYS` (Gatehouse addition): stat keys made from request values (limit
   * overrides, `detailed_metric`, `value_to_metric`) that get their own stats; later ones are
   * counted under `<domain>.stats_overflow`. @default 1000
   */
  readonly statsMaxDynamicKeys: number

  /** `BACKEND_TYPE`: `redis` (default) or `memory` (Gatehouse addition). */
  readonly backendType: 'redis' | 'memory'
  /**
   * `MEMORY_MAX_KEYS` (Gatehouse addition): most counters the memory backend keeps; beyond it the
   * least recently incremented is evicted. @default 100000
   */
  readonly memoryMaxKeys: number
  /** `EXPIRATION_JITTER_MAX_SECONDS`. @default 300 */
  readonly expirationJitterMaxSeconds: number
  /** `LOCAL_CACHE_SIZE_IN_BYTES`; 0 disables. @default 0 */
  readonly localCacheSizeInBytes: number
  /** `NEAR_LIMIT_RATIO` (0..1). @default 0.8 */
  readonly nearLimitRatio: number
  /** `CACHE_KEY_PREFIX`. @default '' */
  readonly cacheKeyPrefix: string
  /** `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`. @default false */
  readonly stopCacheKeyIncrementWhenOverlimit: boolean

  /** `LIMIT_RESPONSE_HEADERS_ENABLED`. @default false */
  readonly limitResponseHeadersEnabled: boolean
  /** `LIMIT_LIMIT_HEADER`. @default 'RateLimit-Limit' */
  readonly limitLimitHeader: string
  /** `LIMIT_REMAINING_HEADER`. @default 'RateLimit-Remaining' */
  readonly limitRemainingHeader: string
  /** `LIMIT_RESET_HEADER`. @default 'RateLimit-Reset' */
  readonly limitResetHeader: string

  /** `SHADOW_MODE`. @default false */
  readonly shadowMode: boolean
  /** `QUOTA_MODE`. @default false */
  readonly quotaMode: boolean
  /** `RESPONSE_DYNAMIC_METADATA`. @default false */
  readonly responseDynamicMetadata: boolean

  /** The main Redis (`REDIS_*` / `KVSTORE_*`). */
  readonly redis: RedisSettings
  /** `REDIS_PERSECOND`: per-second limits go to a second Redis. @default false */
  readonly redisPerSecond: boolean
  /** The per-second Redis (`REDIS_PERSECOND_*` / `KVSTORE_PERSECOND_*`). */
  readonly redisPerSecondSettings: RedisSettings
  /** `REDIS_HEALTH_CHECK_ACTIVE_CONNECTION`: backend unhealthy while no connection is up. @default false */
  readonly redisHealthCheckActiveConnection: boolean
}

function names(suffix: string, perSecond: boolean): [string, string] {
  const infix = perSecond ? 'PERSECOND_' : ''
  return [`REDIS_${infix}${suffix}`, `KVSTORE_${infix}${suffix}`]
}

function readRedis(r: EnvReader, perSecond: boolean, main?: RedisSettings): RedisSettings {
  const n = (suffix: string): [string, string] => names(suffix, perSecond)
  const type = r.oneOf(n('TYPE'), 'SINGLE', ['SINGLE', 'SENTINEL', 'CLUSTER'])
  if (type !== 'SINGLE') {
    r.invalid(n('TYPE')[0], 'only "single" is supported by this version', type.toLowerCase())
  }
  const socketType = r.oneOf(n('SOCKET_TYPE'), 'unix', ['tcp', 'unix'])
  const url = r.string(
    n('URL'),
    perSecond
      ? '/var/run/nutcracker/ratelimitpersecond.sock'
      : '/var/run/nutcracker/ratelimit.sock',
  )
  if (socketType === 'tcp' && !/^rediss?:\/\//.test(url) && !/^(\[[^\]]*\]|[^:]*):\d+$/.test(url)) {
    r.invalid(
      r.raw(n('URL'))?.name ?? n('URL')[0],
      'must be host:port or a redis:// URL for a tcp socket',
      url,
    )
  }
  return {
    socketType,
    type: 'single',
    url,
    poolSize: r.int(n('POOL_SIZE'), 10, 1, 1000),
    auth: r.string(n('AUTH'), ''),
    tls: r.bool(n('TLS'), false),
    tlsClientCert: r.string(n('TLS_CLIENT_CERT'), main?.tlsClientCert ?? ''),
    tlsClientKey: r.string(n('TLS_CLIENT_KEY'), main?.tlsClientKey ?? ''),
    tlsCaCert: r.string(n('TLS_CACERT'), main?.tlsCaCert ?? ''),
    tlsSkipHostnameVerification: r.bool(
      n('TLS_SKIP_HOSTNAME_VERIFICATION'),
      main?.tlsSkipHostnameVerification ?? false,
    ),
    timeoutMs: r.duration(n('TIMEOUT'), '10s'),
    poolOnEmptyBehavior: r.oneOf(n('POOL_ON_EMPTY_BEHAVIOR'), 'CREATE', [
      'CREATE',
      'ERROR',
      'WAIT',
    ]),
    pipelineWindowMs: r.duration(n('PIPELINE_WINDOW'), '0'),
  }
}

const LOG_LEVELS: Readonly<Record<string, LogLevel>> = {
  trace: 'trace',
  debug: 'debug',
  info: 'info',
  warn: 'warn',
  warning: 'warn',
  error: 'error',
  fatal: 'fatal',
  panic: 'fatal',
}

/** Turns a true boolean setting of a feature this version lacks into a problem. */
function unsupported(r: EnvReader, name: string, feature: string): void {
  if (r.bool(name, false))
    r.invalid(name, `${feature} is not supported by this version of Gatehouse`, 'true')
}

/** Facts about the host that some defaults depend on, passed in so that {@link loadSettings} stays pure. */
export interface HostInfo {
  /** CPU cores this process may use (`os.availableParallelism()`). @default 1 */
  readonly availableCores?: number
}

/**
 * Reads and validates every setting. Pure: reads only `env` and `host`.
 *
 * @param env Environment variables. @default process.env
 * @param host The host's cores (for the `RATELIMIT_WORKERS` default). @default one core
 * @returns Frozen settings.
 * @throws {@link ConfigError} Listing every invalid or unsupported variable at once.
 */
export function loadSettings(
  env: Readonly<Record<string, string | undefined>> = process.env,
  host: HostInfo = {},
): Readonly<Settings> {
  return readSettings(new EnvReader(env), host)
}

/**
 * Every environment variable the service reads, with its default as text (empty when it has
 * none), in the order of the settings: what `gatehouse-ratelimit --help` prints. Names of one
 * setting's spellings are joined with ` | ` (`REDIS_URL | KVSTORE_URL`).
 *
 * @param host The host's cores, for defaults that depend on them. @default one core
 */
export function settingsDefaults(host: HostInfo = {}): ReadonlyMap<string, string> {
  const reader = new EnvReader({})
  readSettings(reader, host)
  return reader.defaults
}

function readSettings(r: EnvReader, host: HostInfo): Readonly<Settings> {
  const logLevelText = r.string('LOG_LEVEL', 'WARN')
  const logLevel = LOG_LEVELS[logLevelText.toLowerCase()]
  if (logLevel === undefined) {
    r.invalid(
      'LOG_LEVEL',
      'must be one of trace, debug, info, warn, error, fatal, panic',
      logLevelText,
    )
  }
  const configType = r.string('CONFIG_TYPE', 'FILE')
  if (configType.toUpperCase() === 'GRPC_XDS_SOTW') {
    r.invalid(
      'CONFIG_TYPE',
      'GRPC_XDS_SOTW is not supported by this version of Gatehouse',
      configType,
    )
  } else if (configType.toUpperCase() !== 'FILE') {
    r.invalid('CONFIG_TYPE', `Invalid setting for ConfigType: ${configType}`)
  }
  const backendText = r.string('BACKEND_TYPE', 'redis').toLowerCase()
  let backendType: 'redis' | 'memory' = 'redis'
  if (backendText === 'memory') backendType = 'memory'
  else if (backendText === 'memcache') {
    r.invalid('BACKEND_TYPE', 'memcache is not supported by this version of Gatehouse', backendText)
  } else if (backendText !== 'redis') {
    r.invalid('BACKEND_TYPE', 'must be redis or memory', backendText)
  }
  unsupported(r, 'USE_PROMETHEUS', 'the Prometheus sink')
  unsupported(r, 'USE_DOG_STATSD', 'the DogStatsD sink')
  unsupported(r, 'TRACING_ENABLED', 'tracing')
  unsupported(r, 'GRPC_SERVER_USE_TLS', 'gRPC server TLS')

  const redis = readRedis(r, false)
  const redisPerSecond = r.bool(['REDIS_PERSECOND', 'KVSTORE_PERSECOND'], false)
  const settings: Settings = {
    host: r.string('HOST', '0.0.0.0'),
    port: r.port('PORT', 8080),
    debugHost: r.string('DEBUG_HOST', '0.0.0.0'),
    debugPort: r.port('DEBUG_PORT', 6070),
    grpcHost: r.string('GRPC_HOST', '0.0.0.0'),
    grpcPort: r.port('GRPC_PORT', 8081),
    grpcUds: r.string('GRPC_UDS', ''),
    grpcMaxConnectionAgeMs: r.duration('GRPC_MAX_CONNECTION_AGE', '24h'),
    grpcMaxConnectionAgeGraceMs: r.duration('GRPC_MAX_CONNECTION_AGE_GRACE', '1h'),
    grpcMaxConnectionIdleMs: r.duration('GRPC_MAX_CONNECTION_IDLE', '5m'),
    grpcMaxConcurrentStreams: r.int('GRPC_MAX_CONCURRENT_STREAMS', 100, 1, 2 ** 31 - 1),
    grpcMaxCallDurationMs: r.duration('GRPC_MAX_CALL_DURATION', '10s'),
    grpcServerImplementation: r.oneOf('GRPC_SERVER_IMPLEMENTATION', 'native', [
      'native',
      'grpc-js',
    ]),
    // Two processes by default where they can run in parallel: measured on 2 cores, about 1.5x
    // the decisions/s of one (bench/RESULTS.md). The memory backend's counters are per process.
    workers: r.int(
      'RATELIMIT_WORKERS',
      backendType === 'redis' && (host.availableCores ?? 1) >= 2 ? 2 : 1,
      1,
      64,
    ),
    maxDescriptorsPerRequest: r.int('MAX_DESCRIPTORS_PER_REQUEST', 64, 1, 100_000),
    maxEntriesPerDescriptor: r.int('MAX_ENTRIES_PER_DESCRIPTOR', 32, 1, 100_000),
    maxDescriptorEntryBytes: r.int('MAX_DESCRIPTOR_ENTRY_BYTES', 4096, 1, 4 * 1024 * 1024),
    logLevel: logLevel ?? 'warn',
    logFormat: r.oneOf('LOG_FORMAT', 'text', ['text', 'json']),
    configType: 'FILE',
    forceStartWithoutInitialConfig: r.bool('FORCE_START_WITHOUT_INITIAL_CONFIG', false),
    runtimeRoot: r.string('RUNTIME_ROOT', '/srv/runtime_data/current'),
    runtimeSubdirectory: r.string('RUNTIME_SUBDIRECTORY', ''),
    runtimeAppDirectory: r.string('RUNTIME_APPDIRECTORY', 'config'),
    runtimeIgnoreDotFiles: r.bool('RUNTIME_IGNOREDOTFILES', false),
    runtimeWatchRoot: r.bool('RUNTIME_WATCH_ROOT', true),
    mergeDomainConfig: r.bool('MERGE_DOMAIN_CONFIG', false),
    healthyWithAtLeastOneConfigLoaded: r.bool('HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED', false),
    useStatsd: r.bool('USE_STATSD', true),
    statsdHost: r.string('STATSD_HOST', 'localhost'),
    statsdPort: r.port('STATSD_PORT', 8125),
    extraTags: r.map('EXTRA_TAGS'),
    statsFlushIntervalMs: r.duration('STATS_FLUSH_INTERVAL', '10s'),
    disableStats: r.bool('DISABLE_STATS', false),
    statsMaxDynamicKeys: r.int('STATS_MAX_DYNAMIC_KEYS', 1000, 0, 1_000_000),
    backendType,
    memoryMaxKeys: r.int('MEMORY_MAX_KEYS', 100_000, 1, 100_000_000),
    expirationJitterMaxSeconds: r.int('EXPIRATION_JITTER_MAX_SECONDS', 300),
    localCacheSizeInBytes: r.int('LOCAL_CACHE_SIZE_IN_BYTES', 0),
    nearLimitRatio: r.number('NEAR_LIMIT_RATIO', 0.8, 0, 1),
    cacheKeyPrefix: r.string('CACHE_KEY_PREFIX', ''),
    stopCacheKeyIncrementWhenOverlimit: r.bool('STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT', false),
    limitResponseHeadersEnabled: r.bool('LIMIT_RESPONSE_HEADERS_ENABLED', false),
    limitLimitHeader: r.string('LIMIT_LIMIT_HEADER', 'RateLimit-Limit'),
    limitRemainingHeader: r.string('LIMIT_REMAINING_HEADER', 'RateLimit-Remaining'),
    limitResetHeader: r.string('LIMIT_RESET_HEADER', 'RateLimit-Reset'),
    shadowMode: r.bool('SHADOW_MODE', false),
    quotaMode: r.bool('QUOTA_MODE', false),
    responseDynamicMetadata: r.bool('RESPONSE_DYNAMIC_METADATA', false),
    redis,
    redisPerSecond,
    redisPerSecondSettings: readRedis(r, true, redis),
    redisHealthCheckActiveConnection: r.bool(
      ['REDIS_HEALTH_CHECK_ACTIVE_CONNECTION', 'KVSTORE_HEALTH_CHECK_ACTIVE_CONNECTION'],
      false,
    ),
  }
  if (settings.workers > 1 && settings.backendType === 'memory') {
    r.invalid(
      'RATELIMIT_WORKERS',
      'must be 1 with BACKEND_TYPE=memory (in-process counters are not shared between workers)',
      String(settings.workers),
    )
  }
  if (settings.grpcMaxCallDurationMs <= 0) {
    r.invalid(
      'GRPC_MAX_CALL_DURATION',
      'must be greater than zero',
      r.string('GRPC_MAX_CALL_DURATION', ''),
    )
  }
  if (settings.statsFlushIntervalMs <= 0) {
    r.invalid(
      'STATS_FLUSH_INTERVAL',
      'must be greater than zero',
      r.string('STATS_FLUSH_INTERVAL', ''),
    )
  }
  if (r.problems.length > 0) throw new ConfigError([...new Set(r.problems)])
  return Object.freeze({
    ...settings,
    extraTags: Object.freeze(settings.extraTags),
    redis: Object.freeze(settings.redis),
    redisPerSecondSettings: Object.freeze(settings.redisPerSecondSettings),
  })
}
