/**
 * Upstream's per-key `INCRBY` + `EXPIRE` as one Lua script, run by its SHA (`EVALSHA`), with the
 * fallback to `EVAL` that Redis' script cache requires (in `batch.ts`).
 *
 * @module
 */
import { createHash } from 'node:crypto'

/**
 * Upstream's `INCRBY key addend` + `EXPIRE key ttl` pair (`fixed_cache_impl.go`) for every op of
 * one key in an event-loop turn, as one server-side step: `KEYS[1]` gets `INCRBY ARGV[1]` (the
 * ops' addends summed) then `EXPIRE ARGV[2]` (the last op's TTL); the reply is a one-element
 * array holding the INCRBY's reply (the value after the last op) or its own error, after which the
 * EXPIRE still runs, as in upstream's pipeline. Nothing else runs between a script's commands, so
 * the key ends with the value and TTL that one `INCRBY` + `EXPIRE` per op, in order, would leave,
 * and `batch.ts` gives each op the value its own `INCRBY` would have returned (the total less the
 * addends of the ops after it). A refused INCRBY (a key that holds no integer) would refuse every
 * op of the key alike. One command of three arguments per key and turn, whatever the number of
 * ops: valid on a cluster node and behind a proxy that routes scripts by their first key.
 * Counters stay below 2^53 (`COUNTER_CEILING`), so the Lua numbers that carry the replies are
 * exact.
 */
export const INCREMENT_SCRIPT = [
  // pcall: a refused INCRBY answers with Redis' own error text, and the EXPIRE still runs.
  "local after = redis.pcall('INCRBY', KEYS[1], ARGV[1])",
  "redis.call('EXPIRE', KEYS[1], ARGV[2])",
  'return { after }',
].join('\n')

/** SHA-1 of {@link INCREMENT_SCRIPT}, for `EVALSHA`. */
export const INCREMENT_SCRIPT_SHA = createHash('sha1').update(INCREMENT_SCRIPT).digest('hex')

/**
 * One sliding-window counter's store step (issue 15) for every op of an event-loop turn, as one
 * server-side step: `KEYS[1]` (the current window's counter) gets `INCRBY ARGV[1]` (the ops'
 * addends summed) then `EXPIRE ARGV[2]` (the last op's TTL), exactly as {@link INCREMENT_SCRIPT};
 * then `KEYS[2]` (the previous window's counter, in the same Cluster slot through the keys' common
 * hash tag) is read with `GET`, which creates nothing and leaves its TTL (set when it was the
 * current window's) alone. The reply is the INCRBY's reply (or its own error) and the previous
 * count (`nil` when missing; the error Redis' `INCRBY` would give when it holds no integer);
 * `batch.ts` gives each op the value its own `INCRBY` would have returned, as for the fixed
 * window.
 */
export const SLIDING_WINDOW_SCRIPT = [
  "local after = redis.pcall('INCRBY', KEYS[1], ARGV[1])",
  "redis.call('EXPIRE', KEYS[1], ARGV[2])",
  "local previous = redis.pcall('GET', KEYS[2])",
  "if type(previous) == 'string' and not string.match(previous, '^%-?%d+$') then",
  "  previous = redis.error_reply('ERR value is not an integer or out of range')",
  'end',
  'return { after, previous }',
].join('\n')

/** SHA-1 of {@link SLIDING_WINDOW_SCRIPT}, for `EVALSHA`. */
export const SLIDING_WINDOW_SCRIPT_SHA = createHash('sha1')
  .update(SLIDING_WINDOW_SCRIPT)
  .digest('hex')

/** Whether Redis refused an `EVALSHA` because its script cache does not hold the script. */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT')
}

/**
 * The token bucket (`limiter/token-bucket.ts`'s `takeTokens`, the same double operations in the
 * same order) on one bucket, for each of its ops of an event-loop turn, in order, as one
 * server-side step. The bucket is a hash at `KEYS[1]`: `t` (tokens, a double) and `ts` (last
 * refill, epoch ms of the service's clock); a missing bucket is full. `KEYS[i]` (the same key,
 * repeated) has 6 `ARGV`s: now (ms), requests_per_unit, unit (ms), burst, cost, TTL (ms). Each
 * reply is `{allowed (0/1), whole tokens left, wait ms}`.
 */
export const TOKEN_BUCKET_SCRIPT = [
  'local out = {}',
  'local s = redis.call("HMGET", KEYS[1], "t", "ts")',
  'local tokens = tonumber(s[1])',
  'local ts = tonumber(s[2])',
  'local ttl = 0',
  'for i = 1, #KEYS do',
  '  local j = (i - 1) * 6',
  '  local now = tonumber(ARGV[j + 1])',
  '  local rpu = tonumber(ARGV[j + 2])',
  '  local unit = tonumber(ARGV[j + 3])',
  '  local burst = tonumber(ARGV[j + 4])',
  '  local cost = tonumber(ARGV[j + 5])',
  '  ttl = tonumber(ARGV[j + 6])',
  '  if tokens == nil or ts == nil then',
  '    tokens = burst',
  '    ts = now',
  '  end',
  '  if now > ts then',
  '    tokens = math.min(burst, tokens + ((now - ts) * rpu) / unit)',
  '    ts = now',
  '  end',
  '  if tokens > burst then tokens = burst end',
  '  local allowed = 0',
  '  local missing',
  '  if tokens >= cost then',
  '    tokens = tokens - cost',
  '    allowed = 1',
  '    missing = burst - tokens',
  '  elseif cost > burst then',
  '    missing = burst - tokens',
  '  else',
  '    missing = cost - tokens',
  '  end',
  `  local wait = math.min(${String(2 ** 52)}, math.ceil((missing * unit) / rpu))`,
  '  out[i] = {allowed, math.floor(tokens), wait}',
  'end',
  // tostring would keep 14 digits only; %.17g gives the double back exactly.
  'redis.call("HSET", KEYS[1], "t", string.format("%.17g", tokens), "ts", string.format("%.17g", ts))',
  'redis.call("PEXPIRE", KEYS[1], ttl)',
  'return out',
].join('\n')

/** SHA-1 of {@link TOKEN_BUCKET_SCRIPT}, for `EVALSHA`. */
export const TOKEN_BUCKET_SCRIPT_SHA = createHash('sha1').update(TOKEN_BUCKET_SCRIPT).digest('hex')
