/**
 * The backend seam. {@link RateLimitCache} is what the service calls (upstream's
 * `limiter.RateLimitCache`); {@link CounterStore} is the small part a key-value store has to
 * provide (Redis, memcache, memory) so that the limiting logic (fixed window, sliding window, token bucket) lives in one place
 * (`store-cache.ts`).
 *
 * @module
 */
import type { RateLimit } from '../config/config.js'
import { RateLimitError } from '../errors.js'
import type { DescriptorStatus, RateLimitRequest } from '../protocol/types.js'
import type { TraceSpan } from '../telemetry/tracing.js'

/** Decides a whole request against a backend. */
export interface RateLimitCache {
  /**
   * Counts the hits of every descriptor that has a limit and decides each one.
   *
   * @param request The request (its descriptors and hits_addend).
   * @param limits One entry per descriptor, same order; undefined = no limit (status OK, nothing
   *   stored).
   * @param trace The call's span (tracing on): the store round trip gets a child span.
   * @returns One status per descriptor, in request order.
   * @throws {@link BackendError} When the store fails; the service turns it into an error answer
   *   and counts `should_rate_limit.redis_error`.
   */
  doLimit(
    request: RateLimitRequest,
    limits: readonly (RateLimit | undefined)[],
    trace?: TraceSpan,
  ): Promise<DescriptorStatus[]>
}

/**
 * The highest value a store keeps in a counter: 2^52. A store that finds a counter above it
 * brings it back (Redis: `DECRBY` of the excess), which changes no decision (limits are uint32).
 * Each request adds at most {@link MAX_HITS_ADDEND} per descriptor, so counters and `INCRBY`
 * replies stay below 2^53 (exact in a JS number), and Redis' 64-bit `INCRBY` can never overflow:
 * that would take millions of requests in flight at once.
 */
export const COUNTER_CEILING = 2 ** 52

/**
 * The largest `hits_addend` a descriptor may carry: 4294967295, the range of the request's own
 * `hits_addend` (uint32). The descriptor's field is a UInt64Value; larger values are refused.
 */
export const MAX_HITS_ADDEND = 4_294_967_295

/** One `INCRBY key addend` + `EXPIRE key expireSeconds` pair. */
export interface IncrementOp {
  readonly key: string
  /** Hits to add (0 = read only). */
  readonly addend: number
  /** Lifetime set on the key, in seconds (the window plus jitter). */
  readonly expireSeconds: number
  /** Send to the per-second store when there is one. */
  readonly perSecond: boolean
}

/**
 * One sliding-window step: `INCRBY key addend` + `EXPIRE key expireSeconds` on the current
 * window's counter (as an {@link IncrementOp}) and a read of the previous window's counter, in
 * one atomic step. Both keys share a Redis hash tag (one Cluster slot).
 */
export interface SlideOp extends IncrementOp {
  /** The previous window's counter (read only: neither created nor its TTL changed). */
  readonly previousKey: string
}

/** The outcome of a {@link SlideOp}. */
export interface SlideReply {
  /** The current window's counter after the increment. */
  readonly current: number
  /** The previous window's counter (0 when missing). */
  readonly previous: number
}

/**
 * One token-bucket step (`token-bucket.ts`'s `takeTokens`) on the bucket stored at `key`, done
 * atomically by the store.
 */
export interface TakeOp {
  readonly key: string
  /** Tokens wanted (`hits_addend`; 0 only checks). */
  readonly cost: number
  /** The service's time, epoch milliseconds. */
  readonly nowMs: number
  /** Refill per unit (`requests_per_unit`, at least 1). */
  readonly requestsPerUnit: number
  /** The unit's length, milliseconds. */
  readonly unitMs: number
  /** Capacity (`burst`). */
  readonly burst: number
  /** Lifetime set on the key, milliseconds (an empty bucket's refill time plus jitter). */
  readonly expireMs: number
  /** Send to the per-second store when there is one. */
  readonly perSecond: boolean
}

