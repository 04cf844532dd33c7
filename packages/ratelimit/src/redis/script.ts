/**
 * Upstream's per-key `INCRBY` + `EXPIRE` as one Lua script, run by its SHA (`EVALSHA`), with the
 * fallback to `EVAL` that Redis' script cache requires.
 *
 * @module
 */
import { createHash } from 'node:crypto'
import type { Cluster, Redis } from 'ioredis'
import type { IncrementOp } from '../limiter/cache.js'

/**
 * Upstream's `INCRBY key addend` + `EXPIRE key ttl` pair (`fixed_cache_impl.go`) as one
 * server-side step: the same key, the same TTL (set on every hit, so it is refreshed as
 * upstream's is) and the same reply (the value after the increment, or the INCRBY's error). One
 * command per descriptor instead of two halves the work of the client and of Redis per decision;
 * a single key per call keeps it valid in Redis Cluster. Counters stay below 2^53
 * (`COUNTER_CEILING`), so the Lua number that carries the reply is exact.
 */
export const INCREMENT_SCRIPT = [
  // pcall: a refused INCRBY (a key that holds no integer) answers with Redis' own error text, as
  // upstream's pipeline does, and the EXPIRE still runs, as upstream's does.
  "local n = redis.pcall('INCRBY', KEYS[1], ARGV[1])",
  "redis.call('EXPIRE', KEYS[1], ARGV[2])",
  'return n',
].join('\n')

/** SHA-1 of {@link INCREMENT_SCRIPT}, for `EVALSHA`. */
export const INCREMENT_SCRIPT_SHA = createHash('sha1').update(INCREMENT_SCRIPT).digest('hex')

/**
 * {@link INCREMENT_SCRIPT} for many keys at once, in order: `KEYS[i]` gets `INCRBY ARGV[2i-1]`
 * then `EXPIRE ARGV[2i]`; the reply is the array of the INCRBY replies (an INCRBY's error in its
 * place). Used for all the increments of one event-loop turn on one connection (`single`,
 * `sentinel`): one command per turn instead of one per key. Not for Cluster, whose keys of one
 * turn live on different slots.
 */
export const INCREMENT_MANY_SCRIPT = [
  'local out = {}',
  'for i = 1, #KEYS do',
  "  out[i] = redis.pcall('INCRBY', KEYS[i], ARGV[2 * i - 1])",
  "  redis.call('EXPIRE', KEYS[i], ARGV[2 * i])",
  'end',
  'return out',
].join('\n')

/** SHA-1 of {@link INCREMENT_MANY_SCRIPT}, for `EVALSHA`. */
export const INCREMENT_MANY_SCRIPT_SHA = createHash('sha1')
  .update(INCREMENT_MANY_SCRIPT)
  .digest('hex')

/** Whether Redis refused an `EVALSHA` because its script cache does not hold the script. */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT')
}

/** Sends {@link INCREMENT_SCRIPT} itself for one op (`EVAL`), which also caches it again. */
export function evalIncrement(client: Redis | Cluster, op: IncrementOp): Promise<unknown> {
  return client.eval(INCREMENT_SCRIPT, 1, op.key, op.addend, op.expireSeconds)
}

/**
 * Runs {@link INCREMENT_SCRIPT} for one op by its SHA; when the server does not know it (a fresh
 * server, a restart, `SCRIPT FLUSH`, a failover to a replica that never ran it, another cluster
 * node) sends the script itself. NOSCRIPT means nothing ran, so the retry cannot count twice.
 *
 * @returns The counter after the increment.
 * @throws The client's error (connection, timeout, or Redis' reply error).
 */
export function incrementByScript(client: Redis | Cluster, op: IncrementOp): Promise<unknown> {
  return client
    .evalsha(INCREMENT_SCRIPT_SHA, 1, op.key, op.addend, op.expireSeconds)
    .catch((error: unknown) => {
      if (!isNoScript(error)) throw error
      return evalIncrement(client, op)
    })
}
