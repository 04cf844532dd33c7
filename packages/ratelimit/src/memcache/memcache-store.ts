/**
 * The memcache backend (`BACKEND_TYPE=memcache`, experimental upstream; `src/memcached/
 * cache_impl.go`). Per request it reads every counter with one multi-get per server, decides on
 * `value + hits` (the caller's fixed-window logic), and only then increments, in the background:
 * `incr key n`, and on a miss `add key n` with the window's expiry, then `incr` again if another
 * instance added the key first. Concurrent requests may therefore overshoot a limit briefly, as
 * upstream's do. Keys are upstream's cache keys, spread over the servers as gomemcache does.
 *
 * Within one event-loop turn, the reads of all requests go out as one `get` per server, and the
 * increments of one key as one `incr` of their sum (fewer round trips; the same counts).
 *
 * The client is memcache-client (electrode-io): memcache's text protocol, as upstream's
 * gomemcache speaks it, with multi-get, `incr`/`add`, several connections per server, timeouts
 * and TLS. (memjs speaks the binary protocol, which memcached deprecates, and has no TLS.)
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import { createSecureContext, type ConnectionOptions } from 'node:tls'
import { MemcacheClient, type MultiRetrievalResponse } from 'memcache-client'
import type { Logger } from 'pino'
import type { Clock, Every, Random } from '../clock.js'
import {
  BackendError,
  COUNTER_CEILING,
  type CounterStore,
  type IncrementOp,
  type ReadOp,
} from '../limiter/cache.js'
import { DEFAULT_STARTUP_POLICY, waitForBackend, type StartupPolicy } from '../limiter/startup.js'
import type { MemcacheSettings } from '../settings/settings.js'
import type { Counter, StatsStore } from '../stats/store.js'
import { memcacheKeyProblem } from './keys.js'
import { pickServer, SrvServerList, type SrvResolver } from './servers.js'

/** gomemcache's `DefaultTimeout`: connect and per-command timeout, milliseconds. */
export const MEMCACHE_TIMEOUT_MS = 500

/** gomemcache's `DefaultMaxIdleConns`, used when `MEMCACHE_MAX_IDLE_CONNS` is 0. */
export const DEFAULT_MAX_IDLE_CONNS = 2

/**
 * The longest relative expiry memcache accepts, in seconds (30 days); a larger `exptime` is read
 * as an absolute epoch time.
 */
export const MAX_RELATIVE_EXPIRY_SECONDS = 2_592_000

/** Where the servers come from: `MEMCACHE_SRV`, looked up with `resolver`. */
export interface MemcacheSrvSource {
  /** `_service._proto.name`. */
  readonly name: string
  /** `MEMCACHE_SRV_REFRESH`, milliseconds; 0 looks it up once. */
  readonly refreshMs: number
  readonly resolver: SrvResolver
  /** Runs the refresh. */
  readonly every: Every
}

/** Options of {@link MemcacheCounterStore}. */
export interface MemcacheStoreOptions {
  /** The servers, `host:port` each (`MEMCACHE_HOST_PORT`), or their SRV record. */
  readonly servers: readonly string[] | MemcacheSrvSource
  /** Connections per server (`MEMCACHE_MAX_IDLE_CONNS`; 0 = 2). @default 2 */
  readonly maxIdleConns?: number
  /** TLS options, or undefined for plain TCP ({@link memcacheTlsOptions}). */
  readonly tls?: ConnectionOptions | undefined
  /** For expiries beyond 30 days, which memcache takes as epoch times. */
  readonly clock: Clock
  readonly logger: Logger
  /** Where the `ratelimit.memcache.*` counters go. */
  readonly stats: StatsStore
  /** Connect and command timeout, milliseconds. @default {@link MEMCACHE_TIMEOUT_MS} */
  readonly timeoutMs?: number
  /**
   * Event-loop turns whose background increments may be in flight at once; beyond it, increments
   * are dropped (counted as `increment` errors and logged) rather than queued without bound.
   * @default 1000
   */
  readonly maxPendingIncrements?: number
  /**
   * The start-up wait of {@link MemcacheCounterStore.ready} (`BACKEND_STARTUP_TIMEOUT_SECONDS`,
   * `REDIS_STARTUP_*` = `KVSTORE_STARTUP_*` intervals). @default checks 1 s apart at first, at
   * most 30 s apart, for 60 s
   */
  readonly startup?: StartupPolicy
  /** Jitter of the start-up intervals. @default Math.random */
  readonly random?: Random
}

