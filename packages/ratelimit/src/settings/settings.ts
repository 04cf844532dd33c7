/**
 * Service settings from environment variables, with upstream's names and defaults
 * (envoyproxy/ratelimit `src/settings/settings.go`): one field table, {@link settingsTable}, gives
 * the loader, its problems and `--help`. The key-value store's variables are accepted both as
 * `REDIS_*` (upstream) and `KVSTORE_*` (the spec's spelling).
 *
 * @module
 */
import {
  bool,
  decimal,
  defineSettings,
  duration,
  field,
  group,
  integer,
  invalid,
  list,
  map,
  oneOf,
  parseList,
  parseMap,
  parseOtlpHeaders,
  port,
  text,
  type SettingsOf,
  type Field,
  type Invalid,
  type SettingsRead,
} from '@gatehouse/settings'
import { ALGORITHMS } from '../limiter/algorithms.js'
import { memcacheKeyPrefixProblem } from '../memcache/keys.js'

/**
 * A variable in whole seconds (upstream's `…_SECONDS` integers), held in milliseconds like every
 * duration of the package: an {@link integer} (its bounds and problems in seconds) times 1000.
 */
function secondsInMs(
  names: string,
  options: Parameters<typeof integer>[1] & { readonly check?: never },
): Field<number> {
  const seconds = integer(names, options)
  return field(
    names,
    (text) => {
      const value = seconds.parse(text)
      return typeof value === 'number' ? value * 1000 : value
    },
    options,
  )
}

/** Log levels (logrus names, as upstream's `LOG_LEVEL`). */
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'

/** How one Redis instance is deployed (`REDIS_TYPE`). */
export type RedisType = 'single' | 'sentinel' | 'cluster'

/**
 * Every setting of the service: the values of {@link settingsTable} (each entry's TSDoc carries
 * over), with the mogrifiers read from the names `USE_DOG_STATSD_MOGRIFIERS` lists.
 */
export type Settings = Omit<SettingsOf<typeof settingsTable>, 'taggedStatsdMogrifierNames'> & {
  /**
   * The mogrifiers of `USE_DOG_STATSD_MOGRIFIERS` (names, in order; the first match wins), each
   * from `DOG_STATSD_MOGRIFIER_<NAME>_PATTERN`, `_NAME` and `_TAGS`.
   */
  readonly taggedStatsdMogrifiers: readonly MogrifierSettings[]
}

/** Connection settings of one Redis instance (the main one or the per-second one). */
export type RedisSettings = Settings['redis']

/** Connection settings of the memcache backend (`MEMCACHE_*`, upstream `src/settings/settings.go`). */
export type MemcacheSettings = Settings['memcache']

/** How the service reaches its xDS management server (`CONFIG_TYPE=GRPC_XDS_SOTW`). */
export type XdsSettings = Settings['xds']

/** Tracing settings: upstream's `TRACING_*` and the standard OTLP exporter variables. */
export type TracingSettings = Settings['tracing']

/** One DogStatsD mogrifier: renames the stats `pattern` matches and gives them tags. */
export interface MogrifierSettings {
  /** The name in `USE_DOG_STATSD_MOGRIFIERS`. */
  readonly key: string
  /** `DOG_STATSD_MOGRIFIER_<NAME>_PATTERN`: a regular expression on the stat name. */
  readonly pattern: string
  /** `DOG_STATSD_MOGRIFIER_<NAME>_NAME`: the new name; `$1`, `$2` are the pattern's groups. */
  readonly name: string
  /** `DOG_STATSD_MOGRIFIER_<NAME>_TAGS` (`k:v,k2:$1`): tags, whose values may use the groups. */
  readonly tags: Readonly<Record<string, string>>
}

/** Facts about the host that some defaults depend on, passed in so that {@link loadSettings} stays pure. */
export interface HostInfo {
  /** CPU cores this process may use (`os.availableParallelism()`). @default 1 */
  readonly availableCores?: number
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

/** `host:port`, `[v6]:port` or `:port`. */
const HOST_PORT = /^(\[[^\]]*\]|[^:\s]*):\d{1,5}$/

/** The fields of one Redis instance: `REDIS_*` = `KVSTORE_*`, or `REDIS_PERSECOND_*` = `KVSTORE_PERSECOND_*`. */
function redisFields(perSecond: boolean) {
  const infix = perSecond ? 'PERSECOND_' : ''
  const kv = (suffix: string): [string, string] => [
    `REDIS_${infix}${suffix}`,
    `KVSTORE_${infix}${suffix}`,
  ]
  /** The per-second instance's fields say so after the main instance's description. */
  const about = (description: string): string =>
    perSecond ? `${description} (for the per-second instance)` : description
  /** The per-second instance's TLS files default to the main instance's (computed below). */
  const asMain = perSecond ? { computedDefault: "the main instance's" } : {}
  return group({
    /** `REDIS_SOCKET_TYPE`: how `url` is dialled when it is not a `redis://` URL. @default 'unix' */
    socketType: oneOf(kv('SOCKET_TYPE'), ['tcp', 'unix'], {
      help: about(
        '`tcp` or `unix`: how a single `REDIS_URL` is dialled (`redis://` URLs are always TCP)',
      ),
      default: 'unix',
    }),
    /**
     * `REDIS_TYPE` (case-insensitive): `single`, `sentinel` (`url` = master name, then the
     * sentinels' `host:port`s) or `cluster` (`url` = the nodes' `host:port`s). @default 'single'
     */
    type: field(
      kv('TYPE'),
      (value) => {
        const type = value.toLowerCase()
        if (type === 'single' || type === 'sentinel' || type === 'cluster') return type
        return invalid(
          `Unrecognized redis type ${value}; must be one of SINGLE, SENTINEL, CLUSTER`,
          {
            echo: false,
          },
        )
      },
      { help: about('`single`, `sentinel` or `cluster`'), default: 'SINGLE' },
    ),
    /**
     * `REDIS_URL`. `single`: `host:port`, a socket path, or `redis://[user:pass@]host:port[/db]`;
     * `sentinel`: `<master name>,<host:port>,…`; `cluster`: `<host:port>,…` (comma lists, upstream's
     * format).
     */
    url: text(kv('URL'), {
      help: about(
        'single: `host:port`, a socket path, or `redis://[user:pass@]host:port[/db]` (`rediss://` for TLS); sentinel: `<master name>,<host:port>,…` (at least one sentinel); cluster: `<host:port>,…`',
      ),
      default: `/var/run/nutcracker/ratelimit${perSecond ? 'persecond' : ''}.sock`,
    }),
    /** `REDIS_POOL_SIZE`: connections (single and sentinel). @default 10 */
    poolSize: integer(kv('POOL_SIZE'), {
      help: about(
        'Connections (single, sentinel); the first ready one carries the traffic (one write per event-loop turn), the others take over at once when it drops. Cluster: caps `REDIS_CLUSTER_PIPELINE_PARALLELISM`',
      ),
      default: '10',
      min: 1,
      max: 1000,
    }),
    /** `REDIS_AUTH`: `password` or `user:password`. Secret. @default '' */
    auth: text(kv('AUTH'), {
      help: about('`password` or `username:password` for the data nodes (never logged)'),
      secret: true,
    }),
    /** `REDIS_SENTINEL_AUTH`: `password` or `user:password` for the sentinels. Secret. @default '' */
    sentinelAuth: text(kv('SENTINEL_AUTH'), {
      help: about('`password` or `username:password` for the sentinels (never logged)'),
      secret: true,
    }),
    /** `REDIS_TLS`. @default false */
    tls: bool(kv('TLS'), { help: about('Connect with TLS (data nodes and sentinels)') }),
    /** `REDIS_TLS_CLIENT_CERT` (PEM file path). */
    tlsClientCert: text(kv('TLS_CLIENT_CERT'), {
      ...asMain,
      help: about('Client certificate file'),
    }),
    /** `REDIS_TLS_CLIENT_KEY` (PEM file path). */
    tlsClientKey: text(kv('TLS_CLIENT_KEY'), { ...asMain, help: about('Client key file') }),
    /** `REDIS_TLS_CACERT` (PEM file path). */
    tlsCaCert: text(kv('TLS_CACERT'), { ...asMain, help: about('CA file to verify the server') }),
    /** `REDIS_TLS_SKIP_HOSTNAME_VERIFICATION`: verify the chain but not the host name. */
    tlsSkipHostnameVerification: bool(kv('TLS_SKIP_HOSTNAME_VERIFICATION'), {
      ...asMain,
      help: about('Verify the chain but not the host name'),
    }),
    /** `REDIS_TIMEOUT`: connect and read timeout, milliseconds. @default 10000 */
    timeoutMs: duration(kv('TIMEOUT'), {
      help: about(
        'Connect timeout, and read timeout: a connection with commands in flight that gets no answer for this long is closed (its calls fail) and reconnected, as upstream',
      ),
      default: '10s',
    }),
    /**
     * `REDIS_POOL_ON_EMPTY_BEHAVIOR`: what a call does when no connection is ready (all are
     * reconnecting): `CREATE` waits up to {@link poolOnEmptyWaitMs}, then tries the connection being
     * re-established (and gets its error); `ERROR` waits as long, then fails; `WAIT` waits up to
     * {@link timeoutMs}, then fails. @default 'CREATE'
     */
    poolOnEmptyBehavior: oneOf(kv('POOL_ON_EMPTY_BEHAVIOR'), ['CREATE', 'ERROR', 'WAIT'], {
      help: about(
        'What a call does when no connection is ready (all reconnecting): `CREATE` waits up to `REDIS_POOL_ON_EMPTY_WAIT_DURATION`, then tries the connection being re-established (its error); `ERROR` waits as long, then fails with `no connection to the main redis became ready within …`; `WAIT` waits up to `REDIS_TIMEOUT`, then fails so',
      ),
      default: 'CREATE',
    }),
    /** `REDIS_POOL_ON_EMPTY_WAIT_DURATION`, milliseconds (`CREATE`, `ERROR`). @default 1000 */
    poolOnEmptyWaitMs: duration(kv('POOL_ON_EMPTY_WAIT_DURATION'), {
      help: about('The wait of `CREATE` and `ERROR`'),
      default: '1s',
    }),
    /**
     * `REDIS_PIPELINE_WINDOW`, milliseconds: required non-zero with `cluster` (upstream's implicit
     * pipelining); commands of one event-loop turn leave together, which is within any window.
     * @default 0
     */
    pipelineWindowMs: duration(kv('PIPELINE_WINDOW'), {
      help: about(
        "Cluster: required non-zero (upstream's implicit pipelining). Commands of one event-loop turn leave together per node, which is within any window",
      ),
      default: '0',
    }),
    /**
     * `REDIS_CLUSTER_PIPELINE_PARALLELISM` (cluster): keys of one request sent at once; 0 = the
     * pool size; larger values are capped at the pool size. @default 1
     */
    clusterPipelineParallelism: integer(kv('CLUSTER_PIPELINE_PARALLELISM'), {
      help: about(
        'Cluster: keys of one request sent at once (upstream groups commands by key); `0` = `REDIS_POOL_SIZE`; larger values are capped at it',
      ),
      default: '1',
      min: 0,
      max: 1000,
    }),
    /**
     * `REDIS_CLOSE_CONNECTION_ON_READONLY_ERROR`: a `READONLY` reply (a replica after a failover)
     * closes that connection, which reconnects to the current master; the call still fails.
     * @default false
     */
    closeConnectionOnReadonlyError: bool(kv('CLOSE_CONNECTION_ON_READONLY_ERROR'), {
      help: about(
        'A `READONLY` reply (a demoted master after a failover) closes that connection, which reconnects (to the current master with sentinel); the call still fails',
      ),
    }),
  })
}

