/**
 * The Redis backend on ioredis, for every `REDIS_TYPE` (`single`, `sentinel`, `cluster`):
 * upstream's `INCRBY key n` + `EXPIRE key ttl` per descriptor (`fixed_cache_impl.go`) as a Lua
 * script run with `EVALSHA`, one call per key and event-loop turn, all calls of a turn in one write
 * (per node in a cluster), with SECOND limits routed to a second instance when
 * `REDIS_PERSECOND=true`. Connections fail fast while Redis is down (after the
 * pool-on-empty wait; the call gets the client's error, as upstream) and reconnect in the
 * background, so the service serves again as soon as Redis (or the promoted master, or the slot's
 * new node) answers.
 *
 * @module
 */
import type { Logger } from 'pino'
import { systemRandom, type Random } from '../clock.js'
import {
  BackendError,
  COUNTER_CEILING,
  type CounterStore,
  type IncrementOp,
  type ReadOp,
  type SlideOp,
  type SlideReply,
  type TakeOp,
  type TakeReply,
} from '../limiter/cache.js'
import {
  DEFAULT_STARTUP_POLICY,
  waitForBackend,
  type StartupPolicy,
  type StartupTarget,
} from '../limiter/startup.js'
import type { RedisSettings } from '../settings/settings.js'
import { RedisClusterInstance } from './cluster.js'
import type { RedisInstance } from './instance.js'
import { RedisPool } from './pool.js'

export {
  INCREMENT_SCRIPT,
  INCREMENT_SCRIPT_SHA,
  SLIDING_WINDOW_SCRIPT,
  SLIDING_WINDOW_SCRIPT_SHA,
} from './script.js'
export { maskCredentials, redisClientOptions } from './options.js'

/** Options of {@link RedisCounterStore}. */
export interface RedisStoreOptions {
  /** The main Redis. */
  readonly main: RedisSettings
  /** The per-second Redis (`REDIS_PERSECOND=true`), or undefined. */
  readonly perSecond?: RedisSettings | undefined
  readonly logger: Logger
  /** Called when the number of ready connections changes (for the active-connection health check). */
  readonly onConnectionsChange?: (ready: number) => void
  /**
   * The start-up wait of {@link RedisCounterStore.ready} (`BACKEND_STARTUP_TIMEOUT_SECONDS`,
   * `REDIS_STARTUP_*`). @default checks 1 s apart at first, at most 30 s apart, for 60 s
   */
  readonly startup?: StartupPolicy
  /** Jitter of the start-up retry intervals. @default {@link systemRandom} */
  readonly random?: Random
}

function toBackendError(error: unknown): BackendError {
  if (error instanceof BackendError) return error
  const message = error instanceof Error ? error.message : String(error)
  return new BackendError(message, { cause: error })
}

function rethrowAsBackendError(error: unknown): never {
  throw toBackendError(error)
}

/**
 * A hint for the commonest mistake: a `host:port` address read as a unix socket path because
 * `REDIS_SOCKET_TYPE` is `unix` (its default, as upstream's).
 */
function socketTypeHint(settings: RedisSettings, perSecond: boolean): string | undefined {
  if (settings.type !== 'single' || settings.socketType !== 'unix') return undefined
  if (!/^[^/]*:\d+$/.test(settings.url)) return undefined
  const prefix = perSecond ? 'REDIS_PERSECOND_' : 'REDIS_'
  return `${prefix}SOCKET_TYPE is unix, so ${prefix}URL is a socket path; set ${prefix}SOCKET_TYPE=tcp for host:port`
}

/** Opens one instance of the settings' `REDIS_TYPE`. */
function openInstance(
  settings: RedisSettings,
  label: string,
  logger: Logger,
  onChange: () => void,
): RedisInstance {
  return settings.type === 'cluster'
    ? new RedisClusterInstance(settings, label, logger, onChange)
    : new RedisPool(settings, label, logger, onChange)
}

/** Whether an op goes to the per-second instance (when there is one). */
function isPerSecond(op: { readonly perSecond: boolean }): boolean {
  return op.perSecond
}

/** The ops' increments on one instance. */
function incrementOn(instance: RedisInstance, ops: readonly IncrementOp[]): Promise<unknown[]> {
  return instance.increment(ops)
}

/** The ops' sliding-window steps on one instance. */
function slideOn(instance: RedisInstance, ops: readonly SlideOp[]): Promise<unknown[]> {
  return instance.slide(ops)
}

