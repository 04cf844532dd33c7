/**
 * What the Redis counter store needs from one Redis instance (the main one or the per-second
 * one), whatever its `REDIS_TYPE`, and the pool-on-empty behaviour they share.
 *
 * @module
 */
import { BackendError, type IncrementOp, type SlideOp, type TakeOp } from '../limiter/cache.js'
import type { RedisSettings } from '../settings/settings.js'

/** One Redis instance: a pool of connections (`single`, `sentinel`) or a cluster. */
export interface RedisInstance {
  /** `main` or `per-second`, for logs and errors. */
  readonly label: string
  /** Where it is, for messages (credentials masked; sentinels: the master's name and theirs). */
  readonly address: string
  /**
   * Does what upstream's `INCRBY` + `EXPIRE` of every op does (one `INCREMENT_SCRIPT` call per key
   * and turn, of the ops' summed addend).
   *
   * @returns One reply per op, in order: the counter after the increment.
   * @throws The client's error, or a {@link BackendError} when no connection became ready.
   */
  increment(ops: readonly IncrementOp[]): Promise<unknown[]>
  /**
   * Runs the sliding-window step of every op (with `SLIDING_WINDOW_SCRIPT`).
   *
   * @returns One reply per op, in order: `[current counter after the increment, previous
   *   counter's GET reply]`.
   * @throws The client's error, or a {@link BackendError} when no connection became ready.
   */
  slide(ops: readonly SlideOp[]): Promise<unknown[]>
  /**
   * Runs the token-bucket step of every op (with `TOKEN_BUCKET_SCRIPT`).
   *
   * @returns One reply per op, in order: `[allowed, tokens, waitMs]`.
   * @throws The client's error, or a {@link BackendError} when no connection became ready.
   */
  take(ops: readonly TakeOp[]): Promise<unknown[]>
  /** `GET` of every key, in order (`null` for a missing key). */
  get(keys: readonly string[]): Promise<unknown[]>
  /** `DEL` of every key (one command per key: in a cluster they may live on several nodes). */
  del(keys: readonly string[]): Promise<unknown[]>
  /** `DECRBY key by`. */
  decrby(key: string, by: number): Promise<unknown>
  /** Connections (pool) or master nodes (cluster) ready now. */
  readyCount(): number
  /** Resolves true once the instance is ready, or with whether it is after `ms` milliseconds. */
  whenReady(ms: number): Promise<boolean>
  /**
   * Resolves at the next connection event (a connection turned ready, or one failed), or after
   * `ms` milliseconds; at once when a connection is ready.
   */
  whenSettled(ms: number): Promise<void>
  /** The last connection error since a connection was last ready, if any. */
  lastError(): Error | undefined
  /** `PING`, expecting `PONG` (upstream's start-up check). @throws When it does not answer so. */
  ping(): Promise<void>
  /** Closes every connection; calls waiting for a connection fail. */
  close(): Promise<void>
}

/**
 * Waits for a ready connection where the pool has none, as `REDIS_POOL_ON_EMPTY_BEHAVIOR` says:
 * `CREATE` and `ERROR` wait at most `REDIS_POOL_ON_EMPTY_WAIT_DURATION`, `WAIT` at most
 * `REDIS_TIMEOUT` (a call never waits without bound). Woken by {@link opened}, not by polling.
 */
export class ConnectionGate {
  readonly #settings: RedisSettings
  readonly #label: string
  readonly #isReady: () => boolean
  readonly #waiters = new Set<() => void>()
  /** Woken by the next connection event, ready or failed ({@link settle}). */
  readonly #settleWaiters = new Set<() => void>()
  #lastError: Error | undefined

  /** @param isReady Whether a connection is ready now. */
  constructor(settings: RedisSettings, label: string, isReady: () => boolean) {
    this.#settings = settings
    this.#label = label
    this.#isReady = isReady
  }

  /** To call when a connection turns ready (or the instance closes): wakes every waiter. */
  opened(): void {
    this.#lastError = undefined
    for (const wake of this.#waiters) wake()
    this.#waiters.clear()
    this.#wakeSettled()
  }

  /** To call when a connection fails (the client's `error` event): kept for start-up messages. */
  failed(error: Error): void {
    this.#lastError = error
    this.#wakeSettled()
  }

  /** The last connection error since a connection was last ready. */
  lastError(): Error | undefined {
    return this.#lastError
  }

  #wakeSettled(): void {
    for (const wake of this.#settleWaiters) wake()
    this.#settleWaiters.clear()
  }

  /** Resolves at the next {@link opened} or {@link failed}, or after `ms`; at once when ready. */
  settle(ms: number): Promise<void> {
    if (this.#isReady()) return Promise.resolve()
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer)
        this.#settleWaiters.delete(wake)
        resolve()
      }
      const timer = setTimeout(wake, ms)
      this.#settleWaiters.add(wake)
    })
  }

  /** Resolves true as soon as a connection is ready, or with whether one is after `ms`. */
  wait(ms: number): Promise<boolean> {
    if (this.#isReady()) return Promise.resolve(true)
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer)
        this.#waiters.delete(wake)
        resolve(this.#isReady())
      }
      const timer = setTimeout(wake, ms)
      this.#waiters.add(wake)
    })
  }

  /**
   * Called when no connection is ready: waits as the behaviour says. Resolves when a connection
   * is ready, or (`CREATE`) when the wait is over, so that the call tries the connection that is
   * being re-established and gets its error.
   *
   * @throws {BackendError} `ERROR` and `WAIT`, when no connection became ready in time.
   */
  async whenEmpty(): Promise<void> {
    const { poolOnEmptyBehavior: behavior, poolOnEmptyWaitMs, timeoutMs } = this.#settings
    const ms = behavior === 'WAIT' ? timeoutMs : poolOnEmptyWaitMs
    if ((await this.wait(ms)) || behavior === 'CREATE') return
    throw new BackendError(
      `no connection to the ${this.#label} redis became ready within ${String(ms)} ms (REDIS_POOL_ON_EMPTY_BEHAVIOR=${behavior})`,
    )
  }
}