/** The outcome of a {@link TakeOp}. */
export interface TakeReply {
  /** The tokens were taken. */
  readonly allowed: boolean
  /** Whole tokens left. */
  readonly tokens: number
  /** Milliseconds until full (allowed) or until `cost` tokens are there (refused). */
  readonly waitMs: number
}

/** A key to read (for `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`). */
export interface ReadOp {
  readonly key: string
  readonly perSecond: boolean
}

/** The counter operations a backend provides. */
export interface CounterStore {
  /**
   * Applies all increments in one round trip per underlying connection (Redis: one pipeline).
   * Counters are kept at or below {@link COUNTER_CEILING}.
   *
   * @returns The value of each key after its increment, in `ops` order.
   * @throws {@link BackendError} When the store fails or cannot be reached.
   */
  increment(ops: readonly IncrementOp[]): Promise<number[]>
  /**
   * Reads the current values (missing key = 0).
   *
   * @throws {@link BackendError} When the store fails or cannot be reached.
   */
  get(ops: readonly ReadOp[]): Promise<number[]>
  /**
   * Takes back hits counted for a request that was then refused (the sliding window counts only
   * allowed hits): `DECRBY key addend` per op, best effort and in the background of the answer;
   * never below 0. Absent: refused hits stay counted.
   *
   * @throws {@link BackendError} When the store fails (the limiter ignores it: the count then
   *   errs on the refusing side).
   */
  release?(ops: readonly IncrementOp[]): Promise<void>
  /**
   * Runs sliding-window steps (one script call per current counter and round trip on Redis);
   * absent when the store has no such step: the limiter then sends an {@link increment} of the
   * current counter and one of 0 (a read) of the previous one. Counters are kept at or below
   * {@link COUNTER_CEILING}.
   *
   * @returns One reply per op, in `ops` order.
   * @throws {@link BackendError} When the store fails or cannot be reached.
   */
  slide?(ops: readonly SlideOp[]): Promise<SlideReply[]>
  /**
   * Runs token-bucket steps, each atomically, in one round trip per underlying connection;
   * absent when the store cannot (memcache: the configuration refuses `token_bucket` then).
   *
   * @returns One reply per op, in `ops` order.
   * @throws {@link BackendError} When the store fails or cannot be reached.
   */
  take?(ops: readonly TakeOp[]): Promise<TakeReply[]>
  /**
   * Deletes the keys (a counter or a bucket; missing keys are fine): the counter API's reset
   * (`DELETE /counters`, issue 32). Absent: the store cannot reset counters.
   *
   * @throws {@link BackendError} When the store fails or cannot be reached.
   */
  remove?(ops: readonly ReadOp[]): Promise<void>
  /**
   * Why the store cannot take `key` (memcache: over 250 bytes, or whitespace or control
   * characters), checked for every limited descriptor before anything is counted; absent when
   * every key is accepted.
   *
   * @returns The problem, or undefined when the key is accepted.
   */
  keyProblem?(key: string): string | undefined
  /**
   * Resolves once the store answers (Redis: PING), for the health component; the Redis and
   * memcache stores try with back-off, logging each failed attempt at `warn`.
   *
   * @throws {@link BackendUnavailableError} (Redis, memcache) When it does not answer within the
   *   start-up timeout, naming the variable of its address.
   */
  ready(): Promise<void>
  /** Closes connections. */
  close(): Promise<void>
}

/**
 * A failure of the key-value store. The message is the store client's error text, which is
 * what upstream returns to the caller. Code `ERR_BACKEND_KEY` when the store refuses a
 * descriptor's key before anything is counted ({@link CounterStore.keyProblem}), else
 * `ERR_BACKEND`.
 */
export class BackendError extends RateLimitError {
  declare readonly code: 'ERR_BACKEND' | 'ERR_BACKEND_KEY'
  constructor(message: string, options?: { cause?: unknown; code?: 'ERR_BACKEND_KEY' }) {
    super(options?.code ?? 'ERR_BACKEND', message, options)
  }
}
