/**
 * The physical baseline: raw ioredis `pipeline()`s of `INCRBY` + `EXPIRE`, one per decision,
 * at a fixed concurrency, without the service. Prints one JSON line:
 * `{"rps":…,"p50":…,"p99":…}` (latencies in milliseconds).
 *
 * Usage: tsx bench/ratelimit/baseline.ts <single|cluster> <host:port[,host:port…]> <concurrency>
 *   <seconds> <key>
 *
 * `single` pipelines on one connection to the first address; `cluster` uses an ioredis `Cluster`
 * on the nodes (each pipeline holds one key, so it goes to that key's node).
 */
import { Cluster, Redis } from 'ioredis'
import { closedLoop } from '../lib/closed-loop.js'

const [
  mode = 'single',
  addresses = '127.0.0.1:6379',
  concurrencyText = '1',
  secondsText = '10',
  key = 'bench_key',
] = process.argv.slice(2)
const concurrency = Number(concurrencyText)
const seconds = Number(secondsText)
const nodes = addresses.split(',').map((address) => {
  const [host = '127.0.0.1', port = '6379'] = address.split(':')
  return { host, port: Number(port) }
})

const redis = mode === 'cluster' ? new Cluster(nodes) : new Redis(nodes[0] ?? {})
await redis.ping()

console.log(
  JSON.stringify(
    await closedLoop(concurrency, seconds, () =>
      redis.pipeline().incrby(key, 1).expire(key, 3600).exec(),
    ),
  ),
)
redis.disconnect()
