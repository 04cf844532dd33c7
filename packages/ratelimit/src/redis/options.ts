/**
 * From one instance's {@link RedisSettings} to ioredis options, per `REDIS_TYPE` (upstream
 * `src/redis/driver_impl.go`): `single` (one address), `sentinel` (master name, then sentinels;
 * ioredis asks them for the master and follows failovers) and `cluster` (seed nodes; ioredis
 * discovers the slots and follows MOVED/ASK). No topology logic of our own.
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import type { ConnectionOptions } from 'node:tls'
import type { ClusterOptions, RedisOptions } from 'ioredis'
import type { RedisSettings } from '../settings/settings.js'

/** `password` or `user:password` (split at the first colon, as upstream's `REDIS_AUTH`). */
function credentials(auth: string): { username?: string; password?: string } {
  if (auth === '') return {}
  const at = auth.indexOf(':')
  return at < 0 ? { password: auth } : { username: auth.slice(0, at), password: auth.slice(at + 1) }
}

/** `host:port` or `[v6]:port` to ioredis' `{ host, port }` (empty host = loopback). */
export function hostPort(address: string): { host: string; port: number } {
  const match = /^\[?([^\]]*)\]?:(\d+)$/.exec(address.trim())
  if (match === null) throw new Error(`expected host:port (got "${address}")`)
  return { host: match[1] === '' ? '127.0.0.1' : (match[1] as string), port: Number(match[2]) }
}

/** The comma list of `REDIS_URL` (sentinel, cluster), items trimmed. */
function addressList(url: string): string[] {
  return url.split(',').map((item) => item.trim())
}

/** TLS options from the `REDIS_TLS*` files, or undefined without TLS. */
function tlsOptions(settings: RedisSettings): ConnectionOptions | undefined {
  if (!settings.tls && !settings.url.startsWith('rediss://')) return undefined
  const tls: ConnectionOptions = {}
  if (settings.tlsCaCert !== '') tls.ca = readFileSync(settings.tlsCaCert)
  if (settings.tlsClientCert !== '') tls.cert = readFileSync(settings.tlsClientCert)
  if (settings.tlsClientKey !== '') tls.key = readFileSync(settings.tlsClientKey)
  if (settings.tlsSkipHostnameVerification) tls.checkServerIdentity = () => undefined
  return tls
}

/**
 * Options of every data connection (a pooled connection, a cluster node): timeouts, auth, TLS,
 * fail-fast while disconnected, and upstream's `REDIS_CLOSE_CONNECTION_ON_READONLY_ERROR`.
 */
function connectionOptions(settings: RedisSettings): RedisOptions {
  const options: RedisOptions = {
    connectTimeout: settings.timeoutMs,
    // Upstream's REDIS_TIMEOUT is radix's read/write timeout: a connection that has commands in
    // flight and receives nothing for that long is closed (its calls fail) and reconnected.
    // ioredis' socketTimeout is that, with one timer per round trip; commandTimeout would arm and
    // clear a timer per command, a measurable share of the CPU per decision.
    socketTimeout: settings.timeoutMs,
    maxRetriesPerRequest: 0,
    enableAutoPipelining: true,
    ...credentials(settings.auth),
  }
  const tls = tlsOptions(settings)
  if (tls !== undefined) options.tls = tls
  if (settings.closeConnectionOnReadonlyError) {
    // 1 = reconnect (to the current master, for sentinel) without resending: the call still fails.
    options.reconnectOnError = (error) => (error.message.startsWith('READONLY') ? 1 : false)
  }
  return options
}

/**
 * ioredis options (and the URL, for `redis://` forms) of one connection of a `single` or
 * `sentinel` pool.
 *
 * @throws {Error} When a TLS file cannot be read or an address is not `host:port`.
 */
export function redisClientOptions(settings: RedisSettings): {
  url?: string
  options: RedisOptions
} {
  const options: RedisOptions = {
    ...connectionOptions(settings),
    enableOfflineQueue: false,
    retryStrategy: (times: number) => Math.min(100 * times, 2000),
    lazyConnect: true,
  }
  if (settings.type === 'sentinel') {
    const [name = '', ...sentinels] = addressList(settings.url)
    const sentinelAuth = credentials(settings.sentinelAuth)
    return {
      options: {
        ...options,
        name,
        sentinels: sentinels.map(hostPort),
        role: 'master',
        sentinelUsername: sentinelAuth.username,
        sentinelPassword: sentinelAuth.password,
        sentinelRetryStrategy: (times: number) => Math.min(100 * times, 2000),
        // Reconnects as soon as a sentinel announces a new master (+switch-master).
        failoverDetector: true,
        enableTLSForSentinelMode: options.tls !== undefined,
        sentinelTLS: options.tls,
      },
    }
  }
  if (/^rediss?:\/\//.test(settings.url)) return { url: settings.url, options }
  if (settings.socketType === 'unix') return { options: { ...options, path: settings.url } }
  return { options: { ...options, ...hostPort(settings.url) } }
}

/**
 * The seed nodes and ioredis options of a `cluster` instance.
 *
 * @throws {Error} When a TLS file cannot be read or a node is not `host:port`.
 */
export function clusterOptions(settings: RedisSettings): {
  nodes: { host: string; port: number }[]
  options: ClusterOptions
} {
  return {
    nodes: addressList(settings.url).map(hostPort),
    options: {
      redisOptions: connectionOptions(settings),
      // Commands of one event-loop turn leave together, per node: upstream's implicit pipelining
      // (REDIS_PIPELINE_WINDOW), with a window of one turn.
      enableAutoPipelining: true,
      enableOfflineQueue: false,
      scaleReads: 'master',
      clusterRetryStrategy: (times: number) => Math.min(100 * times, 2000),
      lazyConnect: true,
    },
  }
}

/** Masks `user:password@` in a URL for logs (upstream `MaskCredentialsInUrl`). */
export function maskCredentials(url: string): string {
  return url.replace(/\/\/[^@/]*@/g, '//*****@')
}
