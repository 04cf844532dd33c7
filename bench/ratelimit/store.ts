/**
 * Where the in-process time of a decision goes: the codec, the service and the fixed-window cache
 * with the real `RedisCounterStore` (ioredis) against the same with a minimal RESP pipeline
 * written for this measurement (one write per event-loop turn, integer replies parsed by hand; no
 * reconnection, auth, TLS or timeouts, so it is no replacement as it stands). 200 decisions in
 * flight against an own redis-server; CPU time of this process per decision (user + system) and
 * minor GCs per 10k decisions, contenders alternating.
 *
 * Usage (from the repository root): npx tsx bench/ratelimit/store.ts [--seconds 3] [--rounds 3]
 */
import { startRedisServer } from '@gatehouse/testing'
import { connect, type Socket } from 'node:net'
import { PerformanceObserver, constants as perf } from 'node:perf_hooks'
import { pino } from 'pino'
import { systemClock } from '#internal/ratelimit/clock.js'
import type { CounterStore, IncrementOp } from '#internal/ratelimit/limiter/cache.js'
import { StoreRateLimitCache } from '#internal/ratelimit/limiter/store-cache.js'
import {
  decodeRateLimitRequest,
  encodeRateLimitRequest,
} from '#internal/ratelimit/protocol/protobuf/request.js'
import { encodeRateLimitResponse } from '#internal/ratelimit/protocol/protobuf/response.js'
import { RedisCounterStore } from '#internal/ratelimit/redis/redis-store.js'
import { RateLimitService } from '#internal/ratelimit/service/service.js'
import { StatsManager } from '#internal/ratelimit/stats/manager.js'
import { StatsStore } from '#internal/ratelimit/stats/store.js'
import { machineInfo } from '../lib/report.js'

/** INCRBY + EXPIRE pairs of a turn in one write; each request gets its integer replies. */
class RawRespStore implements CounterStore {
  readonly #socket: Socket
  #out = ''
  #scheduled = false
  #buffer = ''
  readonly #waiting: {
    replies: number[]
    received: number
    resolve: (replies: number[]) => void
  }[] = []
  #head = 0

  constructor(port: number) {
    this.#socket = connect(port, '127.0.0.1')
    this.#socket.setNoDelay(true)
    this.#socket.setEncoding('latin1')
    this.#socket.on('data', (data: string) => {
      this.#read(data)
    })
  }

  ready(): Promise<void> {
    return new Promise((resolve) => {
      this.#socket.once('connect', () => {
        resolve()
      })
    })
  }

  increment(ops: readonly IncrementOp[]): Promise<number[]> {
    for (const op of ops) {
      const key = `$${String(Buffer.byteLength(op.key))}\r\n${op.key}\r\n`
      const addend = String(op.addend)
      const ttl = String(op.expireSeconds)
      this.#out += `*3\r\n$6\r\nINCRBY\r\n${key}$${String(addend.length)}\r\n${addend}\r\n`
      this.#out += `*3\r\n$6\r\nEXPIRE\r\n${key}$${String(ttl.length)}\r\n${ttl}\r\n`
    }
    if (!this.#scheduled) {
      this.#scheduled = true
      setImmediate(() => {
        this.#scheduled = false
        this.#socket.write(this.#out)
        this.#out = ''
      })
    }
    return new Promise((resolve) => {
      this.#waiting.push({ replies: new Array<number>(ops.length * 2), received: 0, resolve })
    })
  }

  #read(data: string): void {
    this.#buffer += data
    let pos = 0
    for (
      let end = this.#buffer.indexOf('\r\n');
      end >= 0;
      end = this.#buffer.indexOf('\r\n', pos)
    ) {
      const waiter = this.#waiting[this.#head]
      if (waiter === undefined) throw new Error('a reply nobody waits for')
      waiter.replies[waiter.received++] = Number(this.#buffer.slice(pos + 1, end))
      pos = end + 2
      if (waiter.received === waiter.replies.length) {
        this.#head++
        waiter.resolve(waiter.replies)
      }
    }
    this.#buffer = this.#buffer.slice(pos)
    if (this.#head > 1024) {
      this.#waiting.splice(0, this.#head)
      this.#head = 0
    }
  }

  get(): Promise<number[]> {
    return Promise.resolve([])
  }

  close(): Promise<void> {
    this.#socket.destroy()
    return Promise.resolve()
  }
}

