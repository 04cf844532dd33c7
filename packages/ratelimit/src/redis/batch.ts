/**
 * Per-turn batching of increments: the ops queued in one event-loop turn for one destination (a
 * pooled connection, or a cluster) leave once the turn's I/O callbacks have run, as ONE call of
 * {@link INCREMENT_SCRIPT} per distinct key, all calls of the turn in one write (ioredis
 * auto-pipelining; per node in a cluster).
 *
 * @module
 */
import type { Cluster, Redis } from 'ioredis'
import type { IncrementOp, TakeOp } from '../limiter/cache.js'
import {
  INCREMENT_SCRIPT,
  INCREMENT_SCRIPT_SHA,
  isNoScript,
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

/** One key's ops of a turn: the script's KEYS (the key, repeated) and ARGV, and who waits. */
interface KeyGroup {
  readonly keys: string[]
  /** addend, TTL, addend, TTL, … (the script's arguments of each op, in order) */
  readonly argv: number[]
  readonly waiters: { resolve: (reply: unknown) => void; reject: (error: unknown) => void }[]
}

/**
 * Sends one key's call of {@link INCREMENT_SCRIPT} on `client` (auto-pipelined): by its SHA, and
 * on NOSCRIPT (a fresh server, `SCRIPT FLUSH`, a failover) with the script itself, which caches
 * it again; nothing ran, so nothing counts twice.
 */
function sendGroup(client: Redis | Cluster, script: Script, group: KeyGroup): void {
  const { keys, argv, waiters } = group
  client
    .evalsha(script.sha, keys.length, ...keys, ...argv)
    .catch((error: unknown) => {
      if (!isNoScript(error)) throw error
      return client.eval(script.source, keys.length, ...keys, ...argv)
    })
    .then(
      (replies) => {
        const list = replies as unknown[]
        waiters.forEach((waiter, i) => {
          const reply = list[i]
          if (reply instanceof Error) waiter.reject(reply)
          else waiter.resolve(reply)
        })
      },
      (error: unknown) => {
        for (const waiter of waiters) waiter.reject(error)
      },
    )
}

/**
 * The increments of one event-loop turn on one client: upstream's `INCRBY` + `EXPIRE` per op, in
 * order, as one `EVALSHA` per distinct key (a busy key's requests of the turn share one call, so
 * the client's cost per command is shared by them). One key per call keeps every call valid
 * wherever the key lives: a cluster node, or behind a sharding proxy that routes a script by its
 * first key (twemproxy). A refused INCRBY fails only its op's request, with Redis' error; a failed
 * call fails the ops of its key.
 */
export class TurnBatch {
  readonly #groups = new Map<string, KeyGroup>()
  /** Token-bucket steps (`TOKEN_BUCKET_SCRIPT`), one call per bucket. */
  readonly #buckets = new Map<string, KeyGroup>()

  /**
   * @param client Where the calls go (a pooled connection, or the cluster).
   * @param onSent Called when the batch has been sent (it is spent).
   */
  constructor(client: Redis | Cluster, onSent: () => void) {
    setImmediate(() => {
      onSent()
      // All in one tick: ioredis auto-pipelines them into one write (per node).
      for (const group of this.#groups.values()) sendGroup(client, INCREMENT, group)
      for (const group of this.#buckets.values()) sendGroup(client, TOKEN_BUCKET, group)
    })
  }

  /** Queues one op; resolves with its reply (the counter after the increment). */
  add(op: IncrementOp): Promise<unknown> {
    return queue(this.#groups, op.key, op.addend, op.expireSeconds)
  }

  /**
   * Queues one token-bucket step; resolves with its reply (`{allowed, tokens, wait ms}`). The
   * steps of one bucket in a turn are one call of {@link TOKEN_BUCKET_SCRIPT}, run in order.
   */
  take(op: TakeOp): Promise<unknown> {
    return queue(
      this.#buckets,
      op.key,
      op.nowMs,
      op.requestsPerUnit,
      op.unitMs,
      op.burst,
      op.cost,
      op.expireMs,
    )
  }
}

/** Adds one op (its script arguments) to `key`'s group; resolves with the op's reply. */
function queue(groups: Map<string, KeyGroup>, key: string, ...args: number[]): Promise<unknown> {
  let group = groups.get(key)
  if (group === undefined) {
    group = { keys: [], argv: [], waiters: [] }
    groups.set(key, group)
  }
  group.keys.push(key)
  group.argv.push(...args)
  const { waiters } = group
  return new Promise((resolve, reject) => {
    waiters.push({ resolve, reject })
  })
}