/** The ops' token-bucket steps on one instance. */
function takeOn(instance: RedisInstance, ops: readonly TakeOp[]): Promise<unknown[]> {
  return instance.take(ops)
}

/** A `TOKEN_BUCKET_SCRIPT` reply, `[allowed, tokens, waitMs]`. */
function toTakeReply(reply: unknown): TakeReply {
  const [allowed, tokens, waitMs] = reply as [number, number, number]
  return { allowed: allowed === 1, tokens, waitMs }
}

/** The Redis {@link CounterStore}. */
export class RedisCounterStore implements CounterStore {
  readonly #main: RedisInstance
  readonly #perSecond: RedisInstance | undefined
  readonly #logger: Logger
  readonly #startup: StartupPolicy
  readonly #random: Random
  readonly #hints: readonly (string | undefined)[]
  #closed = false

  /** @throws {Error} When TLS files cannot be read or an address is malformed. */
  constructor(options: RedisStoreOptions) {
    this.#logger = options.logger
    this.#startup = options.startup ?? DEFAULT_STARTUP_POLICY
    this.#hints = [
      socketTypeHint(options.main, false),
      options.perSecond && socketTypeHint(options.perSecond, true),
    ]
    this.#random = options.random ?? systemRandom
    const notify = (): void => {
      options.onConnectionsChange?.(this.readyConnections())
    }
    this.#main = openInstance(options.main, 'main', options.logger, notify)
    this.#perSecond =
      options.perSecond === undefined
        ? undefined
        : openInstance(options.perSecond, 'per-second', options.logger, notify)
  }

  /** Connections currently ready, over both instances (cluster: ready master nodes). */
  readyConnections(): number {
    return this.#main.readyCount() + (this.#perSecond?.readyCount() ?? 0)
  }

  /**
   * Sends `ops` with `send`: all to the main Redis, or, with a per-second Redis, the per-second
   * ops there and the rest to the main one (both at once); replies (one per op) in `ops` order.
   */
  #run<T extends { perSecond: boolean }>(
    ops: readonly T[],
    send: (instance: RedisInstance, ops: readonly T[]) => Promise<unknown[]>,
  ): Promise<unknown[]> {
    const perSecond = this.#perSecond
    // The common case without an extra promise: everything to the main instance.
    if (perSecond === undefined || !ops.some(isPerSecond)) return send(this.#main, ops)
    const mainOps = ops.filter((op) => !op.perSecond)
    return Promise.all([
      mainOps.length === 0 ? Promise.resolve([]) : send(this.#main, mainOps),
      send(perSecond, ops.filter(isPerSecond)),
    ]).then(([mainReplies, secondReplies]) => {
      let m = 0
      let s = 0
      return ops.map((op) => (op.perSecond ? secondReplies[s++] : mainReplies[m++]))
    })
  }

  /** {@inheritDoc CounterStore.increment} */
  increment(ops: readonly IncrementOp[]): Promise<number[]> {
    return this.#run(ops, incrementOn).then((values) => {
      const out = new Array<number>(ops.length)
      for (let i = 0; i < ops.length; i++) {
        const after = Number(values[i])
        if (after > COUNTER_CEILING) this.#lower(ops[i] as IncrementOp, after - COUNTER_CEILING)
        out[i] = after
      }
      return out
    }, rethrowAsBackendError)
  }

  /**
   * {@inheritDoc CounterStore.slide}
   *
   * One `EVALSHA` of `SLIDING_WINDOW_SCRIPT` per current counter and event-loop turn (with the
   * `EVAL` fallback on NOSCRIPT), on the keys' node in a cluster.
   */
  slide(ops: readonly SlideOp[]): Promise<SlideReply[]> {
    return this.#run(ops, slideOn).then((replies) => {
      const out = new Array<SlideReply>(ops.length)
      for (let i = 0; i < ops.length; i++) {
        const [after, previous] = replies[i] as [unknown, unknown]
        const current = Number(after)
        if (current > COUNTER_CEILING) {
          this.#lower(ops[i] as SlideOp, current - COUNTER_CEILING)
        }
        out[i] = { current, previous: previous === null ? 0 : Number(previous) }
      }
      return out
    }, rethrowAsBackendError)
  }

  /**
   * {@inheritDoc CounterStore.release}
   *
   * One `DECRBY` per op, on the connection (or the key's node) its increment went to, so it runs
   * after that increment.
   */
  release(ops: readonly IncrementOp[]): Promise<void> {
    return this.#run(ops, (instance, some) =>
      Promise.all(some.map((op) => instance.decrby(op.key, op.addend))),
    ).then(() => undefined, rethrowAsBackendError)
  }

  /**
   * {@inheritDoc CounterStore.take}
   *
   * One `EVALSHA` of `TOKEN_BUCKET_SCRIPT` per bucket and event-loop turn (with the `EVAL`
   * fallback on NOSCRIPT), on the bucket key's own node in a cluster.
   */
  take(ops: readonly TakeOp[]): Promise<TakeReply[]> {
    return this.#run(ops, takeOn).then((replies) => replies.map(toTakeReply), rethrowAsBackendError)
  }

  /**
   * Brings a counter above {@link COUNTER_CEILING} back to it (`DECRBY`, so concurrent
   * increments are kept), in the background: the decision does not depend on it.
   */
  #lower(op: IncrementOp, excess: number): void {
    const instance = op.perSecond && this.#perSecond !== undefined ? this.#perSecond : this.#main
    instance.decrby(op.key, excess).catch((error: unknown) => {
      // Not the key: it holds descriptor values, which may be secrets (API keys, tokens).
      this.#logger.debug(`could not lower a counter above 2^52: ${(error as Error).message}`)
    })
  }

  /** {@inheritDoc CounterStore.remove} */
  remove(ops: readonly ReadOp[]): Promise<void> {
    return this.#run(ops, (instance, some) => instance.del(some.map((op) => op.key))).then(
      () => undefined,
      rethrowAsBackendError,
    )
  }

  /** {@inheritDoc CounterStore.get} */
  async get(ops: readonly ReadOp[]): Promise<number[]> {
    const replies = await this.#run(ops, (instance, some) =>
      instance.get(some.map((op) => op.key)),
    ).catch(rethrowAsBackendError)
    return replies.map((value) => (value === null ? 0 : Number(value)))
  }

  /**
   * Resolves once every instance answers `PING` with `PONG` (upstream's start-up check). Each
   * attempt waits for the instance's next connection event; after a failed one it logs a `warn`
   * line (address, error) and waits at most the current interval (`REDIS_STARTUP_INITIAL_INTERVAL`,
   * doubled each time with ±50% jitter, up to `REDIS_STARTUP_MAX_INTERVAL`), checking again as
   * soon as a connection turns ready.
   *
   * @throws {@link BackendUnavailableError} After the start-up timeout without an answer (naming
   *   `REDIS_URL` or `REDIS_PERSECOND_URL`, the address and the last error), or after
   *   {@link close}.
   */
  async ready(): Promise<void> {
    const instances = [this.#main, ...(this.#perSecond === undefined ? [] : [this.#perSecond])]
    for (const [i, instance] of instances.entries()) {
      await waitForBackend(this.#startupTarget(instance, this.#hints[i]), this.#startup, {
        logger: this.#logger,
        random: this.#random,
      })
    }
  }

  /** The variable holding the instance's address. */
  #setting(instance: RedisInstance): string {
    return instance === this.#main ? 'REDIS_URL' : 'REDIS_PERSECOND_URL'
  }

  #startupTarget(instance: RedisInstance, hint: string | undefined): StartupTarget {
    return {
      what: `the ${instance.label} redis`,
      address: instance.address,
      setting: this.#setting(instance),
      attempt: async (budgetMs) => {
        if (instance.readyCount() === 0) await instance.whenSettled(budgetMs)
        if (instance.readyCount() === 0) {
          throw instance.lastError() ?? new Error(`no connection within ${String(budgetMs)} ms`)
        }
        await instance.ping()
      },
      pause: (ms) => instance.whenReady(ms),
      closed: () => this.#closed,
      hint: () => hint,
    }
  }

  /**
   * Why the store cannot serve now (for `/healthcheck`): each instance without a ready
   * connection, with its address variable, address and last connection error; undefined while
   * every instance has one.
   */
  unavailableReason(): string | undefined {
    const down = [this.#main, ...(this.#perSecond === undefined ? [] : [this.#perSecond])]
      .filter((instance) => instance.readyCount() === 0)
      .map(
        (instance) =>
          `the ${instance.label} redis at ${instance.address} (${this.#setting(instance)}) is not connected: ${instance.lastError()?.message ?? 'connecting'}`,
      )
    return down.length === 0 ? undefined : down.join('; ')
  }

  /** {@inheritDoc CounterStore.close} */
  async close(): Promise<void> {
    this.#closed = true
    await Promise.all([this.#main.close(), this.#perSecond?.close()])
  }
}
