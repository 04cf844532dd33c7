import type { Clock } from '../clock.js'
import {
  COUNTER_CEILING,
  type CounterStore,
  type IncrementOp,
  type ReadOp,
  type TakeOp,
  type TakeReply,
} from '../limiter/cache.js'
import { takeTokens, type TokenBucketState } from '../limiter/token-bucket.js'
import type { Counter } from '../stats/store.js'

interface Slot {
  /** The counter (`INCRBY` keys). */
  value: number
  /** The bucket (token-bucket keys). */
  bucket?: TokenBucketState
  /** Epoch milliseconds. */
  expiresAt: number
  /** Counted by an op for the per-second store. */
  perSecond?: boolean
}

/** Options of {@link MemoryCounterStore}. */
export interface MemoryStoreOptions {
  /** Time source for key expiry. */
  readonly clock: Clock
  /**
   * How often expired keys are swept, in milliseconds (real time; expiry itself follows
   * `clock`). 0 disables the timer (keys are then only dropped when touched). @default 10000
   */
  readonly sweepIntervalMs?: number
  /**
   * Most counters kept (`MEMORY_MAX_KEYS`): a new key beyond it evicts the least recently
   * incremented one, whose count restarts from zero. @default 100000
   */
  readonly maxKeys?: number
  /** Counts the evictions of live keys (`ratelimit.memory.evicted_keys`). */
  readonly evictions?: Counter | undefined
}

/** Default of {@link MemoryStoreOptions.maxKeys}. */
export const DEFAULT_MEMORY_MAX_KEYS = 100_000

/**
 * The in-process backend (`BACKEND_TYPE=memory`, a Gatehouse addition): the same `INCRBY` +
 * `EXPIRE` semantics as Redis, and the token buckets of `token_bucket` rules (`takeTokens`, the
 * arithmetic the Redis script mirrors), kept in a `Map` in least-recently-incremented order and bounded
 * by {@link MemoryStoreOptions.maxKeys}. Counters are per process, so it suits a single instance
 * (and `npm start`).
 */
export class MemoryCounterStore implements CounterStore {
  readonly #slots = new Map<string, Slot>()
  readonly #clock: Clock
  readonly #timer: NodeJS.Timeout | undefined
  readonly #maxKeys: number
  readonly #evictions: Counter | undefined

  constructor(options: MemoryStoreOptions) {
    this.#clock = options.clock
    this.#maxKeys = options.maxKeys ?? DEFAULT_MEMORY_MAX_KEYS
    this.#evictions = options.evictions
    const interval = options.sweepIntervalMs ?? 10_000
    if (interval > 0) {
      this.#timer = setInterval(() => {
        this.sweep()
      }, interval)
      this.#timer.unref()
    }
  }

  /** Number of live keys (expired ones may linger until swept). */
  get size(): number {
    return this.#slots.size
  }

  /** Drops every expired key. */
  sweep(): void {
    const now = this.#clock.now()
    for (const [key, slot] of this.#slots) if (slot.expiresAt <= now) this.#slots.delete(key)
  }

  #live(key: string, now: number): Slot | undefined {
    const slot = this.#slots.get(key)
    if (slot !== undefined && slot.expiresAt <= now) {
      this.#slots.delete(key)
      return undefined
    }
    return slot
  }

  /** {@inheritDoc CounterStore.increment} */
  increment(ops: readonly IncrementOp[]): Promise<number[]> {
    const now = this.#clock.now()
    const results = ops.map((op) => {
      const slot = this.#touch(op.key, now)
      slot.value = Math.min(slot.value + op.addend, COUNTER_CEILING)
      slot.expiresAt = now + op.expireSeconds * 1000
      if (op.perSecond) slot.perSecond = true
      return slot.value
    })
    return Promise.resolve(results)
  }

  /** The live slot of `key`, created when missing, moved to the most recently used end. */
  #touch(key: string, now: number): Slot {
    let slot = this.#live(key, now)
    if (slot === undefined) {
      if (this.#slots.size >= this.#maxKeys) this.#evictOldest(now)
      slot = { value: 0, expiresAt: 0 }
    } else this.#slots.delete(key) // re-inserted below: most recently used last
    this.#slots.set(key, slot)
    return slot
  }

  /** {@inheritDoc CounterStore.release} */
  release(ops: readonly IncrementOp[]): Promise<void> {
    const now = this.#clock.now()
    for (const op of ops) {
      const slot = this.#live(op.key, now)
      if (slot !== undefined) slot.value = Math.max(0, slot.value - op.addend)
    }
    return Promise.resolve()
  }

  /** {@inheritDoc CounterStore.take} */
  take(ops: readonly TakeOp[]): Promise<TakeReply[]> {
    const now = this.#clock.now()
    return Promise.resolve(
      ops.map((op) => {
        const slot = this.#touch(op.key, now)
        const result = takeTokens(slot.bucket, op.nowMs, op, op.cost)
        slot.bucket = result.state
        slot.expiresAt = now + op.expireMs
        return { allowed: result.allowed, tokens: result.tokens, waitMs: result.waitMs }
      }),
    )
  }

  /** Drops the least recently incremented key (counted unless it had expired anyway). */
  #evictOldest(now: number): void {
    const oldest = this.#slots.entries().next().value
    if (oldest === undefined) return
    const [key, slot] = oldest
    this.#slots.delete(key)
    if (slot.expiresAt > now) this.#evictions?.add()
  }

  /** {@inheritDoc CounterStore.get} */
  get(ops: readonly ReadOp[]): Promise<number[]> {
    const now = this.#clock.now()
    return Promise.resolve(ops.map((op) => this.#live(op.key, now)?.value ?? 0))
  }

  /**
   * The live counters (not the buckets) above 0, as increments that would add them to another
   * store with their remaining lifetime (whole seconds, at least 1): what the degrade mode hands
   * back to the store once it answers again (issue 32).
   */
  counters(): IncrementOp[] {
    const now = this.#clock.now()
    const out: IncrementOp[] = []
    for (const [key, slot] of this.#slots) {
      if (slot.bucket !== undefined || slot.value <= 0 || slot.expiresAt <= now) continue
      out.push({
        key,
        addend: slot.value,
        expireSeconds: Math.max(1, Math.ceil((slot.expiresAt - now) / 1000)),
        perSecond: slot.perSecond === true,
      })
    }
    return out
  }

  /** Drops every key. */
  clear(): void {
    this.#slots.clear()
  }

  /** {@inheritDoc CounterStore.remove} */
  remove(ops: readonly ReadOp[]): Promise<void> {
    for (const op of ops) this.#slots.delete(op.key)
    return Promise.resolve()
  }

  /** {@inheritDoc CounterStore.ready} */
  ready(): Promise<void> {
    return Promise.resolve()
  }

  /** {@inheritDoc CounterStore.close} */
  close(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer)
    this.#slots.clear()
    return Promise.resolve()
  }
}
