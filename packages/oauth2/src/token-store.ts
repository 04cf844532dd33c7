/**
 * Where a token shared by several processes lives, and the lease that lets exactly one of them
 * refresh it: the others wait for the stored result instead of spending the (rotating) refresh
 * token a second time, which a server that detects refresh token reuse answers by revoking the
 * whole grant (OAuth 2.0 Security BCP, RFC 9700 §4.14.2).
 *
 * @module
 */
import { sha1 } from '@noble/hashes/legacy.js'
import { bytesToHex } from '@noble/hashes/utils.js'
import { invalidType, invalidValue, isRecord } from './args.js'
import { systemClock, type Clock } from './clock.js'

/**
 * A store of tokens by key, with a lease per key (a lock with a TTL and a fencing token).
 *
 * - `get`/`set`: the stored token, as the JSON-safe hash `AccessToken` writes (its
 *   `access_token`, `refresh_token`, `expires_at` and other response fields).
 * - `acquire(key, ttlMs)`: takes the key's lease for `ttlMs` if nobody holds it, and returns its
 *   fencing token: a number that grows with every lease granted for the key. A holder that dies
 *   keeps the lease until the TTL runs out; then another may take it.
 * - `set(key, hash, fence)`: with a fence, writes only if no newer lease has been granted since
 *   (a holder whose lease ran out and was taken over cannot overwrite the newer holder's token);
 *   without one, always (to save a token after signing in).
 * - `release(key, fence)`: gives the lease back, if it is still that one.
 *
 * {@link MemoryTokenStore} (one process) and {@link RedisTokenStore} (many) implement it.
 */
export interface TokenStore {
  /** The token stored under `key`, if any. */
  get(key: string): Promise<Record<string, unknown> | undefined>
  /**
   * Stores `hash` under `key`; with `fence`, only if `fence` is the newest lease granted for the
   * key. Resolves whether it stored.
   */
  set(key: string, hash: Readonly<Record<string, unknown>>, fence?: number): Promise<boolean>
  /** Takes the lease of `key` for `ttlMs` milliseconds: its fencing token, or `undefined` if held. */
  acquire(key: string, ttlMs: number): Promise<number | undefined>
  /** Gives the lease of `key` back if `fence` still holds it. */
  release(key: string, fence: number): Promise<void>
}

/**
 * How an {@link AccessToken} shares its refreshes through a {@link TokenStore} (the `store`
 * option of the token).
 */
export interface TokenStoreOptions {
  /** The store. */
  readonly store: TokenStore
  /** The key of this token in the store (one per user and resource, for instance). */
  readonly key: string
  /**
   * How long the lease of a refresh lasts, milliseconds: longer than a refresh takes (token
   * endpoint round trip, `onRefresh`), or a slow holder is taken over. @default 10000
   */
  readonly leaseTtlMs?: number | undefined
  /**
   * How long a token waits for another process's refresh before giving up with
   * `token_store_timeout`, milliseconds. @default 3 × leaseTtlMs
   */
  readonly waitTimeoutMs?: number | undefined
  /** How often a waiting token reads the store, milliseconds. @default 50 */
  readonly pollIntervalMs?: number | undefined
}

/** The defaults of {@link TokenStoreOptions}. */
export const TOKEN_STORE_DEFAULTS = Object.freeze({ leaseTtlMs: 10_000, pollIntervalMs: 50 })

/** A positive integer of milliseconds, or a TypeError naming `name`. */
function positiveMs(name: string, value: unknown): void {
  if (value !== undefined && !(typeof value === 'number' && Number.isInteger(value) && value > 0)) {
    throw invalidType(name, 'a positive integer number of milliseconds', value)
  }
}

/**
 * Checks the `store` option of a token; resolves the defaults.
 *
 * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` naming the option.
 * @internal
 */
export function checkTokenStoreOptions(
  value: unknown,
): Required<{ [K in keyof TokenStoreOptions]: NonNullable<TokenStoreOptions[K]> }> {
  if (!isRecord(value)) throw invalidType('opts.store', 'an object with store and key', value)
  const { store, key, leaseTtlMs, waitTimeoutMs, pollIntervalMs } = value
  for (const name of Object.keys(value)) {
    if (!['store', 'key', 'leaseTtlMs', 'waitTimeoutMs', 'pollIntervalMs'].includes(name)) {
      throw invalidValue(
        `opts.store.${name}`,
        'is not understood: opts.store takes store, key, leaseTtlMs, waitTimeoutMs, pollIntervalMs',
      )
    }
  }
  const methods = ['get', 'set', 'acquire', 'release']
  if (
    typeof store !== 'object' ||
    store === null ||
    !methods.every((m) => typeof (store as Record<string, unknown>)[m] === 'function')
  ) {
    throw invalidType('opts.store.store', 'a TokenStore (get, set, acquire, release)', store)
  }
  if (typeof key !== 'string' || key === '') {
    throw invalidType('opts.store.key', 'a non-empty string', key)
  }
  positiveMs('opts.store.leaseTtlMs', leaseTtlMs)
  positiveMs('opts.store.waitTimeoutMs', waitTimeoutMs)
  positiveMs('opts.store.pollIntervalMs', pollIntervalMs)
  const lease = (leaseTtlMs as number | undefined) ?? TOKEN_STORE_DEFAULTS.leaseTtlMs
  return {
    store: store as TokenStore,
    key,
    leaseTtlMs: lease,
    waitTimeoutMs: (waitTimeoutMs as number | undefined) ?? 3 * lease,
    pollIntervalMs: (pollIntervalMs as number | undefined) ?? TOKEN_STORE_DEFAULTS.pollIntervalMs,
  }
}