/**
 * `CONFIG_GRPC_XDS_NODE_METADATA`: `k1=v1,k2=v2`, each key separated from its value by the first
 * `=` (upstream splits on `=`); blanks around items are trimmed.
 */
function parseNodeMetadata(value: string): Readonly<Record<string, string>> | Invalid {
  const metadata: Record<string, string> = Object.create(null) as Record<string, string>
  for (const item of parseList(value)) {
    const equals = item.indexOf('=')
    if (equals <= 0) return invalid('must be a list of key=value pairs separated by commas')
    metadata[item.slice(0, equals)] = item.slice(equals + 1)
  }
  return metadata
}

/**
 * `CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS`: `k1:v1,k2:v2` (envconfig's map syntax), keys
 * lower-cased as gRPC metadata keys are; each key must be a valid gRPC metadata key (not a
 * binary `-bin` one) and each value printable ASCII.
 */
function parseGrpcHeaders(value: string): Readonly<Record<string, string>> | Invalid {
  let pairs: Record<string, string>
  try {
    pairs = parseMap(value)
  } catch {
    return invalid('must be a list of key:value pairs separated by commas', { echo: false })
  }
  const headers: Record<string, string> = Object.create(null) as Record<string, string>
  for (const [key, text] of Object.entries(pairs)) {
    const name = key.trim().toLowerCase()
    if (!/^[0-9a-z_.-]+$/.test(name) || name.endsWith('-bin') || name.startsWith('grpc-')) {
      return invalid(
        `header name ${JSON.stringify(key)} is not a valid gRPC metadata key (letters, digits, "-", "_", "."; not "grpc-*" or "*-bin")`,
        { echo: false },
      )
    }
    if (!/^[\x20-\x7e]*$/.test(text)) {
      return invalid(`the value of header ${JSON.stringify(name)} must be printable ASCII`, {
        echo: false,
      })
    }
    headers[name] = text.trim()
  }
  return headers
}

/**
 * Every variable the service reads, in `--help` order, with its default written once: the
 * {@link Settings} fields (same keys; the mogrifier names are read into
 * {@link Settings.taggedStatsdMogrifiers}).
 */
