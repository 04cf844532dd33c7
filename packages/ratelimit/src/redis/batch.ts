/**
 * Per-turn batching of increments: the ops queued in one event-loop turn for one destination (a
 * pooled connection, or a cluster) leave once the turn's I/O callbacks have run, as ONE call of
 * {@link INCREMENT_SCRIPT} per distinct key, or of {@link SLIDING_WINDOW_SCRIPT} per sliding
 * window counter (their ops' addends summed: a busy key costs one command of a few arguments per
 * turn, however many requests it served), and one {@link TOKEN_BUCKET_SCRIPT} call per bucket,
 * all calls of the turn in one write (ioredis auto-pipelining; per node in a cluster).
 *
 * @module
 */
import type { Cluster, Redis } from 'ioredis'
import type { IncrementOp, SlideOp, TakeOp } from '../limiter/cache.js'
import {
  INCREMENT_SCRIPT,
  INCREMENT_SCRIPT_SHA,
  isNoScript,
  SLIDING_WINDOW_SCRIPT,
  SLIDING_WINDOW_SCRIPT_SHA,
  TOKEN_BUCKET_SCRIPT,
  TOKEN_BUCKET_SCRIPT_SHA,
} from './script.js'

/** A script and its SHA-1. */
interface Script {
  readonly source: string
  readonly sha: string
}

const INCREMENT: Script = { source: INCREMENT_SCRIPT, sha: INCREMENT_SCRIPT_SHA }
const TOKEN_BUCKET: Script = { source: TOKEN_BUCKET_SCRIPT, sha: TOKEN_BUCKET_SCRIPT_SHA }
const SLIDING_WINDOW: Script = { source: SLIDING_WINDOW_SCRIPT, sha: SLIDING_WINDOW_SCRIPT_SHA }

/**
 * The replies of one call's ops (a request's ops queued together): each lands at its op's index,
 * and the promise resolves once all have (or rejects with the first error), as `Promise.all`
 * over one promise per op would, without those promises.
 */
class Replies {
  readonly #values: unknown[]
  #missing: number
  #failed = false
  readonly #resolve: (values: unknown[]) => void
  readonly #reject: (error: unknown) => void