/**
 * A {@link TokenStore} in this process's memory: the tokens of one process (its concurrent
 * requests already share one refresh), for tests, and as the baseline of {@link RedisTokenStore}.
 * Lease TTLs run on the given clock.
 *
 * @example
 * ```ts
 * import { AccessToken, MemoryTokenStore, type Client } from '@gatehouse/oauth2'
 * let client!: Client
 * const store = new MemoryTokenStore()
 * const token = await AccessToken.fromStore(client, { store, key: 'user-1' })
 * ```
 */
export class MemoryTokenStore implements TokenStore {
  readonly #tokens = new Map<string, string>()
  readonly #leases = new Map<string, { fence: number; expiresAt: number }>()
  readonly #fences = new Map<string, number>()
  readonly #clock: Clock

  /** @param clock Time source of the lease TTLs. @default the system clock */
  constructor(clock: Clock = systemClock) {
    this.#clock = clock
  }

  /** {@inheritDoc TokenStore.get} */
  get(key: string): Promise<Record<string, unknown> | undefined> {
    const json = this.#tokens.get(key)
    return Promise.resolve(
      json === undefined ? undefined : (JSON.parse(json) as Record<string, unknown>),
    )
  }

  /** {@inheritDoc TokenStore.set} */
  set(key: string, hash: Readonly<Record<string, unknown>>, fence?: number): Promise<boolean> {
    if (fence !== undefined && fence !== (this.#fences.get(key) ?? 0)) return Promise.resolve(false)
    // Stored as JSON, as Redis stores it: no object is shared between tokens.
    this.#tokens.set(key, JSON.stringify(hash))
    return Promise.resolve(true)
  }

  /** {@inheritDoc TokenStore.acquire} */
  acquire(key: string, ttlMs: number): Promise<number | undefined> {
    const now = this.#clock.now()
    const held = this.#leases.get(key)
    if (held !== undefined && held.expiresAt > now) return Promise.resolve(undefined)
    const fence = (this.#fences.get(key) ?? 0) + 1
    this.#fences.set(key, fence)
    this.#leases.set(key, { fence, expiresAt: now + ttlMs })
    return Promise.resolve(fence)
  }

  /** {@inheritDoc TokenStore.release} */
  release(key: string, fence: number): Promise<void> {
    if (this.#leases.get(key)?.fence === fence) this.#leases.delete(key)
    return Promise.resolve()
  }
}

/**
 * The part of an ioredis client (`Redis` or `Cluster`) {@link RedisTokenStore} uses: `get`,
 * `evalsha` and `eval`. ioredis is an optional peer dependency of this package: install it to use
 * the store; nothing is imported from it.
 */
export interface RedisClientLike {
  /** `GET key`: the stored token's JSON. */
  get(key: string): Promise<string | null>
  /** `EVALSHA sha1 numKeys keys… args…`: a cached Lua script (lease, fenced write, release). */
  evalsha(sha1: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>
  /** `EVAL script numKeys keys… args…`: the same, when Redis answers `NOSCRIPT`. */
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>
}

/** A Lua script and its SHA-1 (for `EVALSHA`). */
interface Script {
  readonly source: string
  readonly sha1: string
}

/**
 * Takes the lease: `SET lease <fence> NX PX <ttl>` with the next fencing token, counted only when
 * the lease is granted (so a waiter's attempts never make the holder's fence stale).
 */
const ACQUIRE = `local fence = (tonumber(redis.call('GET', KEYS[2])) or 0) + 1
if redis.call('SET', KEYS[1], fence, 'NX', 'PX', ARGV[1]) then
  redis.call('SET', KEYS[2], fence)
  return fence
end
return false`

/** Writes the token when no fence is given, or when the fence is the newest granted. */
const SET = `if ARGV[2] == '' or (tonumber(redis.call('GET', KEYS[2])) or 0) == tonumber(ARGV[2]) then
  redis.call('SET', KEYS[1], ARGV[1])
  return 1
end
return 0`

/** Deletes the lease if the fence still holds it. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
return 0`

/** Redis answered `EVALSHA` with NOSCRIPT: the script is not cached there (yet, or any more). */
function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT')
}

/**
 * A {@link TokenStore} on Redis, through an ioredis client (an optional peer dependency): the
 * token of every process sharing `key` in one place, and its refresh done once across them.
 *
 * Keys (`keyPrefix` + `{key}`, the braces a Redis Cluster hash tag, so the three share a slot):
 * the token as JSON, `…:lease` (the lease: `SET NX PX` holding its fencing token) and `…:fence`
 * (the last fencing token granted). Each operation is one round trip: `GET`, or a Lua script run
 * with `EVALSHA` (falling back to `EVAL` once on `NOSCRIPT`).
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis'
 * import { AccessToken, RedisTokenStore, type Client } from '@gatehouse/oauth2'
 * let client!: Client
 * const store = new RedisTokenStore(new Redis(), { keyPrefix: 'myapp:tokens:' })
 * const token = await AccessToken.fromStore(client, { store, key: 'user-1' })
 * const me = await token.fetch('https://api.example.com/me') // one refresh across processes
 * ```
 */
export class RedisTokenStore implements TokenStore {
  readonly #redis: RedisClientLike
  readonly #prefix: string
  readonly #scripts: { acquire: Script; set: Script; release: Script }

  /**
   * @param redis An ioredis `Redis` (or `Cluster`) client; the store never closes it.
   * @param options `keyPrefix` put before every key. @default 'oauth2:token:'
   * @throws {TypeError} `ERR_INVALID_ARG_TYPE` when `redis` lacks `get`, `evalsha` or `eval`.
   */
  constructor(redis: RedisClientLike, options: { readonly keyPrefix?: string } = {}) {
    if (
      typeof redis !== 'object' ||
      ['get', 'evalsha', 'eval'].some(
        (m) => typeof (redis as unknown as Record<string, unknown>)[m] !== 'function',
      )
    ) {
      throw invalidType('redis', 'an ioredis client (get, evalsha, eval)', redis)
    }
    if (!isRecord(options)) throw invalidType('options', 'an object', options)
    if (options.keyPrefix !== undefined && typeof options.keyPrefix !== 'string') {
      throw invalidType('options.keyPrefix', 'a string', options.keyPrefix)
    }
    this.#redis = redis
    this.#prefix = options.keyPrefix ?? 'oauth2:token:'
    this.#scripts = { acquire: script(ACQUIRE), set: script(SET), release: script(RELEASE) }
  }

  /** The token, lease and fence keys of `key`. */
  #keys(key: string): [string, string, string] {
    const base = `${this.#prefix}{${key}}`
    return [base, `${base}:lease`, `${base}:fence`]
  }

  async #run(which: Script, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await this.#redis.evalsha(which.sha1, keys.length, ...keys, ...args)
    } catch (error) {
      if (!isNoScript(error)) throw error
      return this.#redis.eval(which.source, keys.length, ...keys, ...args)
    }
  }

  /** {@inheritDoc TokenStore.get} */
  async get(key: string): Promise<Record<string, unknown> | undefined> {
    const json = await this.#redis.get(this.#keys(key)[0])
    if (json === null) return undefined
    const parsed: unknown = JSON.parse(json)
    return isRecord(parsed) ? parsed : undefined
  }

  /** {@inheritDoc TokenStore.set} */
  async set(
    key: string,
    hash: Readonly<Record<string, unknown>>,
    fence?: number,
  ): Promise<boolean> {
    const [token, , fences] = this.#keys(key)
    const stored = await this.#run(
      this.#scripts.set,
      [token, fences],
      [JSON.stringify(hash), fence === undefined ? '' : fence],
    )
    return stored === 1
  }

  /** {@inheritDoc TokenStore.acquire} */
  async acquire(key: string, ttlMs: number): Promise<number | undefined> {
    const [, lease, fences] = this.#keys(key)
    const fence = await this.#run(this.#scripts.acquire, [lease, fences], [ttlMs])
    return typeof fence === 'number' ? fence : undefined
  }

  /** {@inheritDoc TokenStore.release} */
  async release(key: string, fence: number): Promise<void> {
    const [, lease] = this.#keys(key)
    await this.#run(this.#scripts.release, [lease], [fence])
  }
}

/** A script with its hex SHA-1, the name `EVALSHA` knows it by (not a security use of SHA-1). */
function script(source: string): Script {
  return { source, sha1: bytesToHex(sha1(new TextEncoder().encode(source))) }
}