export const settingsTable = defineSettings(
  {
    /** `HOST` of the HTTP server. @default '0.0.0.0' */
    host: text('HOST', { help: 'HTTP address (`/json`, `/healthcheck`)', default: '0.0.0.0' }),
    /** `PORT` of the HTTP server. @default 8080 */
    port: port('PORT', { help: 'HTTP port', default: '8080' }),
    /**
     * `ADMIN_API_TOKEN` (Gatehouse addition, issue 32): the bearer token of the counter API
     * (`GET`/`DELETE /counters` on the HTTP port); empty = the API is off (404). Secret.
     * @default ''
     */
    adminApiToken: text('ADMIN_API_TOKEN', {
      help: 'Gatehouse addition: turns the counter API on (`GET` and `DELETE /counters` on the HTTP port, see [Counter API](#counter-api)), callers sending `Authorization: Bearer <token>`; empty: the API answers 404 (never logged)',
      secret: true,
    }),
    /** `DEBUG_HOST`. @default '0.0.0.0' */
    debugHost: text('DEBUG_HOST', {
      help: 'Debug server address',
      default: '0.0.0.0',
    }),
    /** `DEBUG_PORT`. @default 6070 */
    debugPort: port('DEBUG_PORT', { help: 'Debug server port', default: '6070' }),
    /** `GRPC_HOST`. @default '0.0.0.0' */
    grpcHost: text('GRPC_HOST', { help: 'gRPC address', default: '0.0.0.0' }),
    /** `GRPC_PORT`. @default 8081 */
    grpcPort: port('GRPC_PORT', { help: 'gRPC port', default: '8081' }),
    /** `GRPC_UDS`: a unix socket path to serve gRPC on instead of host:port. @default '' */
    grpcUds: text('GRPC_UDS', {
      help: 'Serve gRPC on this unix socket path instead of host:port',
    }),
    /** `GRPC_MAX_CONNECTION_AGE`, milliseconds (±10% jitter applied by the server). @default 24h */
    grpcMaxConnectionAgeMs: duration('GRPC_MAX_CONNECTION_AGE', {
      help: 'Close client connections after this age (±10% jitter)',
      default: '24h',
    }),
    /** `GRPC_MAX_CONNECTION_AGE_GRACE`, milliseconds. @default 1h */
    grpcMaxConnectionAgeGraceMs: duration('GRPC_MAX_CONNECTION_AGE_GRACE', {
      help: 'Time in-flight calls get after that',
      default: '1h',
    }),
    /**
     * `GRPC_MAX_CONNECTION_IDLE` (Gatehouse addition; grpc-go's `MaxConnectionIdle`), milliseconds:
     * a connection without calls for this long gets GOAWAY; 0 never. @default 5m
     */
    grpcMaxConnectionIdleMs: duration('GRPC_MAX_CONNECTION_IDLE', {
      help: "Gatehouse addition (grpc-go's `MaxConnectionIdle`): a connection without calls for this long gets GOAWAY; `0` never",
      default: '5m',
    }),
    /**
     * `GRPC_MAX_CONCURRENT_STREAMS` (Gatehouse addition): calls one connection may have open at
     * once (HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS`). @default 100
     */
    grpcMaxConcurrentStreams: integer('GRPC_MAX_CONCURRENT_STREAMS', {
      help: 'Gatehouse addition: calls one connection may have open at once (HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS`; Envoy opens more connections when it needs more)',
      default: '100',
      min: 1,
      max: 2 ** 31 - 1,
    }),
    /**
     * `GRPC_MAX_CALL_DURATION` (Gatehouse addition), milliseconds: the longest a call may take,
     * from its headers to its answer, whatever its `grpc-timeout`; then DEADLINE_EXCEEDED. A
     * `Health/Watch` is bound by it only until its request arrives. @default 10s
     */
    grpcMaxCallDurationMs: duration('GRPC_MAX_CALL_DURATION', {
      help: "Gatehouse addition: the longest a call may take from its headers to its answer; a call ends with `DEADLINE_EXCEEDED` (`Deadline exceeded`) at the earlier of this and its `grpc-timeout`, and an unfinished request's stream is reset, so slow or unfinished calls cannot hold memory. `Health/Watch` is bound by it only until its request arrives",
      default: '10s',
      positive: true,
    }),
    /**
     * `GRPC_SERVER_IMPLEMENTATION` (Gatehouse addition): `native` (a lean gRPC server on
     * node:http2, the default) or `grpc-js` (@grpc/grpc-js). Same wire behaviour.
     */
    grpcServerImplementation: oneOf('GRPC_SERVER_IMPLEMENTATION', ['native', 'grpc-js'], {
      help: 'Gatehouse addition: `native` (a lean gRPC server on `node:http2`, the faster path) or `grpc-js` (@grpc/grpc-js); same wire behaviour',
      default: 'native',
    }),
    // Default computed below: two processes where they can run in parallel.
    /**
     * `RATELIMIT_WORKERS` (Gatehouse addition): processes serving the same ports (node:cluster), to
     * use more than one core. More than 1 requires the Redis backend. @default 2 with the Redis
     * backend on a host with at least 2 cores ({@link HostInfo.availableCores}), else 1
     */
    workers: integer('RATELIMIT_WORKERS', {
      computedDefault: '`2` for `redis` or `memcache` on 2+ cores, else `1`',
      help: "Gatehouse addition: processes serving the same ports (node:cluster) to use more cores; more than 1 needs a shared backend (Redis, memcache). Workers that fill the cores run with V8's single-threaded GC. A worker that cannot start stops the service (exit 1). The debug port's `/stats` and the Prometheus endpoint show the sum over all workers",
      min: 1,
      max: 64,
    }),
    /**
     * `MAX_DESCRIPTORS_PER_REQUEST` (Gatehouse addition): descriptors one request may carry; more
     * is refused as a service error. @default 64
     */
    maxDescriptorsPerRequest: integer('MAX_DESCRIPTORS_PER_REQUEST', {
      help: 'Descriptors in one request (1..100000)',
      default: '64',
      min: 1,
      max: 100_000,
    }),
    /**
     * `MAX_ENTRIES_PER_DESCRIPTOR` (Gatehouse addition): entries one descriptor may carry. @default 32
     */
    maxEntriesPerDescriptor: integer('MAX_ENTRIES_PER_DESCRIPTOR', {
      help: 'Entries in one descriptor (1..100000)',
      default: '32',
      min: 1,
      max: 100_000,
    }),
    /**
     * `MAX_DESCRIPTOR_ENTRY_BYTES` (Gatehouse addition): longest descriptor entry key, and longest
     * value, in UTF-8 bytes. @default 4096
     */
    maxDescriptorEntryBytes: integer('MAX_DESCRIPTOR_ENTRY_BYTES', {
      help: 'Longest entry key, and longest entry value, in UTF-8 bytes (1..4194304)',
      default: '4096',
      min: 1,
      max: 4 * 1024 * 1024,
    }),
    /** `LOG_LEVEL`. @default 'warn' */
    logLevel: field(
      'LOG_LEVEL',
      (value) =>
        LOG_LEVELS[value.toLowerCase()] ??
        invalid('must be one of trace, debug, info, warn, error, fatal, panic'),
      {
        help: '`trace`, `debug`, `info`, `warn`, `error`, `fatal` (`panic` = `fatal`)',
        default: 'WARN',
      },
    ),
    /** `LOG_FORMAT`: `json` gives `@timestamp`, `@message`, `level`. @default 'text' */
    logFormat: oneOf('LOG_FORMAT', ['text', 'json'], {
      help: '`text` (logrus style `time=… level=… msg=…`) or `json` (`@timestamp`, `@message`, `level`); logs go to standard error',
      default: 'text',
    }),
    /**
     * `GRPC_SERVER_USE_TLS`: the gRPC server speaks TLS only, with the certificate and key files
     * below, reloaded when they change. @default false
     */
    grpcServerUseTls: bool('GRPC_SERVER_USE_TLS', {
      help: 'Serve gRPC over TLS only (see [TLS and mutual TLS](#tls-and-mutual-tls))',
    }),
    /** `GRPC_SERVER_TLS_CERT`: PEM certificate chain file of the gRPC server. @default '' */
    grpcServerTlsCert: text('GRPC_SERVER_TLS_CERT', {
      help: 'PEM certificate chain file of the gRPC server; required with TLS; reloaded when it changes',
    }),
    /** `GRPC_SERVER_TLS_KEY`: PEM private key file of the gRPC server. @default '' */
    grpcServerTlsKey: text('GRPC_SERVER_TLS_KEY', {
      help: 'PEM private key file of the gRPC server; required with TLS; reloaded when it changes',
    }),
    /**
     * `GRPC_CLIENT_TLS_CACERT`: PEM file of the CA(s) client certificates must chain to; set, it
     * turns on mutual TLS (a client without a valid certificate is refused). @default ''
     */
    grpcClientTlsCaCert: text('GRPC_CLIENT_TLS_CACERT', {
      help: 'PEM CA file for client certificates: set, mutual TLS (needs `GRPC_SERVER_USE_TLS=true`)',
    }),
    /**
     * `GRPC_CLIENT_TLS_SAN`: a DNS name the client certificate must carry as a subject
     * alternative name (mutual TLS only). @default ''
     */
    grpcClientTlsSan: text('GRPC_CLIENT_TLS_SAN', {
      help: "DNS subject alternative name the client certificate must carry (needs `GRPC_CLIENT_TLS_CACERT`); other clients' calls get `UNAUTHENTICATED`",
    }),
    /** `CONFIG_TYPE`: `FILE` (the runtime directory) or `GRPC_XDS_SOTW` (a management server). */
    configType: field(
      'CONFIG_TYPE',
      (value) => {
        const type = value.toUpperCase()
        if (type === 'FILE' || type === 'GRPC_XDS_SOTW') return type
        return invalid(`Invalid setting for ConfigType: ${value}`, { echo: false })
      },
      {
        help: '`FILE` (the files below) or `GRPC_XDS_SOTW` (a management server, below)',
        default: 'FILE',
      },
    ),
    /** The management server settings (`CONFIG_GRPC_XDS_*`, `XDS_CLIENT_*`), for `GRPC_XDS_SOTW`. */
    xds: group({
      /** `CONFIG_GRPC_XDS_NODE_ID`: the node id the management server keys its snapshots by. @default 'default' */
      nodeId: text('CONFIG_GRPC_XDS_NODE_ID', {
        help: 'Node id sent to the management server (its snapshots are keyed by it)',
        default: 'default',
      }),
      /** `CONFIG_GRPC_XDS_NODE_METADATA` (`k1=v1,k2=v2`): the node's metadata, string values. @default {} */
      nodeMetadata: field('CONFIG_GRPC_XDS_NODE_METADATA', parseNodeMetadata, {
        help: 'Node metadata, `k1=v1,k2=v2` (string values)',
      }),
      /** `CONFIG_GRPC_XDS_SERVER_URL`: `host:port` (or any gRPC target) of the server. @default 'localhost:18000' */
      serverUrl: text('CONFIG_GRPC_XDS_SERVER_URL', {
        help: 'gRPC target of the management server',
        default: 'localhost:18000',
      }),
      /**
       * `CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL`, milliseconds: between two attempts to
       * connect while the server cannot be reached. @default 3000
       */
      connectRetryIntervalMs: duration('CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL', {
        help: 'Wait between connection attempts while the server cannot be reached',
        default: '3s',
        positive: true,
      }),
      /**
       * `CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS` (`k1:v1,k2:v2`): gRPC metadata sent with the
       * stream (e.g. `authorization`). Secret: never logged. @default {}
       */
      additionalHeaders: field('CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS', parseGrpcHeaders, {
        help: 'gRPC metadata sent with the stream, `k1:v1,k2:v2` (e.g. `authorization:Bearer …`); keys must be valid gRPC metadata keys; never logged',
        secret: true,
      }),
      /** `CONFIG_GRPC_XDS_SERVER_USE_TLS`. @default false */
      useTls: bool('CONFIG_GRPC_XDS_SERVER_USE_TLS', {
        help: 'Connect over TLS',
      }),
      /** `CONFIG_GRPC_XDS_CLIENT_TLS_CERT`: PEM client certificate file (mutual TLS). @default '' */
      clientTlsCert: text('CONFIG_GRPC_XDS_CLIENT_TLS_CERT', {
        help: 'PEM client certificate file (mutual TLS; with the key)',
      }),
      /** `CONFIG_GRPC_XDS_CLIENT_TLS_KEY`: PEM client key file (mutual TLS). @default '' */
      clientTlsKey: text('CONFIG_GRPC_XDS_CLIENT_TLS_KEY', {
        help: 'PEM client key file (with the certificate)',
      }),
      /** `CONFIG_GRPC_XDS_SERVER_TLS_CACERT`: PEM CA file for the server; empty = system CAs. @default '' */
      serverTlsCaCert: text('CONFIG_GRPC_XDS_SERVER_TLS_CACERT', {
        help: 'PEM CA file for the server certificate; empty: the system CAs',
      }),
      /** `CONFIG_GRPC_XDS_SERVER_TLS_SAN`: the name the server certificate must carry; empty = the URL's host. @default '' */
      serverTlsSan: text('CONFIG_GRPC_XDS_SERVER_TLS_SAN', {
        help: 'Name the server certificate must carry; empty: the host of the URL',
      }),
      /** `XDS_CLIENT_BACKOFF_INITIAL_INTERVAL`, milliseconds: first wait before reconnecting after the stream failed. @default 10000 */
      backoffInitialMs: duration('XDS_CLIENT_BACKOFF_INITIAL_INTERVAL', {
        help: 'First wait before reconnecting after the stream failed',
        default: '10s',
        positive: true,
      }),
      /** `XDS_CLIENT_BACKOFF_MAX_INTERVAL`, milliseconds: longest wait between reconnections. @default 60000 */
      backoffMaxMs: duration('XDS_CLIENT_BACKOFF_MAX_INTERVAL', {
        help: 'Longest wait (the waits double up to it)',
        default: '60s',
        positive: true,
      }),
      /** `XDS_CLIENT_BACKOFF_RANDOM_FACTOR` (0..1): each wait is randomised by ± this fraction. @default 0.5 */
      backoffRandomFactor: decimal('XDS_CLIENT_BACKOFF_RANDOM_FACTOR', {
        help: 'Each wait varies by ± this fraction (0..1)',
        default: '0.5',
        min: 0,
        max: 1,
      }),
      /** `XDS_CLIENT_BACKOFF_JITTER`: randomise the waits. @default true */
      backoffJitter: bool('XDS_CLIENT_BACKOFF_JITTER', {
        help: 'Randomise the waits',
        default: 'true',
      }),
      /** `XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES`: largest response accepted; 0 = gRPC's default (4 MiB). @default 0 */
      maxMsgSizeBytes: integer('XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES', {
        help: "Largest response accepted; `0`: gRPC's default, 4 MiB",
        default: '0',
        min: 0,
        max: 2 ** 31 - 1,
      }),
    }),
    /** `FORCE_START_WITHOUT_INITIAL_CONFIG`. @default false */
    forceStartWithoutInitialConfig: bool('FORCE_START_WITHOUT_INITIAL_CONFIG', {
      help: 'Listen before the first configuration is loaded (files or xDS)',
    }),
    /** `RUNTIME_ROOT`. @default '/srv/runtime_data/current' */
    runtimeRoot: text('RUNTIME_ROOT', {
      help: 'Root directory (usually a symlink)',
      default: '/srv/runtime_data/current',
    }),
    /** `RUNTIME_SUBDIRECTORY`. @default '' */
    runtimeSubdirectory: text('RUNTIME_SUBDIRECTORY', { help: 'Directory under the root' }),
    /** `RUNTIME_APPDIRECTORY`. @default 'config' */
    runtimeAppDirectory: text('RUNTIME_APPDIRECTORY', {
      help: 'Directory holding the files',
      default: 'config',
    }),
    /** `RUNTIME_IGNOREDOTFILES`. @default false */
    runtimeIgnoreDotFiles: bool('RUNTIME_IGNOREDOTFILES', {
      help: 'Skip files and directories starting with `.`',
    }),
    /** `RUNTIME_WATCH_ROOT`: true = reload when the root symlink is swapped; false = on content changes. @default true */
    runtimeWatchRoot: bool('RUNTIME_WATCH_ROOT', {
      help: '`true`: reload when the root is swapped; `false`: reload on content changes',
      default: 'true',
    }),
    /** `MERGE_DOMAIN_CONFIG`. @default false */
    mergeDomainConfig: bool('MERGE_DOMAIN_CONFIG', {
      help: 'Allow several files for one domain (duplicate keys still fail)',
    }),
    /** `HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED`. @default false */
    healthyWithAtLeastOneConfigLoaded: bool('HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED', {
      help: 'Report unhealthy until a configuration with at least one domain is loaded',
    }),
    /** `USE_STATSD`: statsd sink (TCP); false writes stats to standard output. @default true */
    useStatsd: bool('USE_STATSD', {
      help: 'Send stats to statsd over TCP; `false` writes them to standard output as JSON lines',
      default: 'true',
    }),
    /** `STATSD_HOST`. @default 'localhost' */
    statsdHost: text('STATSD_HOST', { help: 'statsd host', default: 'localhost' }),
    /** `STATSD_PORT`. @default 8125 */
    statsdPort: port('STATSD_PORT', { help: 'statsd port', default: '8125' }),
    /** `EXTRA_TAGS` (`k1:v1,k2:v2`). */
    extraTags: map('EXTRA_TAGS', {
      help: '`k1:v1,k2:v2`, appended to `ratelimit.*` names as `.__k1=v1.__k2=v2` (`.`, `:`, `|` and control characters in values become `_`, as gostats does for the first three)',
    }),
    /** `STATS_FLUSH_INTERVAL`, milliseconds. @default 10000 */
    statsFlushIntervalMs: duration('STATS_FLUSH_INTERVAL', {
      help: 'Flush period (counters are sent as deltas)',
      default: '10s',
      positive: true,
    }),
    /** `DISABLE_STATS`. @default false */
    disableStats: bool('DISABLE_STATS', {
      help: 'Send stats nowhere (`/stats` on the debug port still shows them)',
    }),
    /**
     * `STATS_MAX_DYNAMIC_KEYS` (Gatehouse addition): stat keys made from request values (limit
     * overrides, `detailed_metric`, `value_to_metric`) that get their own stats; later ones are
     * counted under `<domain>.stats_overflow`. @default 1000
     */
    statsMaxDynamicKeys: integer('STATS_MAX_DYNAMIC_KEYS', {
      help: 'Gatehouse addition: stat keys made from request values (descriptor `limit` overrides, `detailed_metric`, `value_to_metric`) that get stats of their own; later ones, and any longer than 256 characters, are counted under `ratelimit.service.rate_limit.<domain>.stats_overflow.*`',
      default: '1000',
      max: 1_000_000,
    }),
    /**
     * `STATS_MAX_UNKNOWN_DOMAINS` (Gatehouse addition, issue 32): distinct unknown domains counted
     * under upstream's `ratelimit.service.rate_limit.<domain>.domain_not_found`; later ones under
     * the domain-less `ratelimit.service.rate_limit.domain_not_found`. @default 100
     */
    statsMaxUnknownDomains: integer('STATS_MAX_UNKNOWN_DOMAINS', {
      help: "Gatehouse addition: the first this many distinct unknown domains are counted under upstream's `ratelimit.service.rate_limit.<domain>.domain_not_found`, so dashboards written for upstream keep working; later ones, and domains longer than 256 characters, under the domain-less `ratelimit.service.rate_limit.domain_not_found` (requests cannot grow the stats without bound); 0 counts every one there",
      default: '100',
      max: 1_000_000,
    }),
    /**
     * `USE_TAGGED_STATSD` (upstream's `USE_DOG_STATSD` is accepted too): DogStatsD lines with tags
     * (`name:1|c|#tag:value`) over UDP to `STATSD_HOST:STATSD_PORT`. @default false
     */
    useTaggedStatsd: bool(['USE_TAGGED_STATSD', 'USE_DOG_STATSD'], {
      help: 'Send DogStatsD lines with tags (`name:1|c|#tag:value`) over UDP to `STATSD_HOST:STATSD_PORT`; `EXTRA_TAGS` become tags',
    }),
    taggedStatsdMogrifierNames: list('USE_DOG_STATSD_MOGRIFIERS', {
      help: "Comma-separated mogrifier names, tried in order; the first whose pattern matches a stat's name renames it and adds its tags",
    }),
    /** `USE_PROMETHEUS`: serve the stats on a Prometheus scrape endpoint. @default false */
    usePrometheus: bool('USE_PROMETHEUS', {
      help: 'Serve the stats on a Prometheus scrape endpoint (text format 0.0.4); values change at each flush',
    }),
    /** `PROMETHEUS_ADDR`: `host:port` of the scrape endpoint (`:9090` = all interfaces). @default ':9090' */
    prometheusAddr: text('PROMETHEUS_ADDR', {
      help: '`host:port` of the endpoint (`:port` = all interfaces)',
      default: ':9090',
      check: (addr) => (HOST_PORT.test(addr) ? undefined : 'must be host:port or :port'),
    }),
    /** `PROMETHEUS_PATH`: path of the scrape endpoint. @default '/metrics' */
    prometheusPath: text('PROMETHEUS_PATH', {
      help: 'Path of the endpoint (other paths: 404)',
      default: '/metrics',
      check: (path) =>
        /^\/[\x21-\x7e]*$/.test(path) ? undefined : 'must be a path starting with /',
    }),
    /** `PROMETHEUS_MAPPER_YAML`: a statsd_exporter mapping file replacing the default mapping. */
    prometheusMapperYaml: text('PROMETHEUS_MAPPER_YAML', {
      help: 'A [statsd_exporter mapping file](https://github.com/prometheus/statsd_exporter#metric-mapping-and-configuration) replacing the default mapping',
    }),
    /**
     * `PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS`: `ratelimit_service_response_time_seconds` observes
     * milliseconds (upstream's legacy unit) instead of seconds; ignored with a mapper file.
     * @default false
     */
    prometheusResponseTimeAsMilliseconds: bool('PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS', {
      help: "`ratelimit_service_response_time_seconds` observes milliseconds (upstream's legacy unit) instead of seconds; ignored with a mapping file",
    }),
    /** Tracing (`TRACING_*`, `OTEL_EXPORTER_OTLP_*`). */
    tracing: group({
      /** `TRACING_ENABLED`. @default false */
      enabled: bool('TRACING_ENABLED', { help: 'Export spans with OpenTelemetry over OTLP' }),
      /** `TRACING_EXPORTER_PROTOCOL`: OTLP over `http` (protobuf) or `grpc`. @default 'http' */
      exporterProtocol: oneOf('TRACING_EXPORTER_PROTOCOL', ['http', 'grpc'], {
        help: '`http` (OTLP protobuf over HTTP) or `grpc`',
        default: 'http',
      }),
      /** `TRACING_SERVICE_NAME`: resource attribute `service.name`. @default 'RateLimit' */
      serviceName: text('TRACING_SERVICE_NAME', {
        help: 'Resource attribute `service.name`',
        default: 'RateLimit',
      }),
      /** `TRACING_SERVICE_NAMESPACE`: `service.namespace`, left out when empty. */
      serviceNamespace: text('TRACING_SERVICE_NAMESPACE', {
        help: '`service.namespace` (left out when empty)',
      }),
      /** `TRACING_SERVICE_INSTANCE_ID`: `service.instance.id`; a random UUID v4 when empty. */
      serviceInstanceId: text('TRACING_SERVICE_INSTANCE_ID', {
        help: '`service.instance.id`; a random UUID v4 per process when empty',
      }),
      /** `TRACING_SAMPLING_RATE`: fraction of new traces sampled, 0 to 1 (parent-based). @default 1 */
      samplingRate: decimal('TRACING_SAMPLING_RATE', {
        help: "Fraction (0 to 1) of new traces sampled (decided before any tracer call: an unsampled call costs one random number); a caller's sampled or unsampled `traceparent` is followed",
        default: '1',
        min: 0,
        max: 1,
      }),
      /**
       * `OTEL_EXPORTER_OTLP_ENDPOINT`: base URL; http exports go to `<endpoint>/v1/traces`. Empty =
       * the exporter's default (`http://localhost:4318`, grpc `http://localhost:4317`).
       */
      endpoint: text('OTEL_EXPORTER_OTLP_ENDPOINT', {
        help: 'Collector base URL; http sends to `<endpoint>/v1/traces`; empty = `http://localhost:4318` (http) or `http://localhost:4317` (grpc)',
      }),
      /** `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: full URL for traces, used as is; wins over `endpoint`. */
      tracesEndpoint: text('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', {
        help: 'Full URL for traces, used as is; wins over the previous one',
      }),
      /** `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`, values URL-encoded): sent with every export. */
      headers: field('OTEL_EXPORTER_OTLP_HEADERS', parseOtlpHeaders, {
        help: '`k=v,k2=v2` (URL-encoded) sent with every export (gRPC: as metadata); never logged',
        secret: true,
      }),
      /** `OTEL_EXPORTER_OTLP_TRACES_HEADERS`: as `headers`, for traces; wins key by key. */
      tracesHeaders: field('OTEL_EXPORTER_OTLP_TRACES_HEADERS', parseOtlpHeaders, {
        help: 'As the previous one, for traces; wins key by key',
        secret: true,
      }),
      /** `OTEL_EXPORTER_OTLP_TIMEOUT`: export timeout, milliseconds. @default 10000 */
      timeoutMs: integer('OTEL_EXPORTER_OTLP_TIMEOUT', {
        help: 'Export timeout, milliseconds',
        default: '10000',
        min: 1,
        max: 600_000,
      }),
      /** `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, milliseconds; 0 (unset) = `timeoutMs`. */
      tracesTimeoutMs: integer('OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', {
        help: 'Export timeout for traces, milliseconds; 0 = the previous one',
        default: '0',
        min: 0,
        max: 600_000,
      }),
    }),
    /**
     * `BACKEND_TYPE`: `redis` (default), `memcache` (experimental upstream) or `memory`
     * (Gatehouse addition).
     */
    backendType: field(
      'BACKEND_TYPE',
      (value) => {
        const type = value.toLowerCase()
        if (type === 'redis' || type === 'memcache' || type === 'memory') return type
        return invalid('must be redis, memcache or memory')
      },
      { help: '`redis`, `memcache` or `memory` (in-process, one instance only)', default: 'redis' },
    ),
    /**
     * `MEMORY_MAX_KEYS` (Gatehouse addition): most counters the memory backend keeps; beyond it the
     * least recently incremented is evicted. @default 100000
     */
    memoryMaxKeys: integer('MEMORY_MAX_KEYS', {
      help: "Counters the memory backend keeps; a new key beyond them evicts the least recently incremented one (its count restarts at 0), counted as `ratelimit.memory.evicted_keys`. A counter costs about 150 bytes plus its key (the descriptor's entries: at most `MAX_ENTRIES_PER_DESCRIPTOR` × 2 × `MAX_DESCRIPTOR_ENTRY_BYTES`)",
      default: '100000',
      min: 1,
      max: 100_000_000,
    }),
    /** `EXPIRATION_JITTER_MAX_SECONDS` (whole seconds), in milliseconds. @default 300000 */
    expirationJitterMaxMs: secondsInMs('EXPIRATION_JITTER_MAX_SECONDS', {
      help: "Random seconds added to each key's TTL (0 = none)",
      default: '300',
    }),
    /** `LOCAL_CACHE_SIZE_IN_BYTES`; 0 disables. @default 0 */
    localCacheSizeInBytes: integer('LOCAL_CACHE_SIZE_IN_BYTES', {
      help: 'Size of the local over-limit cache; 0 disables (minimum 512 KiB when on)',
      default: '0',
    }),
    /** `NEAR_LIMIT_RATIO` (0..1). @default 0.8 */
    nearLimitRatio: decimal('NEAR_LIMIT_RATIO', {
      help: 'Share of the limit above which hits count as `near_limit` (0..1)',
      default: '0.8',
      min: 0,
      max: 1,
    }),
    /** `CACHE_KEY_PREFIX`. @default '' */
    cacheKeyPrefix: text('CACHE_KEY_PREFIX', { help: 'Prefix of every counter key' }),
    /**
     * `BACKEND_FAILURE_MODE` (Gatehouse addition, issue 32): `error` (upstream's: a store failure
     * is an error answer) or `local` (decide from in-process counters while the store fails).
     * @default 'error'
     */
    backendFailureMode: oneOf('BACKEND_FAILURE_MODE', ['error', 'local'], {
      help: "Gatehouse addition: `error` answers a store failure with an error (upstream's); `local` decides from in-process counters at the limit divided by `BACKEND_FAILURE_LOCAL_SHARE` while the store fails, marks answers `x-ratelimit-degraded: 1` and returns to the store once it answers again (see [Degrade mode](#degrade-mode))",
      default: 'error',
    }),
    /**
     * `BACKEND_FAILURE_LOCAL_SHARE` (issue 32): the expected number of instances; in `local` mode
     * each decides at `ceil(limit / share)`. @default 1
     */
    backendFailureLocalShare: integer('BACKEND_FAILURE_LOCAL_SHARE', {
      help: 'Gatehouse addition: instances sharing the limits; with `BACKEND_FAILURE_MODE=local` each decides at `ceil(limit / share)` while the store fails',
      default: '1',
      min: 1,
      max: 10_000,
    }),
    /**
     * `BACKEND_FAILURE_CHECK_INTERVAL` (issue 32), milliseconds: how often a degraded instance
     * checks whether the store answers again. @default 1000
     */
    backendFailureCheckIntervalMs: duration('BACKEND_FAILURE_CHECK_INTERVAL', {
      help: 'Gatehouse addition: with `BACKEND_FAILURE_MODE=local`, how often a degraded instance checks whether the store answers again (decisions return to it within this interval)',
      default: '1s',
      positive: true,
    }),
    /** `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`. @default false */
    stopCacheKeyIncrementWhenOverlimit: bool('STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT', {
      help: 'Read counters first; do not count refused requests (not with memcache)',
    }),
    /**
     * `RATE_LIMIT_ALGORITHM` (Gatehouse addition, issue 15): the algorithm of rules that name none
     * (`fixed_window`, `sliding_window` or `token_bucket`). `token_bucket` is refused with
     * `BACKEND_TYPE=memcache`. @default 'fixed_window'
     */
    rateLimitAlgorithm: oneOf('RATE_LIMIT_ALGORITHM', ALGORITHMS, {
      help: 'Algorithm of rules that name none: `fixed_window`, `sliding_window`, `token_bucket` (not with memcache); see [Algorithms](#algorithms)',
      default: 'fixed_window',
    }),
    /** `LIMIT_RESPONSE_HEADERS_ENABLED`. @default false */
    limitResponseHeadersEnabled: bool('LIMIT_RESPONSE_HEADERS_ENABLED', {
      help: 'Return `RateLimit-*` headers in `response_headers_to_add`',
    }),
    /** `LIMIT_LIMIT_HEADER`. @default 'RateLimit-Limit' */
    limitLimitHeader: text('LIMIT_LIMIT_HEADER', {
      help: 'Name of the limit header',
      default: 'RateLimit-Limit',
    }),
    /** `LIMIT_REMAINING_HEADER`. @default 'RateLimit-Remaining' */
    limitRemainingHeader: text('LIMIT_REMAINING_HEADER', {
      help: 'Name of the remaining header',
      default: 'RateLimit-Remaining',
    }),
    /** `LIMIT_RESET_HEADER`. @default 'RateLimit-Reset' */
    limitResetHeader: text('LIMIT_RESET_HEADER', {
      help: 'Name of the reset header (seconds)',
      default: 'RateLimit-Reset',
    }),
    /** `SHADOW_MODE`. @default false */
    shadowMode: bool('SHADOW_MODE', {
      help: 'Answer OK even when over limit (counts `ratelimit.service.global_shadow_mode`)',
    }),
    /** `QUOTA_MODE`. @default false */
    quotaMode: bool('QUOTA_MODE', { help: 'Treat every descriptor as a quota descriptor' }),
    /** `RESPONSE_DYNAMIC_METADATA`. @default false */
    responseDynamicMetadata: bool('RESPONSE_DYNAMIC_METADATA', {
      help: 'Return domain, descriptors and rule metadata in `dynamic_metadata`',
    }),
    /** The main Redis (`REDIS_*` / `KVSTORE_*`). */
    redis: redisFields(false),
    /** `REDIS_PERSECOND`: per-second limits go to a second Redis. @default false */
    redisPerSecond: bool(['REDIS_PERSECOND', 'KVSTORE_PERSECOND'], {
      help: 'Send SECOND limits to a second instance',
    }),
    /** The per-second Redis (`REDIS_PERSECOND_*` / `KVSTORE_PERSECOND_*`). */
    redisPerSecondSettings: redisFields(true),
    /** `REDIS_HEALTH_CHECK_ACTIVE_CONNECTION`: backend unhealthy while no connection is up. @default false */
    redisHealthCheckActiveConnection: bool(
      ['REDIS_HEALTH_CHECK_ACTIVE_CONNECTION', 'KVSTORE_HEALTH_CHECK_ACTIVE_CONNECTION'],
      {
        help: 'Report unhealthy while no connection (cluster: no master node) is up; `/healthcheck` then names the instance, its address and the connection error',
      },
    ),
    /** The memcache servers (`MEMCACHE_*`), used with `BACKEND_TYPE=memcache`. */
    memcache: group({
      /**
       * `MEMCACHE_HOST_PORT`: the servers, `host:port` each, comma-separated. Keys are spread over
       * them by list position (gomemcache's `ServerList`), so every instance must use the same list.
       * Exclusive with {@link srv}. @default []
       */
      hostPort: list('MEMCACHE_HOST_PORT', {
        help: 'Servers as `host:port`, comma-separated (IPv6 servers by host name). Every instance must list them in the same order. Exclusive with `MEMCACHE_SRV`; one of the two is required',
      }),
      /**
       * `MEMCACHE_SRV`: an SRV record name, `_service._proto.name`, whose targets (sorted) are the
       * servers instead. @default ''
       */
      srv: text('MEMCACHE_SRV', {
        help: 'An SRV record, `_service._proto.name`, whose targets (sorted by `host:port`) are the servers. Looked up at start: a failed lookup stops the service (`Unable to fetch servers from SRV …`)',
      }),
      /** `MEMCACHE_SRV_REFRESH`, milliseconds: how often the SRV record is looked up again; 0 never. @default 0 */
      srvRefreshMs: duration('MEMCACHE_SRV_REFRESH', {
        help: 'Look the SRV record up again this often (Go duration, e.g. `30s`); `0` never. A failed or empty lookup keeps the last list (logged)',
        default: '0',
      }),
      /**
       * `MEMCACHE_MAX_IDLE_CONNS`: connections kept to each server (0 = gomemcache's default, 2).
       * Requests in flight share them (memcache's text protocol answers in order). @default 2
       */
      maxIdleConns: integer('MEMCACHE_MAX_IDLE_CONNS', {
        help: 'Connections per server and process (`0` = 2, as gomemcache); requests in flight share them',
        default: '2',
        max: 1000,
      }),
      /** `MEMCACHE_TLS`: connect over TLS. @default false */
      tls: bool('MEMCACHE_TLS', { help: 'Connect with TLS' }),
      /** `MEMCACHE_TLS_CLIENT_CERT` (PEM file path). @default '' */
      tlsClientCert: text('MEMCACHE_TLS_CLIENT_CERT', {
        help: 'Client certificate file (mutual TLS)',
      }),
      /** `MEMCACHE_TLS_CLIENT_KEY` (PEM file path). @default '' */
      tlsClientKey: text('MEMCACHE_TLS_CLIENT_KEY', { help: 'Client key file' }),
      /** `MEMCACHE_TLS_CACERT` (PEM file path; the system's CAs when empty). @default '' */
      tlsCaCert: text('MEMCACHE_TLS_CACERT', {
        help: "CA file to verify the servers (the system's CAs when empty)",
      }),
      /** `MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION`: verify the chain but not the host name. @default false */
      tlsSkipHostnameVerification: bool('MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION', {
        help: 'Verify the chain but not the host name',
      }),
    }),
    /**
     * `BACKEND_STARTUP_TIMEOUT_SECONDS`: how long the service tries to reach its Redis or memcache
     * at start before it exits (status 1) with one line naming the address variable and the error;
     * 0 waits forever (upstream's default). Read in whole seconds, held in milliseconds.
     * @default 60000
     */
    backendStartupTimeoutMs: secondsInMs('BACKEND_STARTUP_TIMEOUT_SECONDS', {
      help: "How long to try the Redis or memcache at start (a `warn` line per failed attempt, with the address and the error) before exiting 1 with one line naming the address variable (`REDIS_URL`, `REDIS_PERSECOND_URL`, `MEMCACHE_HOST_PORT`, `MEMCACHE_SRV`) and the cause; `0` waits forever (upstream's behaviour). Nothing listens before the backend answers, as upstream",
      default: '60',
      min: 0,
      max: 86_400,
    }),
    /**
     * `REDIS_STARTUP_INITIAL_INTERVAL`, milliseconds: at start, the wait before the first retry of
     * the backend check (Redis `PING`, memcache `version`) after a failed one; doubled after each
     * failure (with ±50% jitter), up to {@link redisStartupMaxIntervalMs}. @default 1000
     */
    redisStartupInitialIntervalMs: duration(
      ['REDIS_STARTUP_INITIAL_INTERVAL', 'KVSTORE_STARTUP_INITIAL_INTERVAL'],
      {
        help: 'At start, the longest wait before trying the backend again after a failed attempt (Redis `PING`, memcache `version`; tried at once when a Redis connection turns ready); doubled after each failure, ±50% jitter. Every backend, both Redis instances',
        default: '1s',
        positive: true,
      },
    ),
    /** `REDIS_STARTUP_MAX_INTERVAL`, milliseconds. @default 30000 */
    redisStartupMaxIntervalMs: duration(
      ['REDIS_STARTUP_MAX_INTERVAL', 'KVSTORE_STARTUP_MAX_INTERVAL'],
      { help: 'Longest such wait', default: '30s', positive: true },
    ),
    /**
     * `REDIS_STARTUP_MAX_ELAPSED_TIME`, milliseconds: upstream's own bound on the wait for Redis at
     * start; 0 sets none, and {@link backendStartupTimeoutMs} bounds it. The shorter applies.
     * @default 0
     */
    redisStartupMaxElapsedMs: duration(
      ['REDIS_STARTUP_MAX_ELAPSED_TIME', 'KVSTORE_STARTUP_MAX_ELAPSED_TIME'],
      {
        help: "Upstream's own bound on the Redis wait at start; `0` sets none. When shorter than `BACKEND_STARTUP_TIMEOUT_SECONDS` it applies instead (the exit line names it)",
        default: '0',
      },
    ),
  },
  {
    computedDefaults: (v, host: HostInfo | undefined) => ({
      // Two processes by default where they can run in parallel: measured on 2 cores, about 1.5x
      // the decisions/s of one (bench/RESULTS.md). The memory backend's counters are per process.
      // Counters in Redis or memcache are shared by the workers; in-process ones are not.
      workers: v.backendType !== 'memory' && (host?.availableCores ?? 1) >= 2 ? '2' : '1',
      redisPerSecondSettings: {
        tlsClientCert: v.redis.tlsClientCert,
        tlsClientKey: v.redis.tlsClientKey,
        tlsCaCert: v.redis.tlsCaCert,
        tlsSkipHostnameVerification: String(v.redis.tlsSkipHostnameVerification),
      },
    }),
  },
)