/**
 * TLS options from the `MEMCACHE_TLS*` settings, or undefined when `MEMCACHE_TLS` is off. The
 * files are read and checked here, at start, so that a bad one stops the service with its name
 * instead of failing every connection.
 *
 * @throws {Error} When a certificate or key file cannot be read or is not valid PEM (or the key
 *   does not match the certificate).
 */
export function memcacheTlsOptions(settings: MemcacheSettings): ConnectionOptions | undefined {
  if (!settings.tls) return undefined
  const tls: ConnectionOptions = {}
  const read = (name: string, path: string): Buffer => {
    try {
      return readFileSync(path)
    } catch (error) {
      throw new Error(`${name}: cannot read ${path}: ${(error as Error).message}`, { cause: error })
    }
  }
  if (settings.tlsCaCert !== '') tls.ca = read('MEMCACHE_TLS_CACERT', settings.tlsCaCert)
  if (settings.tlsClientCert !== '') {
    tls.cert = read('MEMCACHE_TLS_CLIENT_CERT', settings.tlsClientCert)
  }
  if (settings.tlsClientKey !== '') tls.key = read('MEMCACHE_TLS_CLIENT_KEY', settings.tlsClientKey)
  try {
    createSecureContext(tls)
  } catch (error) {
    throw new Error(`MEMCACHE_TLS_*: invalid certificate or key: ${(error as Error).message}`, {
      cause: error,
    })
  }
  if (settings.tlsSkipHostnameVerification) tls.checkServerIdentity = () => undefined
  return tls
}

/** upstream's `ratelimit.memcache.*` counters, tagged `code` (gostats' `.__code=` form). */
function memcacheStats(stats: StatsStore) {
  const c = (name: string, code?: string): Counter =>
    stats.counter(`ratelimit.memcache.${name}${code === undefined ? '' : `.__code=${code}`}`)
  return {
    multigetSuccess: c('multiget', 'success'),
    multigetError: c('multiget', 'error'),
    keysRequested: c('keys_requested'),
    keysFound: c('keys_found'),
    incrementSuccess: c('increment', 'success'),
    incrementMiss: c('increment', 'miss'),
    incrementError: c('increment', 'error'),
    addSuccess: c('add', 'success'),
    addNotStored: c('add', 'not_stored'),
    addError: c('add', 'error'),
  }
}

/** A counter's stored text as a number; anything else is logged and read as 0 (upstream). */
function parseCounter(value: unknown, key: string, logger: Logger): number {
  const text = Buffer.isBuffer(value) ? value.toString('latin1') : String(value)
  if (/^\d{1,20}$/.test(text)) return Math.min(Number(text), COUNTER_CEILING)
  logger.error(`memcache: unexpected value for key ${key}; counting it as 0`)
  return 0
}

/** Most keys in one `get` line (a turn with more sends several). */
const MAX_KEYS_PER_GET = 100

/**
 * The `get` of one server for one event-loop turn: every key asked for during the turn, sent as
 * one command once the turn's I/O callbacks have run (`setImmediate`).
 */
class TurnGet {
  readonly #keys = new Set<string>()
  readonly #results: Promise<MultiRetrievalResponse>

  /** @param onSent Called when the command leaves (the batch takes no more keys). */
  constructor(client: MemcacheClient, onSent: () => void) {
    this.#results = new Promise((resolve, reject) => {
      setImmediate(() => {
        onSent()
        try {
          client.get<MultiRetrievalResponse>([...this.#keys]).then(resolve, reject)
        } catch (error) {
          // The client throws synchronously for what it cannot even send (a bad address).
          reject(error instanceof Error ? error : new Error(String(error)))
        }
      })
    })
  }

