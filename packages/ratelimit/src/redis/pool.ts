/**
 * A `single` or `sentinel` Redis instance: `REDIS_POOL_SIZE` ioredis connections (to the address,
 * or to the master the sentinels name, followed across failovers by ioredis). Each event-loop
 * turn's increments leave in one write on the first ready connection (`batch.ts`).
 *
 * @module
 */
import { Redis } from 'ioredis'
import type { Logger } from 'pino'
import type { IncrementOp, SlideOp, TakeOp } from '../limiter/cache.js'
import type { RedisSettings } from '../settings/settings.js'
import { ConnectionGate, type RedisInstance } from './instance.js'
import { maskCredentials, redisClientOptions } from './options.js'
import { TurnBatch } from './batch.js'

/** A pool of connections to one Redis (`single`) or to the master of a sentinel group. */
export class RedisPool implements RedisInstance {
  readonly label: string
  readonly address: string
  readonly #clients: Redis[]
  readonly #gate: ConnectionGate
  /** The batch of this event-loop turn per connection, until it is sent. */
  readonly #batches = new Map<Redis, TurnBatch>()
  /** Whether a connection was ready since the last time none was (for one line per change). */
  #connected = false
  #closing = false

  /**
   * Opens the connections (in the background).
   *
   * @param onChange Called when a connection turns ready or is lost.
   * @throws {Error} When a TLS file cannot be read or an address is malformed.
   */
  constructor(settings: RedisSettings, label: string, logger: Logger, onChange: () => void) {
    this.label = label
    const { url, options } = redisClientOptions(settings)
    this.address =
      settings.type === 'sentinel'
        ? `master "${settings.url.split(',')[0] ?? ''}" of sentinels ${settings.url.split(',').slice(1).join(',')}`
        : maskCredentials(settings.url)
    const where = this.address
    this.#gate = new ConnectionGate(settings, label, () => this.#readyClient() !== undefined)
    this.#clients = Array.from({ length: settings.poolSize }, () => {
      const client = url === undefined ? new Redis(options) : new Redis(url, options)
      // One line when the pool gets its first ready connection and one when it has lost them all,
      // not one per connection.
      client.on('ready', () => {
        if (!this.#connected) logger.info(`connected to ${label} redis at ${where}`)
        this.#connected = true
        this.#gate.opened()
        onChange()
      })
      client.on('close', () => {
        if (this.#connected && this.readyCount() === 0) {
          this.#connected = false
          if (!this.#closing) {
            logger.warn(`lost every connection to ${label} redis at ${where}; reconnecting`)
          }
        }
        onChange()
      })
      client.on('error', (error: Error) => {
        logger.debug(`${label} redis: ${error.message}`)
        this.#gate.failed(error)
      })
      client.connect().catch(() => {
        // Reported by the 'error' event; ioredis keeps reconnecting.
      })
      return client
    })
  }

  /**
   * The connection to use: the first ready one. ioredis multiplexes every request in flight on one
   * connection and one write per turn is cheaper than spreading them (measured: about 20% less
   * CPU per decision than round-robin over 10 connections); the other connections stay open and
   * take over at once while it reconnects.
   */
  #readyClient(): Redis | undefined {
    for (const client of this.#clients) if (client.status === 'ready') return client
    return undefined
  }

  /** The first connection (there is always at least one: `REDIS_POOL_SIZE` ≥ 1). */
  get #first(): Redis {
    return this.#clients[0] as Redis
  }

  /** Runs `send` on a ready connection, after the pool-on-empty wait when there is none. */
  #withClient<T>(send: (client: Redis) => Promise<T>): Promise<T> {
    const client = this.#readyClient()
    if (client !== undefined) return send(client)
    return this.#gate.whenEmpty().then(() => send(this.#readyClient() ?? this.#first))
  }

  /** {@inheritDoc RedisInstance.increment} */
  increment(ops: readonly IncrementOp[]): Promise<unknown[]> {
    const client = this.#readyClient()
    // The common case without a closure or an extra promise: a connection is ready.
    if (client !== undefined) return this.#batchOn(client).add(ops)
    return this.#withClient((later) => this.#batchOn(later).add(ops))
  }

  /** {@inheritDoc RedisInstance.slide} */
  slide(ops: readonly SlideOp[]): Promise<unknown[]> {
    const client = this.#readyClient()
    if (client !== undefined) return this.#batchOn(client).slide(ops)
    return this.#withClient((later) => this.#batchOn(later).slide(ops))
  }

  /** {@inheritDoc RedisInstance.take} */
  take(ops: readonly TakeOp[]): Promise<unknown[]> {
    return this.#withClient((client) => this.#batchOn(client).take(ops))
  }

  /** This turn's batch on `client`. */
  #batchOn(client: Redis): TurnBatch {
    let batch = this.#batches.get(client)
    if (batch === undefined) {
      batch = new TurnBatch(client, () => this.#batches.delete(client))
      this.#batches.set(client, batch)
    }
    return batch
  }

  /** {@inheritDoc RedisInstance.get} */
  get(keys: readonly string[]): Promise<unknown[]> {
    return this.#withClient((client) => Promise.all(keys.map((key) => client.get(key))))
  }

  /** {@inheritDoc RedisInstance.del} */
  del(keys: readonly string[]): Promise<unknown[]> {
    return this.#withClient((client) => Promise.all(keys.map((key) => client.del(key))))
  }

  /** {@inheritDoc RedisInstance.decrby} */
  decrby(key: string, by: number): Promise<unknown> {
    return this.#withClient((client) => client.decrby(key, by))
  }

  /** {@inheritDoc RedisInstance.readyCount} */
  readyCount(): number {
    return this.#clients.filter((c) => c.status === 'ready').length
  }

  /** {@inheritDoc RedisInstance.whenReady} */
  whenReady(ms: number): Promise<boolean> {
    return this.#gate.wait(ms)
  }

  /** {@inheritDoc RedisInstance.whenSettled} */
  whenSettled(ms: number): Promise<void> {
    return this.#gate.settle(ms)
  }

  /** {@inheritDoc RedisInstance.lastError} */
  lastError(): Error | undefined {
    return this.#gate.lastError()
  }

  /** {@inheritDoc RedisInstance.ping} */
  async ping(): Promise<void> {
    const client = this.#readyClient()
    if (client === undefined) throw new Error(`${this.label} redis is not connected yet`)
    // ioredis types the reply as 'PONG'; anything else is a protocol error it rejects with.
    await client.ping()
  }

  /** {@inheritDoc RedisInstance.close} */
  async close(): Promise<void> {
    this.#closing = true
    await Promise.all(
      this.#clients.map(async (client) => {
        try {
          if (client.status === 'ready') await client.quit()
          else client.disconnect()
        } catch {
          client.disconnect()
        }
      }),
    )
    this.#gate.opened()
  }
}