/** A Redis `host:port` (an IPv6 literal in brackets). */
const REDIS_ADDRESS = /^(\[[^\]]*\]|[^:,\s]*):\d{1,5}$/

/**
 * What is wrong with one instance's address settings for its `REDIS_TYPE`, if anything: the
 * `REDIS_URL` list format (upstream's message for a sentinel list without sentinels) and
 * `REDIS_PIPELINE_WINDOW` for a cluster (upstream refuses to start without it).
 */
function redisAddressProblem(
  redis: RedisSettings,
): { field: 'url' | 'pipelineWindowMs'; message: string } | undefined {
  const { type, url, socketType } = redis
  if (type === 'single') {
    if (socketType === 'tcp' && !/^rediss?:\/\//.test(url) && !REDIS_ADDRESS.test(url)) {
      return { field: 'url', message: 'must be host:port or a redis:// URL for a tcp socket' }
    }
    return undefined
  }
  const items = url.split(',').map((item) => item.trim())
  const addresses = type === 'sentinel' ? items.slice(1) : items
  if (type === 'sentinel' && (items.length < 2 || items[0] === '')) {
    return {
      field: 'url',
      message:
        'Expected master name and a list of urls for the sentinels, in the format: <redis master name>,<sentinel1>,...,<sentineln>',
    }
  }
  const bad = addresses.findIndex((item) => !REDIS_ADDRESS.test(item))
  if (bad >= 0) {
    const what = type === 'sentinel' ? 'sentinel' : 'cluster node'
    const item = bad + (type === 'sentinel' ? 2 : 1)
    return {
      field: 'url',
      message: `every ${what} must be host:port, comma-separated (item ${String(item)} is not)`,
    }
  }
  if (type === 'cluster' && redis.pipelineWindowMs === 0) {
    return {
      field: 'pipelineWindowMs',
      message:
        'Implicit Pipelining must be enabled to work with Redis Cluster Mode. Set a non-zero value (such as 150us) to enable implicit pipelining',
    }
  }
  return undefined
}