  constructor(
    count: number,
    resolve: (values: unknown[]) => void,
    reject: (error: unknown) => void,
  ) {
    this.#values = new Array<unknown>(count)
    this.#missing = count
    this.#resolve = resolve
    this.#reject = reject
    if (count === 0) resolve(this.#values)
  }

  put(index: number, value: unknown): void {
    if (this.#failed) return
    this.#values[index] = value
    if (--this.#missing === 0) this.#resolve(this.#values)
  }

  fail(error: unknown): void {
    if (this.#failed || this.#missing === 0) return
    this.#failed = true
    this.#reject(error)
  }
}

/** Who waits for one op's reply: its call's {@link Replies}, at the op's index. */
class Waiter {
  readonly replies: Replies
  readonly index: number

  constructor(replies: Replies, index: number) {
    this.replies = replies
    this.index = index
  }

  resolve(reply: unknown): void {
    this.replies.put(this.index, reply)
  }

  reject(error: unknown): void {
    this.replies.fail(error)
  }
}

/**
 * Queues `count` ops with `queue` (which gives op `i` the waiter `new Waiter(replies, i)`);
 * resolves with their replies, in order.
 */
function gather(count: number, queue: (replies: Replies) => void): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    queue(new Replies(count, resolve, reject))
  })
}

/** One key's ops of a turn: the script's KEYS (the key, repeated) and ARGV, and who waits. */
interface KeyGroup {
  readonly keys: string[]
  /** addend, TTL, addend, TTL, … (the script's arguments of each op, in order) */
  readonly argv: number[]
  readonly waiters: Waiter[]
}

/**
 * One counter's increments of a turn: their addends and TTLs in order, and who waits (a sliding
 * window's also name the previous window's counter, read after them).
 */
interface Increments {
  readonly key: string
  /** The previous window's counter (sliding windows only). */
  readonly previousKey?: string
  readonly addends: number[]
  /** The TTL of the last op (each op's EXPIRE would overwrite the one before). */
  expireSeconds: number
  readonly waiters: Waiter[]
}

/**
 * Hands an {@link INCREMENT_SCRIPT} reply (the value after all the ops) to the waiters: each gets
 * the value its own INCRBY would have returned, in order (the total less the addends after it),
 * or the INCRBY's error. A {@link SLIDING_WINDOW_SCRIPT} reply also holds the previous count:
 * each gets `[current, previous]` then, or the error of either.
 */
function settleIncrements(replies: unknown[], group: Increments): void {
  const { addends, waiters } = group
  const total = replies[0]
  const previous = replies[1]
  const error =
    total instanceof Error
      ? total
      : typeof total !== 'number'
        ? new Error(`unexpected script reply ${String(total)}`)
        : previous instanceof Error
          ? previous
          : undefined
  if (error !== undefined) {
    for (const waiter of waiters) waiter.reject(error)
    return
  }
  const sliding = group.previousKey !== undefined
  let after = total as number
  for (let i = waiters.length - 1; i >= 0; i--) {
    ;(waiters[i] as Waiter).resolve(sliding ? [after, previous ?? null] : after)
    after -= addends[i] as number
  }
}

/** Hands a script's replies (one per op) to the waiters, in order. */
function settleEach(replies: unknown[], waiters: readonly Waiter[]): void {
  for (let i = 0; i < waiters.length; i++) {
    const waiter = waiters[i] as Waiter
    const reply = replies[i]
    if (reply instanceof Error) waiter.reject(reply)
    else waiter.resolve(reply)
  }
}

/**
 * Adds one op's addend to the group `name` of `groups` (made on its first op), its TTL as the
 * group's last, and its waiter.
 */
function countInto(
  groups: Map<string, Increments>,
  name: string,
  op: { readonly key: string; readonly addend: number; readonly expireSeconds: number },
  previousKey: string | undefined,
  waiter: Waiter,
): void {
  let group = groups.get(name)
  if (group === undefined) {
    group = { key: op.key, previousKey, addends: [], expireSeconds: op.expireSeconds, waiters: [] }
    groups.set(name, group)
  }
  group.addends.push(op.addend)
  group.expireSeconds = op.expireSeconds
  group.waiters.push(waiter)
}

/**
 * Sends one key's call of a script (`script`) on `client` (auto-pipelined): by its SHA, and
 * on NOSCRIPT (a fresh server, `SCRIPT FLUSH`, a failover) with the script itself, which caches
 * it again; nothing ran, so nothing counts twice.
 */
function sendGroup(
  client: Redis | Cluster,
  script: Script,
  group: KeyGroup,
  settle: (replies: unknown[], waiters: readonly Waiter[]) => void,
): void {
  const { keys, argv, waiters } = group
  client
    .evalsha(script.sha, keys.length, ...keys, ...argv)
    .catch((error: unknown) => {
      if (!isNoScript(error)) throw error
      return client.eval(script.source, keys.length, ...keys, ...argv)
    })
    .then(
      (replies) => {
        settle(replies as unknown[], waiters)
      },
      (error: unknown) => {
        for (const waiter of waiters) waiter.reject(error)
      },
    )
}

/**
 * Sends one counter's increments of the turn as one call of `script` ({@link INCREMENT_SCRIPT},
 * or {@link SLIDING_WINDOW_SCRIPT} with the previous window's counter): the addends summed and
 * the last op's TTL, each op then getting the value its own INCRBY would have returned.
 */
function sendSummed(client: Redis | Cluster, script: Script, group: Increments): void {
  let sum = 0
  for (const addend of group.addends) sum += addend
  sendGroup(
    client,
    script,
    {
      keys: group.previousKey === undefined ? [group.key] : [group.key, group.previousKey],
      argv: [sum, group.expireSeconds],
      waiters: group.waiters,
    },
    (replies) => {
      settleIncrements(replies, group)
    },
  )
}

/**
 * The increments of one event-loop turn on one client: what upstream's `INCRBY` + `EXPIRE` per op,
 * in order, would do, as one `EVALSHA` per distinct key of the ops' summed addend (a busy key's
 * requests of the turn share one call of three arguments, so neither the client nor Redis pays
 * per request); each op gets the value its own INCRBY would have returned. One key per call keeps
 * every call valid wherever the key lives: a cluster node, or behind a sharding proxy that routes
 * a script by its first key (twemproxy). A refused INCRBY (a key holding no integer) or a failed
 * call fails the ops of its key, with Redis' error.
 */
export class TurnBatch {
  readonly #increments = new Map<string, Increments>()
  /** Token-bucket steps (`TOKEN_BUCKET_SCRIPT`), one call per bucket. */
  readonly #buckets = new Map<string, KeyGroup>()
  /** Sliding-window steps (`SLIDING_WINDOW_SCRIPT`), one call per current counter. */
  readonly #slides = new Map<string, Increments>()

