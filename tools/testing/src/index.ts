/**
 * Test helpers shared by the Gatehouse packages: real services on loopback, isolated per test
 * file, and a fake clock, a headless Chromium. See CONTRIBUTING.md, "How tests reach real services".
 *
 * @packageDocumentation
 */
export { FakeClock, type Clock } from './clock.js'
export { CHROMIUM_PATH, launchChromium } from './browser.js'
export {
  getFreePort,
  getFreePorts,
  probeTcp,
  waitFor,
  type FreePortsOptions,
  type WaitForOptions,
} from './net.js'
export {
  awaitServer,
  startServerOnFreePort,
  type StartServerOptions,
  type StartedServer,
} from './server-process.js'
export { startHttpServer, type TestHttpServer } from './http.js'
export {
  runProcess,
  sourceEntryArgs,
  startProcess,
  type ManagedProcess,
  type ProcessResult,
  type RunProcessOptions,
  type StartProcessOptions,
} from './process.js'
export {
  adminDatabaseUrl,
  createTestDatabase,
  createTestSchema,
  type TestDatabase,
} from './postgres.js'
export {
  startPostgresServer,
  type StartPostgresOptions,
  type TestPostgresServer,
} from './postgres-server.js'
export {
  ping,
  redisKeyPrefix,
  sharedRedisUrl,
  startRedisServer,
  type StartRedisOptions,
  type TestRedisServer,
} from './redis.js'
export {
  redisCli,
  startRedisCluster,
  startRedisSentinel,
  type StartRedisClusterOptions,
  type TestRedisCluster,
  type TestRedisSentinel,
} from './redis-topology.js'
export { startMemcached, type StartMemcachedOptions, type TestMemcached } from './memcached.js'
export { startDnsServer, type SrvTarget, type TestDnsServer } from './dns.js'
export {
  createTestCertificates,
  type TestCertificates,
  type TestCertificatesOptions,
} from './certs.js'
export {
  startGrpcReceiver,
  startHttpReceiver,
  type OtlpReceiver,
  type ReceivedPoint,
  type ReceivedSpan,
} from './otlp-receiver.js'
export { scrape, series, type Family, type Series } from './prometheus.js'
export { addHeadlessInteractions, type HeadlessInteractionOptions } from './oidc-interactions.js'
