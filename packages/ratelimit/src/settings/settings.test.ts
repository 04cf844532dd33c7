import { describe, expect, it } from 'vitest'
import { SettingsError } from '@gatehouse/settings'
import { loadSettings, settingsDefaults } from './settings.js'

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadSettings(env)
  } catch (error) {
    expect(error).toBeInstanceOf(SettingsError)
    return (error as SettingsError).problems
  }
  return []
}

describe('loadSettings', () => {
  it('has upstream defaults', () => {
    const s = loadSettings({})
    expect(s).toMatchObject({
      host: '0.0.0.0',
      port: 8080,
      grpcHost: '0.0.0.0',
      grpcPort: 8081,
      grpcUds: '',
      debugHost: '0.0.0.0',
      debugPort: 6070,
      grpcMaxConnectionAgeMs: 86_400_000,
      grpcMaxConnectionAgeGraceMs: 3_600_000,
      logLevel: 'warn',
      logFormat: 'text',
      runtimeRoot: '/srv/runtime_data/current',
      runtimeSubdirectory: '',
      runtimeAppDirectory: 'config',
      runtimeIgnoreDotFiles: false,
      runtimeWatchRoot: true,
      mergeDomainConfig: false,
      forceStartWithoutInitialConfig: false,
      healthyWithAtLeastOneConfigLoaded: false,
      useStatsd: true,
      statsdHost: 'localhost',
      statsdPort: 8125,
      extraTags: {},
      statsFlushIntervalMs: 10_000,
      disableStats: false,
      backendType: 'redis',
      expirationJitterMaxMs: 300_000,
      localCacheSizeInBytes: 0,
      nearLimitRatio: 0.8,
      cacheKeyPrefix: '',
      stopCacheKeyIncrementWhenOverlimit: false,
      limitResponseHeadersEnabled: false,
      limitLimitHeader: 'RateLimit-Limit',
      limitRemainingHeader: 'RateLimit-Remaining',
      limitResetHeader: 'RateLimit-Reset',
      shadowMode: false,
      quotaMode: false,
      responseDynamicMetadata: false,
      redisPerSecond: false,
      redisHealthCheckActiveConnection: false,
    })
    expect(s.redis).toMatchObject({
      socketType: 'unix',
      type: 'single',
      url: '/var/run/nutcracker/ratelimit.sock',
      poolSize: 10,
      auth: '',
      tls: false,
      timeoutMs: 10_000,
    })
    expect(s.redisPerSecondSettings.url).toBe('/var/run/nutcracker/ratelimitpersecond.sock')
    expect(Object.isFrozen(s)).toBe(true)
  })

  it('reads the gRPC server limits, with defaults', () => {
    expect(loadSettings({})).toMatchObject({
      grpcMaxConnectionIdleMs: 300_000,
      grpcMaxConcurrentStreams: 100,
      grpcMaxCallDurationMs: 10_000,
    })
    expect(
      loadSettings({
        GRPC_MAX_CONNECTION_IDLE: '0',
        GRPC_MAX_CONCURRENT_STREAMS: '1000',
        GRPC_MAX_CALL_DURATION: '250ms',
      }),
    ).toMatchObject({
      grpcMaxConnectionIdleMs: 0,
      grpcMaxConcurrentStreams: 1000,
      grpcMaxCallDurationMs: 250,
    })
    expect(
      problemsOf({
        GRPC_MAX_CONNECTION_IDLE: 'soon',
        GRPC_MAX_CONCURRENT_STREAMS: '0',
        GRPC_MAX_CALL_DURATION: '0s',
      }),
    ).toEqual([
      'GRPC_MAX_CONNECTION_IDLE: must be a non-negative Go duration such as 10s, 1m30s or 150ms (got "soon")',
      'GRPC_MAX_CONCURRENT_STREAMS: must be an integer from 1 to 2147483647 (got "0")',
      'GRPC_MAX_CALL_DURATION: must be greater than zero (got "0s")',
    ])
  })

  it('reads STATS_MAX_DYNAMIC_KEYS, 1000 by default', () => {
    expect(loadSettings({}).statsMaxDynamicKeys).toBe(1000)
    expect(loadSettings({ STATS_MAX_DYNAMIC_KEYS: '0' }).statsMaxDynamicKeys).toBe(0)
    expect(problemsOf({ STATS_MAX_DYNAMIC_KEYS: '-1' })).toEqual([
      'STATS_MAX_DYNAMIC_KEYS: must be an integer from 0 to 1000000 (got "-1")',
    ])
  })

  it('reads the whole-second variables into milliseconds, bounds and problems in seconds', () => {
    expect(loadSettings({}).backendStartupTimeoutMs).toBe(60_000)
    expect(loadSettings({ BACKEND_STARTUP_TIMEOUT_SECONDS: '5' }).backendStartupTimeoutMs).toBe(
      5000,
    )
    expect(loadSettings({ EXPIRATION_JITTER_MAX_SECONDS: '0' }).expirationJitterMaxMs).toBe(0)
    expect(loadSettings({ EXPIRATION_JITTER_MAX_SECONDS: '7' }).expirationJitterMaxMs).toBe(7000)
    expect(
      problemsOf({ BACKEND_STARTUP_TIMEOUT_SECONDS: '86401', EXPIRATION_JITTER_MAX_SECONDS: '1s' }),
    ).toEqual([
      'EXPIRATION_JITTER_MAX_SECONDS: must be an integer of at least 0 (got "1s")',
      'BACKEND_STARTUP_TIMEOUT_SECONDS: must be an integer from 0 to 86400 (got "86401")',
    ])
  })

  it('reads the degrade mode (BACKEND_FAILURE_*), off by default', () => {
    expect(loadSettings({})).toMatchObject({
      backendFailureMode: 'error',
      backendFailureLocalShare: 1,
      backendFailureCheckIntervalMs: 1000,
    })
    expect(
      loadSettings({
        BACKEND_FAILURE_MODE: 'LOCAL',
        BACKEND_FAILURE_LOCAL_SHARE: '3',
        BACKEND_FAILURE_CHECK_INTERVAL: '250ms',
      }),
    ).toMatchObject({
      backendFailureMode: 'local',
      backendFailureLocalShare: 3,
      backendFailureCheckIntervalMs: 250,
    })
    expect(
      problemsOf({ BACKEND_FAILURE_MODE: 'ignore', BACKEND_FAILURE_LOCAL_SHARE: '0' }),
    ).toEqual([
      'BACKEND_FAILURE_MODE: must be one of error, local (got "ignore")',
      'BACKEND_FAILURE_LOCAL_SHARE: must be an integer from 1 to 10000 (got "0")',
    ])
  })

  it('reads STATS_MAX_UNKNOWN_DOMAINS, 100 by default', () => {
    expect(loadSettings({}).statsMaxUnknownDomains).toBe(100)
    expect(loadSettings({ STATS_MAX_UNKNOWN_DOMAINS: '0' }).statsMaxUnknownDomains).toBe(0)
    expect(problemsOf({ STATS_MAX_UNKNOWN_DOMAINS: '1000001' })).toEqual([
      'STATS_MAX_UNKNOWN_DOMAINS: must be an integer from 0 to 1000000 (got "1000001")',
    ])
  })

  it('reads MEMORY_MAX_KEYS, 100000 by default', () => {
    expect(loadSettings({}).memoryMaxKeys).toBe(100_000)
    expect(loadSettings({ MEMORY_MAX_KEYS: '5' }).memoryMaxKeys).toBe(5)
    expect(problemsOf({ MEMORY_MAX_KEYS: '0' })).toEqual([
      'MEMORY_MAX_KEYS: must be an integer from 1 to 100000000 (got "0")',
    ])
  })

  it('reads the request caps, with defaults', () => {
    expect(loadSettings({})).toMatchObject({
      maxDescriptorsPerRequest: 64,
      maxEntriesPerDescriptor: 32,
      maxDescriptorEntryBytes: 4096,
    })
    expect(
      loadSettings({
        MAX_DESCRIPTORS_PER_REQUEST: '8',
        MAX_ENTRIES_PER_DESCRIPTOR: '4',
        MAX_DESCRIPTOR_ENTRY_BYTES: '65536',
      }),
    ).toMatchObject({
      maxDescriptorsPerRequest: 8,
      maxEntriesPerDescriptor: 4,
      maxDescriptorEntryBytes: 65_536,
    })
    expect(
      problemsOf({
        MAX_DESCRIPTORS_PER_REQUEST: '0',
        MAX_ENTRIES_PER_DESCRIPTOR: 'many',
        MAX_DESCRIPTOR_ENTRY_BYTES: '5000000',
      }),
    ).toEqual([
      'MAX_DESCRIPTORS_PER_REQUEST: must be an integer from 1 to 100000 (got "0")',
      'MAX_ENTRIES_PER_DESCRIPTOR: must be an integer from 1 to 100000 (got "many")',
      'MAX_DESCRIPTOR_ENTRY_BYTES: must be an integer from 1 to 4194304 (got "5000000")',
    ])
  })

  it('accepts both REDIS_* and KVSTORE_* spellings', () => {
    const a = loadSettings({
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_URL: 'localhost:6379',
      REDIS_PERSECOND: 'true',
      REDIS_PERSECOND_URL: '/tmp/s.sock',
    })
    const b = loadSettings({
      KVSTORE_SOCKET_TYPE: 'tcp',
      KVSTORE_URL: 'localhost:6379',
      KVSTORE_PERSECOND: 'true',
      KVSTORE_PERSECOND_URL: '/tmp/s.sock',
    })
    expect(b).toEqual(a)
    expect(a.redis).toMatchObject({ socketType: 'tcp', url: 'localhost:6379' })
    expect(a.redisPerSecond).toBe(true)
    expect(loadSettings({ KVSTORE_AUTH: 'user:pw' }).redis.auth).toBe('user:pw')
  })

  it('parses Go booleans, durations, maps and the memory backend', () => {
    const s = loadSettings({
      USE_STATSD: 'F',
      SHADOW_MODE: '1',
      GRPC_MAX_CONNECTION_AGE: '1h30m',
      STATS_FLUSH_INTERVAL: '150ms',
      EXTRA_TAGS: 'b:2,a:1',
      BACKEND_TYPE: 'memory',
      LOG_LEVEL: 'debug',
      LOG_FORMAT: 'json',
    })
    expect(s).toMatchObject({
      useStatsd: false,
      shadowMode: true,
      grpcMaxConnectionAgeMs: 5_400_000,
      statsFlushIntervalMs: 150,
      extraTags: { a: '1', b: '2' },
      backendType: 'memory',
      logLevel: 'debug',
      logFormat: 'json',
    })
  })

  it('reads sentinel and cluster deployments, with the pool and start-up settings', () => {
    const s = loadSettings({
      REDIS_TYPE: 'Sentinel',
      REDIS_URL: 'mymaster, 10.0.0.1:26379,[::1]:26380',
      REDIS_SENTINEL_AUTH: 'sentinel-secret',
      REDIS_POOL_ON_EMPTY_BEHAVIOR: 'ERROR',
      REDIS_POOL_ON_EMPTY_WAIT_DURATION: '250ms',
      REDIS_CLOSE_CONNECTION_ON_READONLY_ERROR: 'true',
      REDIS_STARTUP_MAX_ELAPSED_TIME: '5s',
      KVSTORE_PERSECOND: 'true',
      KVSTORE_PERSECOND_TYPE: 'cluster',
      KVSTORE_PERSECOND_URL: '10.0.0.1:7000,10.0.0.2:7000',
      KVSTORE_PERSECOND_PIPELINE_WINDOW: '150us',
      KVSTORE_PERSECOND_CLUSTER_PIPELINE_PARALLELISM: '0',
    })
    expect(s.redis).toMatchObject({
      type: 'sentinel',
      url: 'mymaster, 10.0.0.1:26379,[::1]:26380',
      sentinelAuth: 'sentinel-secret',
      poolOnEmptyBehavior: 'ERROR',
      poolOnEmptyWaitMs: 250,
      closeConnectionOnReadonlyError: true,
      clusterPipelineParallelism: 1,
    })
    expect(s.redisPerSecondSettings).toMatchObject({
      type: 'cluster',
      pipelineWindowMs: 0.15,
      clusterPipelineParallelism: 0,
      poolOnEmptyBehavior: 'CREATE',
      poolOnEmptyWaitMs: 1000,
    })
    expect(s).toMatchObject({
      redisStartupInitialIntervalMs: 1000,
      redisStartupMaxIntervalMs: 30_000,
      redisStartupMaxElapsedMs: 5000,
    })
  })

  it('refuses malformed sentinel and cluster URL lists and a cluster without a pipeline window', () => {
    expect(problemsOf({ REDIS_TYPE: 'sentinel', REDIS_URL: 'mymaster' })).toEqual([
      'REDIS_URL: Expected master name and a list of urls for the sentinels, in the format: <redis master name>,<sentinel1>,...,<sentineln> (got "mymaster")',
    ])
    expect(problemsOf({ REDIS_TYPE: 'sentinel', REDIS_URL: 'mymaster,10.0.0.1' })).toEqual([
      'REDIS_URL: every sentinel must be host:port, comma-separated (item 2 is not) (got "mymaster,10.0.0.1")',
    ])
    expect(
      problemsOf({ REDIS_TYPE: 'cluster', REDIS_URL: 'a:1,,b:2', REDIS_PIPELINE_WINDOW: '1ms' }),
    ).toEqual([
      'REDIS_URL: every cluster node must be host:port, comma-separated (item 2 is not) (got "a:1,,b:2")',
    ])
    expect(problemsOf({ REDIS_TYPE: 'cluster', REDIS_URL: 'a:1,b:2' })).toEqual([
      'REDIS_PIPELINE_WINDOW: Implicit Pipelining must be enabled to work with Redis Cluster Mode. Set a non-zero value (such as 150us) to enable implicit pipelining',
    ])
    expect(
      problemsOf({
        REDIS_PERSECOND_TYPE: 'CLUSTER',
        REDIS_PERSECOND_URL: 'a:1',
        REDIS_PERSECOND_CLUSTER_PIPELINE_PARALLELISM: '-1',
        REDIS_POOL_ON_EMPTY_BEHAVIOR: 'BLOCK',
      }),
    ).toHaveLength(3)
  })

  it('lists every problem in one error', () => {
    const problems = problemsOf({
      PORT: 'eighty',
      USE_STATSD: 'maybe',
      NEAR_LIMIT_RATIO: '1.5',
      STATS_FLUSH_INTERVAL: '10 seconds',
      REDIS_URL: 'a',
      KVSTORE_URL: 'b',
      BACKEND_TYPE: 'memcached',
      REDIS_TYPE: 'ring',
      LOG_LEVEL: 'loud',
      CONFIG_TYPE: 'XML',
      REDIS_AUTH: 'secret',
      REDIS_SOCKET_TYPE: 'tcp',
    })
    expect([...problems].sort()).toEqual(
      [
        'LOG_LEVEL: must be one of trace, debug, info, warn, error, fatal, panic (got "loud")',
        'CONFIG_TYPE: Invalid setting for ConfigType: XML',
        'BACKEND_TYPE: must be redis, memcache or memory (got "memcached")',
        'REDIS_TYPE: Unrecognized redis type ring; must be one of SINGLE, SENTINEL, CLUSTER',
        'REDIS_URL and KVSTORE_URL are both set, to different values; set one',
        'REDIS_URL: must be host:port or a redis:// URL for a tcp socket (got "a")',
        'PORT: must be an integer from 0 to 65535 (got "eighty")',
        'STATS_FLUSH_INTERVAL: must be a non-negative Go duration such as 10s, 1m30s or 150ms (got "10 seconds")',
        'NEAR_LIMIT_RATIO: must be a number from 0 to 1 (got "1.5")',
        'USE_STATSD: must be a boolean (true/false/1/0) (got "maybe")',
      ].sort(),
    )
    const message = (() => {
      try {
        loadSettings({ PORT: 'x', REDIS_AUTH: 'secret' })
      } catch (error) {
        return (error as Error).message
      }
      return ''
    })()
    expect(message).toBe('invalid settings:\n  PORT: must be an integer from 0 to 65535 (got "x")')
    expect(message).not.toContain('secret')
  })

  it('reads the memcache backend with upstream defaults (MEMCACHE_*)', () => {
    const s = loadSettings({
      BACKEND_TYPE: 'Memcache',
      MEMCACHE_HOST_PORT: 'mc-1:11211, mc-2:11212',
      MEMCACHE_TLS: 'true',
      MEMCACHE_TLS_CACERT: '/ca.pem',
      MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION: '1',
    })
    expect(s.backendType).toBe('memcache')
    expect(s.memcache).toEqual({
      hostPort: ['mc-1:11211', 'mc-2:11212'],
      srv: '',
      srvRefreshMs: 0,
      maxIdleConns: 2,
      tls: true,
      tlsClientCert: '',
      tlsClientKey: '',
      tlsCaCert: '/ca.pem',
      tlsSkipHostnameVerification: true,
    })
    const srv = loadSettings({
      BACKEND_TYPE: 'memcache',
      MEMCACHE_SRV: '_memcache._tcp.example.com',
      MEMCACHE_SRV_REFRESH: '30s',
      MEMCACHE_MAX_IDLE_CONNS: '8',
    }).memcache
    expect(srv).toMatchObject({ srv: '_memcache._tcp.example.com', srvRefreshMs: 30_000 })
    expect(srv.maxIdleConns).toBe(8)
    // Counters in memcache are shared by the workers.
    expect(
      loadSettings({ BACKEND_TYPE: 'memcache', MEMCACHE_HOST_PORT: 'mc:1' }, { availableCores: 4 })
        .workers,
    ).toBe(2)
  })

  it('refuses memcache settings upstream would panic on or memcache could not use', () => {
    expect(problemsOf({ BACKEND_TYPE: 'memcache' })).toEqual([
      'MEMCACHE_HOST_PORT: MEMCACHE_HOST_PORT or MEMCACHE_SRV must be set with BACKEND_TYPE=memcache',
    ])
    expect(
      problemsOf({
        BACKEND_TYPE: 'memcache',
        MEMCACHE_HOST_PORT: 'mc:11211',
        MEMCACHE_SRV: '_memcache._tcp.example.com',
      }),
    ).toEqual(['MEMCACHE_SRV: Both MEMCACHE_HOST_PORT and MEMCACHE_SRV are set; set one'])
    expect(
      problemsOf({
        BACKEND_TYPE: 'memcache',
        MEMCACHE_HOST_PORT: 'mc:11211,mc,[::1]:11211',
        CACHE_KEY_PREFIX: 'my prefix:',
        MEMCACHE_SRV_REFRESH: '10',
      }),
    ).toEqual([
      'CACHE_KEY_PREFIX: must not contain whitespace or control characters with BACKEND_TYPE=memcache (memcache keys cannot) (got "my prefix:")',
      'MEMCACHE_HOST_PORT: "mc" is not host:port (for an IPv6 server, use a host name)',
      'MEMCACHE_HOST_PORT: "[::1]:11211" is not host:port (for an IPv6 server, use a host name)',
      'MEMCACHE_SRV_REFRESH: must be a non-negative Go duration such as 10s, 1m30s or 150ms (got "10")',
    ])
    expect(problemsOf({ BACKEND_TYPE: 'memcache', MEMCACHE_SRV: 'memcache.example.com' })).toEqual([
      'MEMCACHE_SRV: must be an SRV record name of the form _service._proto.name (got "memcache.example.com")',
    ])
    // Not checked unless memcache is the backend.
    expect(problemsOf({ MEMCACHE_HOST_PORT: 'nonsense' })).toEqual([])
  })

  it('reads RATE_LIMIT_ALGORITHM, refusing unknown names and token_bucket on memcache', () => {
    expect(loadSettings({}).rateLimitAlgorithm).toBe('fixed_window')
    expect(loadSettings({ RATE_LIMIT_ALGORITHM: 'sliding_window' }).rateLimitAlgorithm).toBe(
      'sliding_window',
    )
    expect(problemsOf({ RATE_LIMIT_ALGORITHM: 'leaky' })).toHaveLength(1)
    expect(problemsOf({ RATE_LIMIT_ALGORITHM: 'leaky' })[0]).toMatch(/^RATE_LIMIT_ALGORITHM: /)
    expect(
      problemsOf({
        BACKEND_TYPE: 'memcache',
        MEMCACHE_HOST_PORT: 'mc:11211',
        RATE_LIMIT_ALGORITHM: 'token_bucket',
      }),
    ).toEqual([
      'RATE_LIMIT_ALGORITHM: token_bucket is not supported with BACKEND_TYPE=memcache (use redis or memory) (got "token_bucket")',
    ])
    expect(settingsDefaults().get('RATE_LIMIT_ALGORITHM')).toBe('fixed_window')
  })

  it('requires the Redis backend for several workers', () => {
    expect(problemsOf({ RATELIMIT_WORKERS: '2', BACKEND_TYPE: 'memory' })).toEqual([
      'RATELIMIT_WORKERS: must be 1 with BACKEND_TYPE=memory (in-process counters are not shared between workers) (got "2")',
    ])
    expect(loadSettings({ RATELIMIT_WORKERS: '2' }).workers).toBe(2)
  })

  it('defaults to two workers with the Redis backend on two or more cores, else one', () => {
    const workers = (env: Record<string, string>, availableCores?: number): number =>
      loadSettings(env, { availableCores }).workers
    expect(workers({}, 2)).toBe(2)
    expect(workers({}, 8)).toBe(2)
    expect(workers({}, 1)).toBe(1)
    expect(workers({})).toBe(1)
    expect(workers({ BACKEND_TYPE: 'memory' }, 8)).toBe(1)
    expect(workers({ RATELIMIT_WORKERS: '1' }, 8)).toBe(1)
    expect(workers({ RATELIMIT_WORKERS: '4' }, 2)).toBe(4)
  })

  it("refuses two stats sinks at once with upstream's message, unless stats are disabled", () => {
    const message =
      'USE_PROMETHEUS: Error: unable to use more than one stats sink at the same time. Set one of USE_DOG_STATSD, USE_STATSD, USE_PROMETHEUS.'
    expect(problemsOf({ USE_PROMETHEUS: 'true' })).toEqual([message])
    expect(problemsOf({ USE_DOG_STATSD: 'true' })).toEqual([message])
    expect(
      problemsOf({ USE_TAGGED_STATSD: 'true', USE_PROMETHEUS: 'true', USE_STATSD: 'false' }),
    ).toEqual([message])
    expect(problemsOf({ USE_PROMETHEUS: 'true', USE_STATSD: 'false' })).toEqual([])
    expect(problemsOf({ USE_PROMETHEUS: 'true', DISABLE_STATS: 'true' })).toEqual([])
  })

  it("reads the Prometheus, tagged statsd and tracing settings with upstream's defaults", () => {
    expect(loadSettings({})).toMatchObject({
      usePrometheus: false,
      prometheusAddr: ':9090',
      prometheusPath: '/metrics',
      prometheusMapperYaml: '',
      prometheusResponseTimeAsMilliseconds: false,
      useTaggedStatsd: false,
      taggedStatsdMogrifiers: [],
      tracing: {
        enabled: false,
        exporterProtocol: 'http',
        serviceName: 'RateLimit',
        serviceNamespace: '',
        serviceInstanceId: '',
        samplingRate: 1,
        endpoint: '',
        tracesEndpoint: '',
        headers: {},
        timeoutMs: 10000,
      },
    })
    const s = loadSettings({
      USE_STATSD: 'false',
      USE_TAGGED_STATSD: 'true',
      USE_DOG_STATSD_MOGRIFIERS: 'RL',
      DOG_STATSD_MOGRIFIER_RL_PATTERN:
        '^ratelimit\\.service\\.rate_limit\\.([^.]+)\\.(.*)\\.([^.]+)$',
      DOG_STATSD_MOGRIFIER_RL_NAME: 'ratelimit.service.rate_limit.$3',
      DOG_STATSD_MOGRIFIER_RL_TAGS: 'domain:$1,descriptor:$2',
      TRACING_ENABLED: 'true',
      TRACING_EXPORTER_PROTOCOL: 'grpc',
      TRACING_SAMPLING_RATE: '0.01',
      OTEL_EXPORTER_OTLP_HEADERS: 'api-key=a%20b,x-tenant=t1',
    })
    expect(s.taggedStatsdMogrifiers).toEqual([
      {
        key: 'RL',
        pattern: '^ratelimit\\.service\\.rate_limit\\.([^.]+)\\.(.*)\\.([^.]+)$',
        name: 'ratelimit.service.rate_limit.$3',
        tags: { domain: '$1', descriptor: '$2' },
      },
    ])
    expect(s.tracing).toMatchObject({
      enabled: true,
      exporterProtocol: 'grpc',
      samplingRate: 0.01,
      headers: { 'api-key': 'a b', 'x-tenant': 't1' },
    })
    expect(
      problemsOf({
        USE_STATSD: 'false',
        USE_DOG_STATSD_MOGRIFIERS: 'A',
        DOG_STATSD_MOGRIFIER_A_PATTERN: '(',
        TRACING_EXPORTER_PROTOCOL: 'udp',
        TRACING_SAMPLING_RATE: '2',
        PROMETHEUS_ADDR: 'nowhere',
        PROMETHEUS_PATH: 'metrics',
      }),
    ).toEqual([
      'USE_DOG_STATSD_MOGRIFIERS: mogrifier A needs DOG_STATSD_MOGRIFIER_A_NAME',
      'USE_DOG_STATSD_MOGRIFIERS: DOG_STATSD_MOGRIFIER_A_PATTERN is not a valid regular expression',
      expect.stringMatching(/^PROMETHEUS_ADDR: must be host:port or :port/),
      expect.stringMatching(/^PROMETHEUS_PATH: must be a path starting with \//),
      expect.stringMatching(/^TRACING_EXPORTER_PROTOCOL: /),
      expect.stringMatching(/^TRACING_SAMPLING_RATE: /),
    ])
  })

  it('reads the gRPC server TLS settings and checks that they go together', () => {
    expect(loadSettings({})).toMatchObject({
      grpcServerUseTls: false,
      grpcServerTlsCert: '',
      grpcServerTlsKey: '',
      grpcClientTlsCaCert: '',
      grpcClientTlsSan: '',
    })
    expect(
      loadSettings({
        GRPC_SERVER_USE_TLS: 'true',
        GRPC_SERVER_TLS_CERT: '/tls/cert.pem',
        GRPC_SERVER_TLS_KEY: '/tls/key.pem',
        GRPC_CLIENT_TLS_CACERT: '/tls/ca.pem',
        GRPC_CLIENT_TLS_SAN: 'envoy',
      }),
    ).toMatchObject({
      grpcServerUseTls: true,
      grpcServerTlsCert: '/tls/cert.pem',
      grpcServerTlsKey: '/tls/key.pem',
      grpcClientTlsCaCert: '/tls/ca.pem',
      grpcClientTlsSan: 'envoy',
    })
    expect(problemsOf({ GRPC_SERVER_USE_TLS: 'true' })).toEqual([
      'GRPC_SERVER_TLS_CERT: must be set with GRPC_SERVER_USE_TLS=true',
      'GRPC_SERVER_TLS_KEY: must be set with GRPC_SERVER_USE_TLS=true',
    ])
    expect(
      problemsOf({ GRPC_CLIENT_TLS_CACERT: '/tls/ca.pem', GRPC_CLIENT_TLS_SAN: 'envoy' }),
    ).toEqual([
      'GRPC_CLIENT_TLS_CACERT: mutual TLS needs GRPC_SERVER_USE_TLS=true (got "/tls/ca.pem")',
    ])
    expect(
      problemsOf({
        GRPC_SERVER_USE_TLS: 'true',
        GRPC_SERVER_TLS_CERT: '/tls/cert.pem',
        GRPC_SERVER_TLS_KEY: '/tls/key.pem',
        GRPC_CLIENT_TLS_SAN: 'envoy',
      }),
    ).toEqual(['GRPC_CLIENT_TLS_SAN: needs GRPC_CLIENT_TLS_CACERT (mutual TLS) (got "envoy")'])
  })

  it('reads the xDS settings with upstream defaults', () => {
    expect(loadSettings({ CONFIG_TYPE: 'grpc_xds_sotw' })).toMatchObject({
      configType: 'GRPC_XDS_SOTW',
      xds: {
        nodeId: 'default',
        nodeMetadata: {},
        serverUrl: 'localhost:18000',
        connectRetryIntervalMs: 3000,
        additionalHeaders: {},
        useTls: false,
        clientTlsCert: '',
        clientTlsKey: '',
        serverTlsCaCert: '',
        serverTlsSan: '',
        backoffInitialMs: 10_000,
        backoffMaxMs: 60_000,
        backoffRandomFactor: 0.5,
        backoffJitter: true,
        maxMsgSizeBytes: 0,
      },
    })
    const s = loadSettings({
      CONFIG_GRPC_XDS_NODE_METADATA: 'zone=eu-1, team=edge=x',
      CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: 'Authorization:Bearer t:1,x-tenant:a',
    })
    expect({ ...s.xds.nodeMetadata }).toEqual({ zone: 'eu-1', team: 'edge=x' })
    expect({ ...s.xds.additionalHeaders }).toEqual({ authorization: 'Bearer t:1', 'x-tenant': 'a' })
  })

  it('explains bad xDS settings without echoing header values', () => {
    expect(
      problemsOf({
        CONFIG_GRPC_XDS_NODE_METADATA: 'zone',
        CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: 'bad header:secret',
        CONFIG_GRPC_XDS_CLIENT_TLS_CERT: '/tls/cert.pem',
        XDS_CLIENT_BACKOFF_INITIAL_INTERVAL: '1m',
        XDS_CLIENT_BACKOFF_MAX_INTERVAL: '30s',
        XDS_CLIENT_BACKOFF_RANDOM_FACTOR: '2',
      }),
    ).toEqual([
      'CONFIG_GRPC_XDS_NODE_METADATA: must be a list of key=value pairs separated by commas (got "zone")',
      'CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: header name "bad header" is not a valid gRPC metadata key (letters, digits, "-", "_", "."; not "grpc-*" or "*-bin")',
      'CONFIG_GRPC_XDS_CLIENT_TLS_KEY: CONFIG_GRPC_XDS_CLIENT_TLS_CERT and CONFIG_GRPC_XDS_CLIENT_TLS_KEY must be set together',
      'XDS_CLIENT_BACKOFF_MAX_INTERVAL: must not be less than XDS_CLIENT_BACKOFF_INITIAL_INTERVAL (got "30s")',
      'XDS_CLIENT_BACKOFF_RANDOM_FACTOR: must be a number from 0 to 1 (got "2")',
    ])
  })
})

describe('settingsDefaults', () => {
  it('lists every variable read, each spelling of one setting together, with upstream defaults', () => {
    const defaults = settingsDefaults({ availableCores: 2 })
    expect(defaults.get('PORT')).toBe('8080')
    expect(defaults.get('GRPC_PORT')).toBe('8081')
    expect(defaults.get('REDIS_URL | KVSTORE_URL')).toBe('/var/run/nutcracker/ratelimit.sock')
    expect(defaults.get('EXPIRATION_JITTER_MAX_SECONDS')).toBe('300')
    expect(defaults.get('RATELIMIT_WORKERS')).toBe('2')
    expect(settingsDefaults().get('RATELIMIT_WORKERS')).toBe('1')
  })
})