  /** True once the batch holds {@link MAX_KEYS_PER_GET} keys. */
  get full(): boolean {
    return this.#keys.size >= MAX_KEYS_PER_GET
  }

  /** Adds `keys`; resolves with the answers to the whole batch. */
  get(keys: readonly string[]): Promise<MultiRetrievalResponse> {
    for (const key of keys) this.#keys.add(key)
    return this.#results
  }
}

/** The {@link CounterStore} on memcache. */
export class MemcacheCounterStore implements CounterStore {
  readonly #options: MemcacheStoreOptions
  readonly #logger: Logger
  readonly #stats: ReturnType<typeof memcacheStats>
  readonly #clients = new Map<string, MemcacheClient>()
  #servers: MemcacheClient[] = []
  #serverNames: readonly string[] = []
  readonly #srv: SrvServerList | undefined
  readonly #started: Promise<void>
  readonly #pending = new Set<Promise<void>>()
  /** This turn's multi-get per server. */
  readonly #turnGets = new Map<MemcacheClient, TurnGet>()
  /** This turn's increments, one per key (addends summed). */
  #turnIncrements: Map<string, IncrementOp> | undefined
  readonly #maxPending: number
  #closed = false

  constructor(options: MemcacheStoreOptions) {
    this.#options = options
    this.#logger = options.logger
    this.#stats = memcacheStats(options.stats)
    this.#maxPending = options.maxPendingIncrements ?? 1000
    const servers = options.servers
    if ('name' in servers) {
      this.#srv = new SrvServerList({
        ...servers,
        logger: options.logger,
        onChange: (list) => {
          if (!this.#closed) this.#setServers(list)
        },
      })
      this.#started = this.#srv.start()
      // Reported by ready(); requests wait for it.
      this.#started.catch(() => undefined)
    } else {
      this.#setServers(servers)
      this.#started = Promise.resolve()
    }
  }

  /** {@inheritDoc CounterStore.keyProblem} */
  keyProblem(key: string): string | undefined {
    return memcacheKeyProblem(key)
  }

  /**
   * Reads every counter (one multi-get per server) and answers `value + addend` per op; the
   * increments themselves run afterwards in the background ({@link flush} waits for them).
   *
   * @throws {@link BackendError} When a server cannot be reached or fails the read; nothing is
   *   incremented then.
   */
  increment(ops: readonly IncrementOp[]): Promise<number[]> {
    if (ops.length === 0) return Promise.resolve([])
    return this.#read(ops).then((values) => {
      const after = new Array<number>(ops.length)
      for (let i = 0; i < ops.length; i++) {
        after[i] = (values[i] as number) + (ops[i] as IncrementOp).addend
      }
      this.#incrementLater(ops)
      return after
    })
  }

  /**
   * {@inheritDoc CounterStore.release}
   *
   * Queued with this turn's increments as a negative addend (merged with an increment of the
   * same key still waiting), then `decr` in the background ({@link flush} waits for it).
   */
  release(ops: readonly IncrementOp[]): Promise<void> {
    this.#incrementLater(ops.map((op) => ({ ...op, addend: -op.addend })))
    return Promise.resolve()
  }

  /** {@inheritDoc CounterStore.get} */
  get(ops: readonly ReadOp[]): Promise<number[]> {
    return ops.length === 0 ? Promise.resolve([]) : this.#read(ops)
  }

  /**
   * {@inheritDoc CounterStore.remove}
   *
   * Waits for the background increments first, so that none lands after the delete.
   */
  async remove(ops: readonly ReadOp[]): Promise<void> {
    await this.flush()
    const servers = await this.#currentServers()
    try {
      await Promise.all(ops.map(({ key }) => pickServer(servers, key).delete(key)))
    } catch (error) {
      throw new BackendError(`memcache: ${(error as Error).message}`, { cause: error })
    }
  }

  /**
   * Resolves once the server list is known and a server answers `version` (one of several may be
   * down: its keys fail until it is back, and the others keep serving). After each failed check
   * logs a `warn` line (servers, errors) and tries again with back-off.
   *
   * @throws {@link BackendUnavailableError} Naming `MEMCACHE_SRV` at once when the first SRV
   *   lookup fails (upstream panics), else naming `MEMCACHE_HOST_PORT` (or `MEMCACHE_SRV`) after
   *   the start-up timeout without an answer, or when the store is closed while waiting.
   */
  async ready(): Promise<void> {
    const srv = this.#srv !== undefined
    let srvFailed = false
    await waitForBackend(
      {
        what: 'memcache',
        address:
          'name' in this.#options.servers
            ? this.#options.servers.name
            : this.#options.servers.join(','),
        setting: srv ? 'MEMCACHE_SRV' : 'MEMCACHE_HOST_PORT',
        attempt: async () => {
          await this.#started.catch((error: unknown) => {
            srvFailed = true
            throw error
          })
          await Promise.any(this.#servers.map((client) => client.version()))
        },
        isFatal: () => srvFailed,
        closed: () => this.#closed,
      },
      this.#options.startup ?? DEFAULT_STARTUP_POLICY,
      { logger: this.#logger, random: this.#options.random },
    )
  }

  /** The servers in use, `host:port`, in the order keys are spread over them. */
  servers(): readonly string[] {
    return [...this.#serverNames]
  }

  /**
   * Looks the SRV record up again now, as the `MEMCACHE_SRV_REFRESH` timer does (joining a
   * lookup in flight); nothing for a fixed server list. Failures are logged, the list kept.
   */
  refreshServers(): Promise<void> {
    return this.#srv?.refresh() ?? Promise.resolve()
  }

  /** Waits until every background increment started so far has finished. */
  async flush(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all(this.#pending)
  }

  /** Stops the SRV refresh, lets pending increments finish, and closes every connection. */
  async close(): Promise<void> {
    this.#closed = true
    this.#srv?.stop()
    await this.flush()
    for (const client of this.#clients.values()) client.shutdown()
    this.#clients.clear()
    this.#servers = []
    this.#serverNames = []
  }

  /** The current value of each op's key (0 when absent), with one multi-get per server. */
  async #read(ops: readonly ReadOp[]): Promise<number[]> {
    const servers = await this.#currentServers()
    const byServer = new Map<MemcacheClient, string[]>()
    for (const { key } of ops) {
      const client = pickServer(servers, key)
      const keys = byServer.get(client)
      if (keys === undefined) byServer.set(client, [key])
      else keys.push(key)
    }
    const found = new Map<string, number>()
    this.#stats.keysRequested.add(ops.length)
    try {
      await Promise.all(
        [...byServer].map(async ([client, keys]) => {
          const results = await this.#turnGet(client).get(keys)
          for (const key of keys) {
            const result = results[key]
            if (result !== undefined) found.set(key, parseCounter(result.value, key, this.#logger))
          }
        }),
      )
    } catch (error) {
      this.#stats.multigetError.add()
      throw new BackendError(`memcache: ${(error as Error).message}`, { cause: error })
    }
    this.#stats.multigetSuccess.add()
    this.#stats.keysFound.add(found.size)
    return ops.map(({ key }) => found.get(key) ?? 0)
  }

  /** The servers, once the first SRV lookup is done. */
  async #currentServers(): Promise<readonly MemcacheClient[]> {
    if (this.#servers.length > 0) return this.#servers
    await this.#started.catch((error: unknown) => {
      throw new BackendError((error as Error).message, { cause: error })
    })
    if (this.#servers.length === 0) throw new BackendError('memcache: no servers configured')
    return this.#servers
  }

  /** The multi-get `client` sends at the end of this turn (a new one when it is full). */
  #turnGet(client: MemcacheClient): TurnGet {
    let batch = this.#turnGets.get(client)
    if (batch === undefined || batch.full) {
      const created = new TurnGet(client, () => {
        if (this.#turnGets.get(client) === created) this.#turnGets.delete(client)
      })
      this.#turnGets.set(client, created)
      batch = created
    }
    return batch
  }

  /** Adds `ops` to this turn's increments, which run once the turn's callbacks are done. */
  #incrementLater(ops: readonly IncrementOp[]): void {
    if (this.#closed) return
    let turn = this.#turnIncrements
    if (turn === undefined) {
      if (this.#pending.size >= this.#maxPending) {
        this.#stats.incrementError.add(ops.length)
        this.#logger.error(
          `memcache: increments of ${String(this.#pending.size)} turns still pending; dropping these`,
        )
        return
      }
      const current = new Map<string, IncrementOp>()
      turn = current
      this.#turnIncrements = current
      const done: Promise<void> = new Promise((resolve) => setImmediate(resolve))
        .then(() => {
          this.#turnIncrements = undefined
          return Promise.all(Array.from(current.values(), (op) => this.#incrementOne(op)))
        })
        .catch((error: unknown) => {
          this.#logger.error(`memcache: increment failed: ${(error as Error).message}`)
        })
        .then(() => {
          this.#pending.delete(done)
        })
      this.#pending.add(done)
    }
    for (const op of ops) {
      const same = turn.get(op.key)
      turn.set(op.key, same === undefined ? op : { ...same, addend: same.addend + op.addend })
    }
  }

  /** `incr`; on a miss `add` with the expiry; if another instance added it first, `incr` again. */
  async #incrementOne(op: IncrementOp): Promise<void> {
    const client = pickServer(this.#servers, op.key)
    if (op.addend < 0) {
      // A release: `decr` (memcache stops at 0); a missing key has nothing to take back.
      try {
        await client.decr(op.key, -op.addend)
      } catch (error) {
        if ((error as Error).message !== 'NOT_FOUND') {
          this.#logger.error(`memcache: decr failed: ${(error as Error).message}`)
        }
      }
      return
    }
    if (await this.#incr(client, op)) return
    this.#stats.incrementMiss.add()
    try {
      await client.add(op.key, String(op.addend), { lifetime: this.#exptime(op.expireSeconds) })
      this.#stats.addSuccess.add()
      return
    } catch (error) {
      if ((error as Error).message !== 'NOT_STORED') {
        this.#stats.addError.add()
        this.#logger.error(`memcache: add ${op.key}: ${(error as Error).message}`)
        return
      }
    }
    this.#stats.addNotStored.add()
    await this.#incr(client, op)
  }

  /** `incr key addend`: true when done, false on a miss; errors are counted and logged. */
  async #incr(client: MemcacheClient, op: IncrementOp): Promise<boolean> {
    try {
      await client.incr(op.key, op.addend)
      this.#stats.incrementSuccess.add()
      return true
    } catch (error) {
      if ((error as Error).message === 'NOT_FOUND') return false
      this.#stats.incrementError.add()
      this.#logger.error(`memcache: incr ${op.key}: ${(error as Error).message}`)
      return true
    }
  }

  /**
   * The `exptime` for a lifetime: memcache reads values above 30 days as epoch seconds, so longer
   * lifetimes (MONTH and YEAR windows plus jitter) are sent as an absolute time.
   */
  #exptime(seconds: number): number {
    if (seconds <= MAX_RELATIVE_EXPIRY_SECONDS) return seconds
    return Math.floor(this.#options.clock.now() / 1000) + seconds
  }

  #setServers(list: readonly string[]): void {
    const wanted = new Set(list)
    for (const [server, client] of this.#clients) {
      if (!wanted.has(server)) {
        client.shutdown()
        this.#clients.delete(server)
      }
    }
    const maxConnections = this.#options.maxIdleConns || DEFAULT_MAX_IDLE_CONNS
    const timeout = this.#options.timeoutMs ?? MEMCACHE_TIMEOUT_MS
    this.#serverNames = [...list]
    this.#servers = list.map((server) => {
      let client = this.#clients.get(server)
      if (client === undefined) {
        client = new MemcacheClient({
          server: { server, maxConnections },
          cmdTimeout: timeout,
          connectTimeout: timeout,
          noDelay: true,
          ...(this.#options.tls === undefined ? {} : { tls: this.#options.tls }),
        })
        this.#clients.set(server, client)
      }
      return client
    })
  }
}
