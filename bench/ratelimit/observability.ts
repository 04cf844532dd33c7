/**
 * The in-process cost of observability: CPU time per gRPC decision (decode, decide on the memory
 * backend, encode, stats), with the defaults (statsd sink, tracing off) against Prometheus plus
 * tracing at `TRACING_SAMPLING_RATE=0.01` exporting to a local OTLP/HTTP sink, and against
 * tracing at 1.0 to show what a span costs. CPU time is less disturbed than throughput by the
 * other processes on a shared machine; the contenders alternate in rounds.
 *
 * Usage (from the repository root): npx tsx bench/ratelimit/observability.ts [--decisions 200000] [--rounds 5]
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { loadavg } from 'node:os'
import { pino } from 'pino'
import { buildRateLimitApp, type RateLimitApp } from '#internal/ratelimit/app.js'
import { createGrpcHandlers } from '#internal/ratelimit/server/grpc-handlers.js'
import { encodeRateLimitRequest } from '#internal/ratelimit/protocol/protobuf/request.js'
import { loadSettings } from '#internal/ratelimit/settings/settings.js'
import { machineInfo } from '../lib/report.js'

const args = process.argv.slice(2)
const arg = (name: string, fallback: number): number => {
  const at = args.indexOf(name)
  return at < 0 ? fallback : Number(args[at + 1])
}
const decisions = arg('--decisions', 200_000)
const rounds = arg('--rounds', 5)
const CONFIG =
  'domain: bench\ndescriptors:\n  - key: client_id\n    rate_limit: { unit: hour, requests_per_unit: 4000000000 }\n'
const request = encodeRateLimitRequest({
  domain: 'bench',
  descriptors: [{ entries: [{ key: 'client_id', value: 'bench-client' }] }],
  hitsAddend: 0,
})

const sink = createServer((req, res) => {
  req.resume()
  req.on('end', () => res.writeHead(200).end())
})
await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve))
const endpoint = `http://127.0.0.1:${String((sink.address() as AddressInfo).port)}`

function build(env: Record<string, string>): RateLimitApp {
  const app = buildRateLimitApp(
    loadSettings({ BACKEND_TYPE: 'memory', EXPIRATION_JITTER_MAX_SECONDS: '0', ...env }),
    { logger: pino({ level: 'silent' }) },
  )
  const loaded = app.service.loadConfig([{ name: 'bench.yaml', content: CONFIG }])
  if (!loaded.ok) throw loaded.error
  return app
}

const contenders = {
  defaults: build({}),
  'Prometheus + tracing 1%': build({
    USE_STATSD: 'false',
    USE_PROMETHEUS: 'true',
    TRACING_ENABLED: 'true',
    TRACING_SAMPLING_RATE: '0.01',
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
  }),
  Prometheus: build({ USE_STATSD: 'false', USE_PROMETHEUS: 'true' }),
  'tracing 1%': build({
    TRACING_ENABLED: 'true',
    TRACING_SAMPLING_RATE: '0.01',
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
  }),
  'tracing 100%': build({
    TRACING_ENABLED: 'true',
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
  }),
}

/** CPU microseconds per decision for `n` decisions, 200 in flight. */
async function measure(app: RateLimitApp, n: number): Promise<number> {
  const handlers = createGrpcHandlers({
    service: app.service,
    health: app.health,
    stats: app.stats,
    logger: app.logger,
    tracing: app.tracing,
  })
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      handlers.shouldRateLimit(request, true, (status) => {
        if (status === null) resolve()
        else reject(new Error(status.details))
      })
    })
  const start = process.cpuUsage()
  let left = n
  const lane = async (): Promise<void> => {
    while (left-- > 0) await one()
  }
  await Promise.all(Array.from({ length: 200 }, lane))
  app.flushStats() // the sink's share: one flush per round (every STATS_FLUSH_INTERVAL in service)
  const used = process.cpuUsage(start)
  return (used.user + used.system) / n
}

const results = new Map<string, number[]>()
for (const app of Object.values(contenders)) await measure(app, decisions / 4) // warm-up
for (let round = 0; round < rounds; round++) {
  for (const [name, app] of Object.entries(contenders)) {
    results.set(name, [...(results.get(name) ?? []), await measure(app, decisions)])
  }
}
const median = (xs: number[]): number =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
const base = median(results.get('defaults') ?? [])
console.log(
  `${machineInfo()}; load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ')}; ${String(rounds)} rounds of ${String(decisions)} decisions\n`,
)
console.log('| configuration | CPU µs per decision, median (min–max) | vs defaults |')
console.log('|---|---|---|')
for (const [name, xs] of results) {
  const m = median(xs)
  console.log(
    `| ${name} | ${m.toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}) | ${(((m - base) / base) * 100).toFixed(1)}% |`,
  )
}
await Promise.all(Object.values(contenders).map((app) => app.close(0)))
sink.close()
