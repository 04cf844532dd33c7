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
import { percentile } from '../lib/report.js'

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

async function runFor(
  ms: number,
  record: boolean,
): Promise<{ count: number; latencies: number[] }> {
  const latencies: number[] = []
  let count = 0
  const end = performance.now() + ms
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const start = performance.now()
      await redis.pipeline().incrby(key, 1).expire(key, 3600).exec()
      if (record) latencies.push(performance.now() - start)
      count++
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return { count, latencies }
}

await runFor(500, false) // warm-up
const start = performance.now()
const { count, latencies } = await runFor(seconds * 1000, true)
const elapsed = (performance.now() - start) / 1000
console.log(
  JSON.stringify({
    rps: count / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  }),
)
redis.disconnect()