/** Upstream's start-up error when more than one stats sink is enabled (`runner.go`). */
export const TWO_SINKS =
  'Error: unable to use more than one stats sink at the same time. Set one of USE_DOG_STATSD, USE_STATSD, USE_PROMETHEUS.'

/**
 * The mogrifiers `names` lists, from `DOG_STATSD_MOGRIFIER_<NAME>_PATTERN`, `_NAME` (both
 * required) and `_TAGS`, as upstream's `mogrifier_map.go` reads them. Problems go to `report`.
 */
function readMogrifiers(
  env: Readonly<Record<string, string | undefined>>,
  names: readonly string[],
  report: (message: string) => void,
): MogrifierSettings[] {
  return names.flatMap((key) => {
    const variable = (suffix: string): string => `DOG_STATSD_MOGRIFIER_${key}_${suffix}`
    const get = (suffix: string): string => env[variable(suffix)] ?? ''
    const pattern = get('PATTERN')
    const name = get('NAME')
    let ok = true
    for (const [suffix, value] of [
      ['PATTERN', pattern],
      ['NAME', name],
    ] as const) {
      if (value === '') {
        report(`mogrifier ${key} needs ${variable(suffix)}`)
        ok = false
      }
    }
    try {
      if (pattern !== '') new RegExp(pattern)
    } catch {
      report(`${variable('PATTERN')} is not a valid regular expression`)
      ok = false
    }
    let tags: Readonly<Record<string, string>> = {}
    try {
      tags = parseMap(get('TAGS'))
    } catch {
      report(`${variable('TAGS')} must be a list of key:value pairs separated by commas`)
      ok = false
    }
    return ok ? [{ key, pattern, name, tags }] : []
  })
}

