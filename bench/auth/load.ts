/**
 * A small closed-loop load generator: `concurrency` workers each run `task` back to back until the
 * time is up; completions, failures and latencies are counted.
 */
import { Agent, request } from 'node:http'
import { startCpu, type CpuProbes } from '../lib/cpu.js'
import { percentile } from '../lib/report.js'

/** Outcome of one load phase. */
export interface LoadResult {
  /** Completed operations per second. */
  rate: number
  ok: number
  failed: number
  /** Latency percentiles in milliseconds. */
  p50: number
  p99: number
  /** First failure message, if any. */
  firstError?: string
  /** CPU milliseconds each probe used while `ok` was counted, when probes were given. */
  cpuMs?: Record<string, number>
}

/**
 * Runs `task(worker)` in `concurrency` parallel loops for `durationMs` after `warmupMs` (not
 * counted). With `cpu`, each probe's CPU time over the counted window is reported too.
 */
export async function runLoad(
  concurrency: number,
  durationMs: number,
  warmupMs: number,
  task: (worker: number) => Promise<void>,
  cpu?: CpuProbes,
): Promise<LoadResult> {
  const start = performance.now()
  const measureFrom = start + warmupMs
  const end = measureFrom + durationMs
  let cpuMs: Record<string, number> | undefined
  const timers: NodeJS.Timeout[] = []
  if (cpu) {
    timers.push(
      setTimeout(() => {
        const stop = startCpu(cpu)
        timers.push(setTimeout(() => (cpuMs = stop()), end - performance.now()))
      }, warmupMs),
    )
  }
  let ok = 0
  let failed = 0
  let firstError: string | undefined
  const latencies: number[] = []
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      while (performance.now() < end) {
        const t0 = performance.now()
        try {
          await task(worker)
          const t1 = performance.now()
          // Throughput counts completions inside the window, whenever they started.
          if (t1 >= measureFrom && t1 <= end) {
            ok++
            latencies.push(t1 - t0)
          }
        } catch (error) {
          failed++
          firstError ??= error instanceof Error ? error.message : String(error)
        }
      }
    }),
  )
  for (const timer of timers) clearTimeout(timer)
  return {
    rate: ok / (durationMs / 1000),
    ok,
    failed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    ...(firstError === undefined ? {} : { firstError }),
    ...(cpuMs === undefined ? {} : { cpuMs }),
  }
}

/** A keep-alive HTTP/1.1 JSON client for one origin. */
export class JsonClient {
  readonly #agent: Agent
  readonly #host: string
  readonly #port: number

  constructor(host: string, port: number, sockets: number) {
    this.#agent = new Agent({ keepAlive: true, maxSockets: sockets })
    this.#host = host
    this.#port = port
  }

  /**
   * Sends a request (with `extraHeaders`, e.g. a client key) and resolves with the parsed JSON
   * body.
   *
   * @throws {Error} On a non-2xx status (with the body) or a network error.
   */
  send<T>(
    method: string,
    path: string,
    body?: unknown,
    token?: string,
    extraHeaders: Readonly<Record<string, string>> = {},
  ): Promise<T> {
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const headers: Record<string, string> = { ...extraHeaders }
    if (payload !== undefined) headers['content-type'] = 'application/json'
    if (token !== undefined) headers.authorization = `Bearer ${token}`
    return new Promise<T>((resolve, reject) => {
      const req = request(
        { host: this.#host, port: this.#port, method, path, headers, agent: this.#agent },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (chunk: Buffer) => chunks.push(chunk))
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8')
            const status = res.statusCode ?? 0
            if (status < 200 || status >= 300) reject(new Error(`${String(status)} ${text}`))
            else resolve(JSON.parse(text) as T)
          })
          res.on('error', reject)
        },
      )
      req.on('error', reject)
      req.end(payload)
    })
  }

  close(): void {
    this.#agent.destroy()
  }
}

/**
 * `Promise.all(items.map(task))` with at most `limit` tasks in flight, for seeding through the
 * API: 50 bcrypt requests at once can outlast the server's request deadline on a loaded machine.
 */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  task: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array<R>(items.length)
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++
        results[i] = await task(items[i] as T, i)
      }
    }),
  )
  return results
}
