import { percentile } from './report.js'

/** Throughput and latency of a closed-loop run. */
export interface ClosedLoopSample {
  /** Operations per second. */
  readonly rps: number
  /** Median latency, milliseconds. */
  readonly p50: number
  /** 99th percentile latency, milliseconds. */
  readonly p99: number
}

/**
 * Runs `operation` in `concurrency` loops (each starts its next call when the last one is done)
 * for half a second of warm-up, then for `seconds`, and measures the second part.
 */
export async function closedLoop(
  concurrency: number,
  seconds: number,
  operation: () => Promise<unknown>,
): Promise<ClosedLoopSample> {
  const runFor = async (ms: number): Promise<{ count: number; latencies: number[] }> => {
    const latencies: number[] = []
    let count = 0
    const end = performance.now() + ms
    const worker = async (): Promise<void> => {
      while (performance.now() < end) {
        const start = performance.now()
        await operation()
        latencies.push(performance.now() - start)
        count++
      }
    }
    await Promise.all(Array.from({ length: concurrency }, worker))
    return { count, latencies }
  }
  await runFor(500) // warm-up
  const start = performance.now()
  const { count, latencies } = await runFor(seconds * 1000)
  const elapsed = (performance.now() - start) / 1000
  return { rps: count / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99) }
}
