/**
 * Upstream's per-key `INCRBY` + `EXPIRE` as one Lua script, run by its SHA (`EVALSHA`), with the
 * fallback to `EVAL` that Redis' script cache requires (in `batch.ts`).
 *
 * @module
 */
import { createHash } from 'node:crypto'

/**
 * Upstream's `INCRBY key addend` + `EXPIRE key ttl` pair (`fixed_cache_impl.go`) for each of
 * many keys, in order, as one server-side step: `KEYS[i]` gets `INCRBY ARGV[2i-1]` then
 * `EXPIRE ARGV[2i]`; the reply is the array of the INCRBY replies. The same keys, the same TTLs
 * (set on every hit, so refreshed as upstream's are) and the same replies (the value after the
 * increment, or the INCRBY's own error in its place, after which the EXPIRE still runs, as in
 * upstream's pipeline). Called with one key, repeated for each of its ops in an event-loop turn
 * (`batch.ts`): one command per key and turn instead of two per op, valid on a cluster node and
 * behind a proxy that routes scripts by their first key. Counters stay below 2^53
 * (`COUNTER_CEILING`), so the Lua numbers that carry the replies are exact.
 */
export const INCREMENT_SCRIPT = [
  'local out = {}',
  'for i = 1, #KEYS do',
  // pcall: a refused INCRBY (a key that holds no integer) answers with Redis' own error text.
  "  out[i] = redis.pcall('INCRBY', KEYS[i], ARGV[2 * i - 1])",
  "  redis.call('EXPIRE', KEYS[i], ARGV[2 * i])",
  'end',
  'return out',
].join('\n')

/** SHA-1 of {@link INCREMENT_SCRIPT}, for `EVALSHA`. */
export const INCREMENT_SCRIPT_SHA = createHash('sha1').update(INCREMENT_SCRIPT).digest('hex')

/** Whether Redis refused an `EVALSHA` because its script cache does not hold the script. */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT')
}
