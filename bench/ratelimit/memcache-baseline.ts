/**
 * The memcache backend's physical baseline: what the service's memcache store sends per
 * decision, done directly with the same client (memcache-client, same connection count):
 * `get key`, then `incr key 1` (`add` on a miss), at a fixed concurrency, without the service.
 * Prints one JSON line: `{"rps":…,"p50":…,"p99":…}` (latencies in milliseconds).
 *
 * Usage: tsx bench/ratelimit/memcache-baseline.ts <memcached host:port> <concurrency> <seconds> <key>
 */
import { MemcacheClient } from 'memcache-client'
import { closedLoop } from '../lib/closed-loop.js'

const [hostPort = '127.0.0.1:11211', concurrencyText = '1', secondsText = '10', key = 'bench_key'] =
  process.argv.slice(2)
const concurrency = Number(concurrencyText)
const seconds = Number(secondsText)

// MEMCACHE_MAX_IDLE_CONNS' default: two connections, as the service has per process.
const client = new MemcacheClient({
  server: { server: hostPort, maxConnections: 2 },
  noDelay: true,
  cmdTimeout: 500,
})
await client.version()

async function decision(): Promise<void> {
  await client.get([key])
  try {
    await client.incr(key, 1)
  } catch {
    await client.add(key, '1', { lifetime: 3600 }).catch(() => client.incr(key, 1))
  }
}

console.log(JSON.stringify(await closedLoop(concurrency, seconds, decision)))
client.shutdown()
