/**
 * `@gatehouse/ratelimit`: a rate limit service wire-compatible with envoyproxy/ratelimit (gRPC
 * `envoy.service.ratelimit.v3`, HTTP `/json`, its YAML configuration and its Redis keys).
 *
 * The executable is `gatehouse-ratelimit` (see the README for every environment variable); this
 * module exports the building blocks for embedding and testing.
 *
 * @packageDocumentation
 */
export {
  buildRateLimitApp,
  type AppDeps,
  type ListeningAddresses,
  type RateLimitApp,
} from './app.js'
export {
  systemClock,
  systemEvery,
  systemMonotonicClock,
  systemRandom,
  type Clock,
  type Every,
  type MonotonicClock,
  type Random,
} from './clock.js'
export {
  GRPC_CALL_STATUS,
  MAX_RESPONSE_MESSAGE_BYTES,
  RateLimitCallError,
  RateLimitClient,
  serviceErrorCode,
  type RateLimitClientCounts,
  type RateLimitClientOptions,
} from './client/index.js'
export { RateLimitError, type RateLimitErrorCode } from './errors.js'
export {
  COALESCE_MAX_DESCRIPTORS_HEADER,
  ERROR_CODE_TRAILER,
  healthServiceDefinition,
  rateLimitServiceDefinition,
} from './protocol/grpc.js'
export {
  ALGORITHMS,
  RateLimitConfig,
  isAlgorithm,
  type Algorithm,
  type ConfigFile,
  type LoadConfigOptions,
  type RateLimit,
} from './config/config.js'
export { RateLimitConfigError } from './config/errors.js'
export {
  BackendError,
  type CounterStore,
  type IncrementOp,
  type RateLimitCache,
  type ReadOp,
  type SlideOp,
  type SlideReply,
  type TakeOp,
  type TakeReply,
} from './limiter/cache.js'
export { generateCacheKey, type CacheKey } from './limiter/cache-key.js'
export {
  StoreRateLimitCache,
  decideStatus,
  hitsAddends,
  nearLimitThreshold,
  type StoreRateLimitCacheOptions,
} from './limiter/store-cache.js'
export { LocalCache } from './limiter/local-cache.js'
export {
  BackendUnavailableError,
  DEFAULT_STARTUP_POLICY,
  waitForBackend,
  type StartupDeps,
  type StartupPolicy,
  type StartupTarget,
} from './limiter/startup.js'
export {
  SLIDING_WINDOW_KEY_MARK,
  hasHashTag,
  slidingWindowEstimate,
  slidingWindowKeys,
  slidingWindowResetMs,
  type SlidingWindowCounts,
  type SlidingWindowKeys,
} from './limiter/sliding-window.js'
export {
  MAX_WAIT_MS,
  TOKEN_BUCKET_KEY_MARK,
  takeTokens,
  tokenBucketKey,
  tokenBucketTtlMs,
  type TakeResult,
  type TokenBucketParams,
  type TokenBucketState,
} from './limiter/token-bucket.js'
export { UNIT_SECONDS, secondsUntilReset, unitSeconds, windowStart } from './limiter/units.js'
export { MEMCACHE_MAX_KEY_BYTES, memcacheKeyProblem } from './memcache/keys.js'
export {
  MemcacheCounterStore,
  memcacheTlsOptions,
  type MemcacheSrvSource,
  type MemcacheStoreOptions,
} from './memcache/memcache-store.js'
export { lookupSrvServers, pickServer, type SrvResolver } from './memcache/servers.js'
export {
  DEFAULT_MEMORY_MAX_KEYS,
  MemoryCounterStore,
  type MemoryStoreOptions,
} from './memory/memory-store.js'
export {
  JsonRequestError,
  formatJsonRateLimitResponse,
  parseJsonRateLimitRequest,
  type JsonRequestErrorCode,
} from './protocol/json.js'
export {
  DEFAULT_REQUEST_LIMITS,
  RequestLimitError,
  checkRequestLimits,
  type RequestLimits,
} from './protocol/limits.js'
export { decodeRateLimitRequest, encodeRateLimitRequest } from './protocol/protobuf/request.js'
export { decodeRateLimitResponse, encodeRateLimitResponse } from './protocol/protobuf/response.js'
export { WireFormatError } from './protocol/protobuf/wire.js'
export type * from './protocol/types.js'
export { FileConfigProvider, type FileProviderOptions } from './provider/file-provider.js'
export type { ConfigProvider, ConfigUpdate, ConfigUpdateListener } from './provider/provider.js'
export {
  ADS_STREAM_PATH,
  XdsConfigProvider,
  xdsBackoffDelay,
  xdsChannelCredentials,
  type XdsBackoff,
  type XdsProviderOptions,
} from './provider/xds-provider.js'
export { xdsConfigFiles } from './config/xds.js'
export {
  decodeDiscoveryResponse,
  encodeDiscoveryRequest,
  type AnyMessage,
  type DiscoveryRequest,
  type DiscoveryResponse,
  type RpcStatus,
  type XdsNode,
} from './protocol/protobuf/discovery.js'
export {
  MAX_DESCRIPTOR_DEPTH,
  RATE_LIMIT_CONFIG_TYPE_URL,
  decodeRateLimitConfig,
  type XdsRateLimitConfig,
  type XdsRateLimitDescriptor,
  type XdsRateLimitPolicy,
  type XdsRateLimitReplace,
} from './protocol/protobuf/rls-conf.js'
export {
  ServerTls,
  clientSanProblem,
  readTlsFiles,
  secureContextOptions,
  type ServerTlsFiles,
  type ServerTlsMaterial,
  type ServerTlsOptions,
  type TlsReloadResult,
} from './server/tls.js'
export { RedisCounterStore, type RedisStoreOptions } from './redis/redis-store.js'
export { HealthChecker, type HealthComponent } from './server/health.js'
export { grpcServerCredentials } from './server/grpc.js'
export {
  RateLimitService,
  ShouldRateLimitError,
  UNLIMITED_REMAINING,
  type ConfigLoadResult,
  type ServiceOptions,
  type ShouldRateLimitErrorCode,
  type ShouldRateLimitErrorType,
} from './service/service.js'
export { SettingsError } from '@gatehouse/settings'
export {
  loadSettings,
  type HostInfo,
  type MemcacheSettings,
  type RedisSettings,
  type Settings,
  type XdsSettings,
} from './settings/settings.js'
export {
  DEFAULT_MAX_DYNAMIC_STATS_KEYS,
  MAX_DYNAMIC_STATS_KEY_LENGTH,
  StatsManager,
  sanitizeStatName,
  type RateLimitStats,
  type StatsManagerOptions,
} from './stats/manager.js'
export { StatsStore, type Counter, type Gauge, type StatsSink, type Timer } from './stats/store.js'