/**
 * Reads and validates every setting. Pure: reads only `env` and `host`.
 *
 * @param env Environment variables. @default process.env
 * @param host The host's cores (for the `RATELIMIT_WORKERS` default). @default one core
 * @returns Frozen settings.
 * @throws `SettingsError` (`@gatehouse/settings`) Listing every invalid or unsupported variable at once.
 */
export function loadSettings(
  env: Readonly<Record<string, string | undefined>> = process.env,
  host: HostInfo = {},
): Readonly<Settings> {
  const read = settingsTable.read(env, host)
  const { taggedStatsdMogrifierNames, ...values } = read.values
  const { fields } = settingsTable
  const settings = {
    ...values,
    taggedStatsdMogrifiers: readMogrifiers(env, taggedStatsdMogrifierNames, (message) => {
      read.report(fields.taggedStatsdMogrifierNames, message, { echo: false })
    }),
  }
  for (const check of CROSS_FIELD_CHECKS) check(read, settings)
  return read.finish(settings satisfies Settings)
}

/** A validator of one group of settings: its cross-field rules, reported on `read`. */
type Check = (read: SettingsRead<unknown>, settings: Settings) => void

/** The stats sinks: one at most, as upstream (`runner.go`). */
const checkStats: Check = (read, settings) => {
  const sinks = [settings.useTaggedStatsd, settings.useStatsd, settings.usePrometheus]
  if (!settings.disableStats && sinks.filter(Boolean).length > 1) {
    read.report(settingsTable.fields.usePrometheus, TWO_SINKS, { echo: false })
  }
}

