/**
 * Per-turn batching of increments: every op queued in one event-loop turn for one destination
 * leaves as ONE call of {@link INCREMENT_SCRIPT}.
 *
 * @module
 */
import type { IncrementOp } from '../limiter/cache.js'
import { INCREMENT_SCRIPT, INCREMENT_SCRIPT_SHA, isNoScript } from './script.js'

/**
 * Sends one call of {@link INCREMENT_SCRIPT}: by its SHA (`EVALSHA`) when `script` is
 * {@link INCREMENT_SCRIPT_SHA}, else the script itself (`EVAL`); resolves with its reply
 * array.
 */
export type BatchSender = (script: string, keys: string[], argv: number[]) => Promise<unknown[]>

/** One request's part of a {@link TurnBatch}: how many ops, and where its replies start. */
interface BatchWaiter {
  readonly start: number
  readonly count: number
  readonly resolve: (replies: unknown[]) => void
  readonly reject: (error: unknown) => void
}

/**
 * The increments of every request of one event-loop turn for one destination (a connection; in a
 * cluster, a key), sent as ONE `EVALSHA` of {@link INCREMENT_SCRIPT} once the turn's I/O
 * callbacks have run (`setImmediate`): upstream's
 * `INCRBY` + `EXPIRE` per key, in request order, for one command per turn (the client's cost per
 * command, its promise and argument copies, is then shared by every decision of the turn). Each
 * request gets its replies (one per op) in order; a refused INCRBY fails its request with Redis'
 * error, and a failed command fails them all. NOSCRIPT (a fresh server, `SCRIPT FLUSH`, a
 * failover) resends the batch with `EVAL`, which caches the script again: nothing ran, so nothing
 * counts twice.
 */
export class TurnBatch {
  readonly #send: BatchSender
  readonly #onSent: () => void
  readonly #keys: string[] = []
  /** addend, TTL, addend, TTL, … */
  readonly #argv: number[] = []
  readonly #waiters: BatchWaiter[] = []

  /**
   * @param send Sends the script call (on a connection, or on the cluster node of the keys).
   * @param onSent Called when the batch has been handed to `send` (it is spent).
   */
  constructor(send: BatchSender, onSent: () => void) {
    this.#send = send
    this.#onSent = onSent
    setImmediate(() => {
      this.#flush()
    })
  }

  /** Queues the ops; resolves with their replies (the counters after the increments), in order. */
  add(ops: readonly IncrementOp[]): Promise<unknown[]> {
    const start = this.#keys.length
    for (const op of ops) {
      this.#keys.push(op.key)
      this.#argv.push(op.addend, op.expireSeconds)
    }
    return new Promise((resolve, reject) => {
      this.#waiters.push({ start, count: ops.length, resolve, reject })
    })
  }

  #flush(): void {
    this.#onSent()
    if (this.#keys.length === 0) return
    this.#send(INCREMENT_SCRIPT_SHA, this.#keys, this.#argv)
      .catch((error: unknown) => {
        if (!isNoScript(error)) throw error
        return this.#send(INCREMENT_SCRIPT, this.#keys, this.#argv)
      })
      .then(
        (replies) => {
          for (const waiter of this.#waiters) settle(waiter, replies)
        },
        (error: unknown) => {
          for (const waiter of this.#waiters) waiter.reject(error)
        },
      )
  }
}

/** Gives a waiter its replies, or the first error among them. */
function settle(waiter: BatchWaiter, replies: unknown[]): void {
  const mine = replies.slice(waiter.start, waiter.start + waiter.count)
  const failure = mine.find((reply) => reply instanceof Error)
  if (failure === undefined) waiter.resolve(mine)
  else waiter.reject(failure)
}
