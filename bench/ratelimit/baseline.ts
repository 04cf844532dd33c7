/**
 * The physical baseline: raw ioredis `pipeline()`s of `INCRBY` + `EXPIRE`, one per decision,
 * at a fixed concurrency, without the service. Prints one JSON line:
 * `{"rps":…,"p50":…,"p99":…}` (latencies in milliseconds).
 *
 * Usage: tsx bench/ratelimit/baseline.ts <redis port> <concurrency> <seconds> <key>
 */
import { Redis } from 'ioredis'
import { percentile } from '../lib/report.js'

const [portText = '6379', concurrencyText = '1', secondsText = '10', key = 'bench_key'] =
  process.argv.slice(2)
const concurrency = Number(concurrencyText)
const seconds = Number(secondsText)

const redis = new Redis({ host: '127.0.0.1', port: Number(portText) })
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