const options = { seconds: 3, rounds: 3 }
const argv = process.argv.slice(2)
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--seconds') options.seconds = Number(argv[++i])
  else if (argv[i] === '--rounds') options.rounds = Number(argv[++i])
  else throw new Error(`unknown argument ${String(argv[i])}`)
}

let scavenges = 0
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const detail = (entry as unknown as { detail?: { kind?: number } }).detail
    if (detail?.kind === perf.NODE_PERFORMANCE_GC_MINOR) {
      scavenges++
    }
  }
}).observe({ entryTypes: ['gc'] })

const logger = pino({ level: 'silent' })
const bytes = encodeRateLimitRequest({
  domain: 'bench',
  descriptors: [{ entries: [{ key: 'client_id', value: 'bench-client' }] }],
  hitsAddend: 0,
})
const CONFIG = `domain: bench
descriptors:
  - key: client_id
    rate_limit: { unit: hour, requests_per_unit: 4000000000 }
`

async function measure(store: CounterStore, ms: number) {
  const cache = new StoreRateLimitCache({ store, clock: systemClock })
  const service = new RateLimitService({
    cache,
    stats: new StatsManager(new StatsStore()),
    logger,
  })
  service.loadConfig([{ name: 'bench.yaml', content: CONFIG }])
  const run = async (duration: number) => {
    let count = 0
    const end = performance.now() + duration
    const worker = async (): Promise<void> => {
      while (performance.now() < end) {
        const response = await service.shouldRateLimit(decodeRateLimitRequest(bytes))
        encodeRateLimitResponse(response, true)
        count++
      }
    }
    scavenges = 0
    const cpu = process.cpuUsage()
    const start = performance.now()
    await Promise.all(Array.from({ length: 200 }, worker))
    const used = process.cpuUsage(cpu)
    return {
      cpuUs: (used.user + used.system) / count,
      perSecond: (count / (performance.now() - start)) * 1000,
      scavengesPer10k: (scavenges / count) * 10_000,
    }
  }
  await run(500) // warm-up
  return run(ms)
}

const redis = await startRedisServer()
try {
  console.log(
    `Machine: ${machineInfo()}; ${String(options.rounds)} rounds of ${String(options.seconds)} s`,
  )
  console.log('')
  console.log('| round | store | CPU µs / decision | decisions/s | minor GCs / 10k |')
  console.log('|---|---|---:|---:|---:|')
  for (let round = 1; round <= options.rounds; round++) {
    const stores: [string, () => Promise<CounterStore>][] = [
      [
        'RedisCounterStore (ioredis)',
        async () => {
          const store = new RedisCounterStore({
            main: {
              socketType: 'tcp',
              type: 'single',
              url: `127.0.0.1:${String(redis.port)}`,
              poolSize: 1,
              auth: '',
              sentinelAuth: '',
              tls: false,
              tlsClientCert: '',
              tlsClientKey: '',
              tlsCaCert: '',
              tlsSkipHostnameVerification: false,
              timeoutMs: 10_000,
              poolOnEmptyBehavior: 'CREATE',
              poolOnEmptyWaitMs: 1000,
              pipelineWindowMs: 0,
              clusterPipelineParallelism: 1,
              closeConnectionOnReadonlyError: false,
            },
            logger,
          })
          await store.ready()
          return store
        },
      ],
      [
        'minimal RESP pipeline',
        async () => {
          const store = new RawRespStore(redis.port)
          await store.ready()
          return store
        },
      ],
    ]
    for (const [name, open] of stores) {
      const store = await open()
      const r = await measure(store, options.seconds * 1000)
      await store.close()
      console.log(
        `| ${String(round)} | ${name} | ${r.cpuUs.toFixed(1)} | ${r.perSecond.toFixed(0)} | ${r.scavengesPer10k.toFixed(1)} |`,
      )
    }
  }
} finally {
  await redis.stop()
}
