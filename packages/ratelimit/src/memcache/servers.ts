/**
 * Which memcache server holds a key, and where the server list comes from: a fixed
 * `MEMCACHE_HOST_PORT` list, or the targets of the `MEMCACHE_SRV` record, looked up again every
 * `MEMCACHE_SRV_REFRESH` (upstream `src/srv/srv.go` and gomemcache's `ServerList`).
 *
 * @module
 */
import type { SrvRecord } from 'node:dns'
import { crc32 } from 'node:zlib'
import type { Logger } from 'pino'
import type { Every } from '../clock.js'

/**
 * The server for `key` among `servers`, as gomemcache's `ServerList.PickServer` chooses it:
 * `servers[crc32(key) % servers.length]` (CRC-32 IEEE of the key's UTF-8 bytes). Instances that
 * share memcache (Gatehouse or upstream) must list the same servers in the same order.
 *
 * @param servers `host:port` list, at least one.
 */
export function pickServer<T>(servers: readonly T[], key: string): T {
  if (servers.length === 1) return servers[0] as T
  return servers[crc32(key) % servers.length] as T
}

/** The part of `node:dns`' `promises.Resolver` the SRV lookup uses (inject one for tests). */
export interface SrvResolver {
  resolveSrv(hostname: string): Promise<SrvRecord[]>
}

/**
 * Looks up the servers of an SRV record: every target as `host:port` (the target's trailing dot
 * dropped), sorted as upstream sorts them, so that every instance picks the same
 * server for a key.
 *
 * @param name `_service._proto.name`.
 * @throws {Error} `Unable to fetch servers from SRV …` when the lookup fails or has no target.
 */
export async function lookupSrvServers(resolver: SrvResolver, name: string): Promise<string[]> {
  let records: SrvRecord[]
  try {
    records = await resolver.resolveSrv(name)
  } catch (error) {
    throw new Error(`Unable to fetch servers from SRV ${name}: ${(error as Error).message}`, {
      cause: error,
    })
  }
  if (records.length === 0) throw new Error(`Unable to fetch servers from SRV ${name}: no targets`)
  return records
    .map(({ name: target, port }) => {
      const host = target.endsWith('.') ? target.slice(0, -1) : target
      return `${host}:${String(port)}`
    })
    .sort()
}

/** Options of {@link SrvServerList}. */
export interface SrvServerListOptions {
  /** `MEMCACHE_SRV`. */
  readonly name: string
  /** `MEMCACHE_SRV_REFRESH`, milliseconds; 0 looks the record up once. */
  readonly refreshMs: number
  readonly resolver: SrvResolver
  readonly every: Every
  readonly logger: Logger
  /** Called with every list that differs from the previous one (the first one included). */
  readonly onChange: (servers: readonly string[]) => void
}

/**
 * The servers of an SRV record, kept current: looked up at start, then every `refreshMs`; a
 * failed or empty refresh keeps the last list (upstream logs and goes on).
 */
export class SrvServerList {
  readonly #options: SrvServerListOptions
  #current = ''
  #stop: (() => void) | undefined
  #refreshing: Promise<void> | undefined

  constructor(options: SrvServerListOptions) {
    this.#options = options
  }

  /**
   * The first lookup, then the refresh timer.
   *
   * @throws {Error} `Unable to fetch servers from SRV …` (upstream panics with it at start).
   */
  async start(): Promise<void> {
    this.#apply(await lookupSrvServers(this.#options.resolver, this.#options.name))
    if (this.#options.refreshMs > 0 && this.#stop === undefined) {
      this.#stop = this.#options.every(this.#options.refreshMs, () => {
        void this.refresh()
      })
    }
  }

  /** Looks the record up again now (what the timer does); failures are logged. */
  refresh(): Promise<void> {
    this.#refreshing ??= lookupSrvServers(this.#options.resolver, this.#options.name)
      .then(
        (servers) => {
          this.#apply(servers)
        },
        (error: unknown) => {
          this.#options.logger.error(
            `${(error as Error).message}; keeping ${this.#current || 'no servers'}`,
          )
        },
      )
      .finally(() => {
        this.#refreshing = undefined
      })
    return this.#refreshing
  }

  /** Stops the refresh timer. */
  stop(): void {
    this.#stop?.()
    this.#stop = undefined
  }

  #apply(servers: string[]): void {
    const joined = servers.join(',')
    if (joined === this.#current) return
    this.#options.logger.info(`memcache servers from SRV ${this.#options.name}: ${joined}`)
    this.#current = joined
    this.#options.onChange(servers)
  }
}
