/**
 * A `cluster` Redis instance on ioredis' `Cluster`: it discovers the slots from the seed nodes,
 * follows MOVED/ASK redirections (a slot being moved), and auto-pipelines the commands of each
 * event-loop turn per node (upstream's implicit pipelining). The increments of one key in a turn
 * are one `EVALSHA`, on the node of the key's slot.
 *
 * @module
 */
import { Cluster } from 'ioredis'
import type { Logger } from 'pino'
import type { IncrementOp, SlideOp, TakeOp } from '../limiter/cache.js'
import type { RedisSettings } from '../settings/settings.js'
import { ConnectionGate, type RedisInstance } from './instance.js'
import { clusterOptions } from './options.js'
import { TurnBatch } from './batch.js'

/** A Redis Cluster, as one instance. */
export class RedisClusterInstance implements RedisInstance {
  readonly label: string
  readonly address: string
  readonly #cluster: Cluster
  readonly #gate: ConnectionGate
  /** Keys of one request sent at once (`REDIS_CLUSTER_PIPELINE_PARALLELISM`). */
  readonly #parallelism: number
  /** The batch of this event-loop turn, until it is sent. */
  #batch: TurnBatch | undefined
  #closing = false
  /**
   * Connects (in the background).
   *
   * @param onChange Called when the cluster turns ready or is lost.
   * @throws {Error} When a TLS file cannot be read or a node address is malformed.
   */
  constructor(settings: RedisSettings, label: string, logger: Logger, onChange: () => void) {
    this.label = label
    this.address = settings.url
    const { nodes, options } = clusterOptions(settings)
    const { clusterPipelineParallelism: parallelism, poolSize } = settings
    // Upstream: 0 = the pool size; larger values are capped at it.
    this.#parallelism = parallelism === 0 ? poolSize : Math.min(parallelism, poolSize)
    this.#gate = new ConnectionGate(settings, label, () => this.#cluster.status === 'ready')
    this.#cluster = new Cluster(nodes, options)
    let wasReady = false
    this.#cluster.on('ready', () => {
      if (!wasReady) logger.info(`connected to ${label} redis cluster at ${settings.url}`)
      wasReady = true
      this.#gate.opened()
      onChange()
    })
    this.#cluster.on('close', () => {
      if (wasReady && !this.#closing) {
        logger.warn(`lost connection to ${label} redis cluster; reconnecting`)
      }
      wasReady = false
      onChange()
    })
    this.#cluster.on('error', (error: Error & { lastNodeError?: Error }) => {
      logger.debug(`${label} redis cluster: ${error.message}`)
      // "Failed to refresh slots cache." says less than the node's own error.
      this.#gate.failed(error.lastNodeError ?? error)
    })
    this.#cluster.on('node error', (error: Error) => {
      logger.debug(`${label} redis cluster node: ${error.message}`)
      this.#gate.failed(error)
    })
    this.#cluster.connect().catch(() => {
      // Reported by the 'error' event; ioredis keeps reconnecting.
    })
  }

  #ready<T>(send: () => Promise<T>): Promise<T> {
    if (this.#cluster.status === 'ready') return send()
    return this.#gate.whenEmpty().then(send)
  }

  /**
   * {@inheritDoc RedisInstance.increment}
   *
   * In waves of `REDIS_CLUSTER_PIPELINE_PARALLELISM` keys, as upstream groups them.
   */
  increment(ops: readonly IncrementOp[]): Promise<unknown[]> {
    // The common case without a closure: the cluster is up and the keys go in one wave.
    if (this.#cluster.status === 'ready' && ops.length <= this.#parallelism) {
      return this.#turnBatch().add(ops)
    }
    return this.#ready(async () => {
      const replies: unknown[] = []
      for (let i = 0; i < ops.length; i += this.#parallelism) {
        const wave = ops.slice(i, i + this.#parallelism)
        replies.push(...(await this.#turnBatch().add(wave)))
      }
      return replies
    })
  }

  /**
   * {@inheritDoc RedisInstance.slide}
   *
   * In waves of `REDIS_CLUSTER_PIPELINE_PARALLELISM` keys, as the increments; each call on the
   * node of its keys' common hash tag.
   */
  slide(ops: readonly SlideOp[]): Promise<unknown[]> {
    if (this.#cluster.status === 'ready' && ops.length <= this.#parallelism) {
      return this.#turnBatch().slide(ops)
    }
    return this.#ready(async () => {
      const replies: unknown[] = []
      for (let i = 0; i < ops.length; i += this.#parallelism) {
        const wave = ops.slice(i, i + this.#parallelism)
        replies.push(...(await this.#turnBatch().slide(wave)))
      }
      return replies
    })
  }

  /** This turn's batch. */
  #turnBatch(): TurnBatch {
    this.#batch ??= new TurnBatch(this.#cluster, () => {
      this.#batch = undefined
    })
    return this.#batch
  }

  /**
   * {@inheritDoc RedisInstance.take}
   *
   * In waves of `REDIS_CLUSTER_PIPELINE_PARALLELISM` keys, as the increments.
   */
  take(ops: readonly TakeOp[]): Promise<unknown[]> {
    return this.#ready(async () => {
      const replies: unknown[] = []
      for (let i = 0; i < ops.length; i += this.#parallelism) {
        const wave = ops.slice(i, i + this.#parallelism)
        replies.push(...(await this.#turnBatch().take(wave)))
      }
      return replies
    })
  }

  /** {@inheritDoc RedisInstance.get} */
  get(keys: readonly string[]): Promise<unknown[]> {
    return this.#ready(() => Promise.all(keys.map((key) => this.#cluster.get(key))))
  }

  /** {@inheritDoc RedisInstance.del} */
  del(keys: readonly string[]): Promise<unknown[]> {
    return this.#ready(() => Promise.all(keys.map((key) => this.#cluster.del(key))))
  }

  /** {@inheritDoc RedisInstance.decrby} */
  decrby(key: string, by: number): Promise<unknown> {
    return this.#ready(() => this.#cluster.decrby(key, by))
  }

  /** {@inheritDoc RedisInstance.readyCount} */
  readyCount(): number {
    if (this.#cluster.status !== 'ready') return 0
    return this.#cluster.nodes('master').filter((node) => node.status === 'ready').length
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
    if (this.#cluster.status !== 'ready') {
      throw new Error(`${this.label} redis cluster is not ready yet (${this.#cluster.status})`)
    }
    // ioredis types the reply as 'PONG'; anything else is a protocol error it rejects with.
    await this.#cluster.ping()
  }

  /** {@inheritDoc RedisInstance.close} */
  async close(): Promise<void> {
    this.#closing = true
    try {
      if (this.#cluster.status === 'ready') await this.#cluster.quit()
      else this.#cluster.disconnect()
    } catch {
      this.#cluster.disconnect()
    }
    this.#gate.opened()
  }
}
