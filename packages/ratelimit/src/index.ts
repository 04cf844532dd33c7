/**
 * `@gatehouse/ratelimit`: a rate limit service wire-compatible with envoyproxy/ratelimit (gRPC
 * `envoy.service.ratelimit.v3`, HTTP `/json`, its YAML configuration and its Redis keys).
 *
 * The executable is `gatehouse-ratelimit` (see the README for every environment variable); this
 * module is the embedding API: read the settings, build the service, and the errors and wire
 * types it speaks. The client is `@gatehouse/ratelimit/client`. Everything else is internal
 * (the package's tests and benchmarks reach it through `#internal/*`).
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
export { RateLimitError, type RateLimitErrorCode } from './errors.js'
export { SettingsError } from '@gatehouse/settings'
export {
  loadSettings,
  type HostInfo,
  type MemcacheSettings,
  type RedisSettings,
  type Settings,
  type XdsSettings,
} from './settings/settings.js'
export type { Algorithm } from './limiter/algorithms.js'
export {
  RateLimitConfig,
  type ConfigFile,
  type LoadConfigOptions,
  type RateLimit,
} from './config/config.js'
export { RateLimitConfigError } from './config/errors.js'
export {
  BackendError,
  type CounterStore,
  type IncrementOp,
  type ReadOp,
  type SlideOp,
  type SlideReply,
  type TakeOp,
  type TakeReply,
} from './limiter/cache.js'
export { BackendUnavailableError } from './limiter/startup.js'
export type { ConfigProvider, ConfigUpdate, ConfigUpdateListener } from './provider/provider.js'
export { StatsManager } from './stats/manager.js'
export { StatsStore, type Counter, type Gauge, type StatsSink, type Timer } from './stats/store.js'
export type * from './protocol/types.js'