/** Both Redis instances: the address format of their `REDIS_TYPE`, a cluster's pipelining. */
const checkRedis: Check = (read, settings) => {
  const { fields } = settingsTable
  for (const key of ['redis', 'redisPerSecondSettings'] as const) {
    const problem = redisAddressProblem(settings[key])
    if (problem !== undefined) read.report(fields[key].fields[problem.field], problem.message)
  }
}

/** The gRPC server's TLS: certificate and key with TLS, mutual TLS only over TLS. */
const checkGrpcTls: Check = (read, settings) => {
  const { fields } = settingsTable
  if (settings.grpcServerUseTls) {
    for (const key of ['grpcServerTlsCert', 'grpcServerTlsKey'] as const) {
      if (settings[key] === '')
        read.report(fields[key], 'must be set with GRPC_SERVER_USE_TLS=true')
    }
  } else if (settings.grpcClientTlsCaCert !== '') {
    read.report(fields.grpcClientTlsCaCert, 'mutual TLS needs GRPC_SERVER_USE_TLS=true')
  }
  if (settings.grpcClientTlsSan !== '' && settings.grpcClientTlsCaCert === '') {
    read.report(fields.grpcClientTlsSan, 'needs GRPC_CLIENT_TLS_CACERT (mutual TLS)')
  }
}