  /**
   * @param client Where the calls go (a pooled connection, or the cluster).
   * @param onSent Called when the batch has been sent (it is spent).
   */
  constructor(client: Redis | Cluster, onSent: () => void) {
    setImmediate(() => {
      onSent()
      // All in one tick: ioredis auto-pipelines them into one write (per node).
      for (const group of this.#increments.values()) sendSummed(client, INCREMENT, group)
      for (const group of this.#slides.values()) sendSummed(client, SLIDING_WINDOW, group)
      for (const group of this.#buckets.values()) {
        sendGroup(client, TOKEN_BUCKET, group, settleEach)
      }
    })
  }

  /**
   * Queues ops (one request's); resolves with their replies (each op's counter after its
   * increment), in order.
   */
  add(ops: readonly IncrementOp[]): Promise<unknown[]> {
    return gather(ops.length, (replies) => {
      for (let i = 0; i < ops.length; i++) {
        const op = ops[i] as IncrementOp
        countInto(this.#increments, op.key, op, undefined, new Waiter(replies, i))
      }
    })
  }

  /**
   * Queues sliding-window steps; resolves with each one's `[current, previous]` (the current
   * counter after its increment, the previous one's `GET` reply), in order. The steps of one
   * current counter in a turn are one call of {@link SLIDING_WINDOW_SCRIPT} with both keys and
   * their summed addends.
   */
  slide(ops: readonly SlideOp[]): Promise<unknown[]> {
    return gather(ops.length, (replies) => {
      for (let i = 0; i < ops.length; i++) {
        const op = ops[i] as SlideOp
        const group = this.#slides.get(op.key)
        // The same counter with another previous one (a reload changed the rule's unit): a call
        // of its own.
        const name =
          group === undefined || group.previousKey === op.previousKey
            ? op.key
            : `${op.key}\n${op.previousKey}`
        countInto(this.#slides, name, op, op.previousKey, new Waiter(replies, i))
      }
    })
  }

  /**
   * Queues token-bucket steps; resolves with each one's reply (`{allowed, tokens, wait ms}`), in
   * order. The steps of one bucket in a turn are one call of {@link TOKEN_BUCKET_SCRIPT}, run in
   * order.
   */
  take(ops: readonly TakeOp[]): Promise<unknown[]> {
    return gather(ops.length, (replies) => {
      for (let i = 0; i < ops.length; i++) {
        const op = ops[i] as TakeOp
        let group = this.#buckets.get(op.key)
        if (group === undefined) {
          group = { keys: [], argv: [], waiters: [] }
          this.#buckets.set(op.key, group)
        }
        group.keys.push(op.key)
        group.argv.push(op.nowMs, op.requestsPerUnit, op.unitMs, op.burst, op.cost, op.expireMs)
        group.waiters.push(new Waiter(replies, i))
      }
    })
  }
}