/** The management server's client: certificate and key together, back-off bounds in order. */
const checkXds: Check = (read, { xds }) => {
  const fields = settingsTable.fields.xds.fields
  if ((xds.clientTlsCert === '') !== (xds.clientTlsKey === '')) {
    read.report(
      xds.clientTlsCert === '' ? fields.clientTlsCert : fields.clientTlsKey,
      'CONFIG_GRPC_XDS_CLIENT_TLS_CERT and CONFIG_GRPC_XDS_CLIENT_TLS_KEY must be set together',
    )
  }
  if (xds.backoffMaxMs < xds.backoffInitialMs) {
    read.report(fields.backoffMaxMs, 'must not be less than XDS_CLIENT_BACKOFF_INITIAL_INTERVAL')
  }
}

/** Workers share counters only in Redis or memcache. */
const checkWorkers: Check = (read, settings) => {
  if (settings.workers > 1 && settings.backendType === 'memory') {
    read.report(
      settingsTable.fields.workers,
      'must be 1 with BACKEND_TYPE=memory (in-process counters are not shared between workers)',
    )
  }
}

/**
 * The cross-field rules of `BACKEND_TYPE=memcache`: exactly one of `MEMCACHE_HOST_PORT` and
 * `MEMCACHE_SRV` (upstream panics `Both MEMCACHE_HOST_PORT and MEMCACHE_SRV are set`), servers
 * as `host:port`, an SRV name as `_service._proto.name` (upstream's pattern), and a
 * `CACHE_KEY_PREFIX` that memcache accepts in a key.
 */
const checkMemcache: Check = (read, settings) => {
  if (settings.backendType !== 'memcache') return
  const { fields } = settingsTable
  const { hostPort, srv } = settings.memcache
  const mc = fields.memcache.fields
  if (hostPort.length > 0 && srv !== '') {
    read.report(mc.srv, 'Both MEMCACHE_HOST_PORT and MEMCACHE_SRV are set; set one', NO_ECHO)
  } else if (hostPort.length === 0 && srv === '') {
    read.report(
      mc.hostPort,
      'MEMCACHE_HOST_PORT or MEMCACHE_SRV must be set with BACKEND_TYPE=memcache',
      NO_ECHO,
    )
  }
  for (const server of hostPort) {
    if (!MEMCACHE_ADDRESS.test(server)) {
      read.report(
        mc.hostPort,
        `"${server}" is not host:port (for an IPv6 server, use a host name)`,
        NO_ECHO,
      )
    }
  }
  if (srv !== '' && !SRV_NAME.test(srv)) {
    read.report(mc.srv, 'must be an SRV record name of the form _service._proto.name')
  }
  if (settings.rateLimitAlgorithm === 'token_bucket') {
    read.report(
      fields.rateLimitAlgorithm,
      'token_bucket is not supported with BACKEND_TYPE=memcache (use redis or memory)',
    )
  }
  const prefixProblem = memcacheKeyPrefixProblem(settings.cacheKeyPrefix)
  if (prefixProblem !== undefined) read.report(fields.cacheKeyPrefix, prefixProblem)
}

/** Every group's validator, run by {@link loadSettings} after the fields are read. */
const CROSS_FIELD_CHECKS: readonly Check[] = [
  checkStats,
  checkRedis,
  checkMemcache,
  checkGrpcTls,
  checkXds,
  checkWorkers,
]

const NO_ECHO = { echo: false } as const

/** `host:port` (the memcache client splits at the colon: no IPv6 literals). */
const MEMCACHE_ADDRESS = /^[^\s:[\]]+:\d{1,5}$/

/** Upstream's SRV name pattern (`src/srv/srv.go`): service, proto, name. */
export const SRV_NAME = /^_(.+?)\._(.+?)\.(.+)$/

/**
 * Every environment variable the service reads, with its default as text (empty when it has
 * none), in the order of the settings: what `gatehouse-ratelimit --help` prints. Names of one
 * setting's spellings are joined with ` | ` (`REDIS_URL | KVSTORE_URL`).
 *
 * @param host The host's cores, for defaults that depend on them. @default one core
 */
export function settingsDefaults(host: HostInfo = {}): ReadonlyMap<string, string> {
  return settingsTable.defaults(host)
}
