/**
 * Benchmark of @gatehouse/ratelimit with the Redis backend: decisions/s and p50/p99 latency over
 * gRPC (driven by h2load) and over HTTP `/json` (driven by wrk) at several concurrencies, side by
 * side with the physical baseline (raw ioredis pipelines of INCRBY+EXPIRE, `baseline.ts`), all
 * against one own redis-server in the same run.
 *
 * Usage (from the repository root, after `npx tsc -b packages/ratelimit`):
 *   npx tsx bench/ratelimit/run.ts [--seconds 10] [--slices 5] [--concurrency 1,50,200]
 *     [--label default] [--env KEY=VALUE]... [--write]
 *
 * `--observability` also runs a second service with Prometheus and tracing on (USE_PROMETHEUS,
 * TRACING_ENABLED, TRACING_SAMPLING_RATE=0.01, spans exported to a local OTLP/HTTP sink), measured
 * in the same slices, and reports its throughput against the defaults'.
 * `--env` passes settings to the service (e.g. `--env REDIS_POOL_SIZE=1`); `--write` stores the
 * markdown table in bench/RESULTS.md under "## ratelimit". `--main PATH` runs another build's
 * `dist/main.js` instead of this checkout's (to compare two commits in the same conditions).
 */
import { getFreePort, startProcess, startRedisServer, waitFor } from '@gatehouse/testing'
import { execFile } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { encodeRateLimitRequest } from '../../packages/ratelimit/src/protocol/protobuf/request.js'
import { machineInfo, percentile } from '../lib/report.js'

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../../', import.meta.url))

interface Options {
  seconds: number
  slices: number
  concurrency: number[]
  label: string
  env: Record<string, string>
  write: boolean
  main: string
  observability: boolean
}

function parseArgs(argv: string[]): Options {
  const options: Options = {
    seconds: 10,
    slices: 5,
    concurrency: [1, 50, 200],
    label: 'default',
    env: {},
    write: false,
    main: join(ROOT, 'packages/ratelimit/bin/gatehouse-ratelimit.js'),
    observability: false,
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const value = (): string => argv[++i] ?? ''
    if (arg === '--seconds') options.seconds = Number(value())
    else if (arg === '--slices') options.slices = Number(value())
    else if (arg === '--concurrency') options.concurrency = value().split(',').map(Number)
    else if (arg === '--label') options.label = value()
    else if (arg === '--write') options.write = true
    else if (arg === '--observability') options.observability = true
    else if (arg === '--main') options.main = value()
    else if (arg === '--env') {
      const [k = '', ...v] = value().split('=')
      options.env[k] = v.join('=')
    } else throw new Error(`unknown argument ${String(arg)}`)
  }
  return options
}

interface Sample {
  rps: number
  p50: number
  p99: number
}

const DOMAIN = 'bench'
const CONFIG = `domain: ${DOMAIN}
descriptors:
  - key: client_id
    rate_limit:
      unit: hour
      requests_per_unit: 4000000000
`
const REQUEST = {
  domain: DOMAIN,
  descriptors: [{ entries: [{ key: 'client_id', value: 'bench-client' }] }],
  hitsAddend: 0,
}

async function baseline(redisPort: number, c: number, seconds: number): Promise<Sample> {
  const { stdout } = await run(
    process.execPath,
    [
      '--import',
      'tsx',
      join(ROOT, 'bench/ratelimit/baseline.ts'),
      String(redisPort),
      String(c),
      String(seconds),
      'bench_client_id_bench-client_0',
    ],
    { cwd: ROOT },
  )
  return JSON.parse(stdout.trim()) as Sample
}

async function grpcLoad(port: number, c: number, seconds: number, dir: string): Promise<Sample> {
  const streams = Math.min(c, 10)
  const connections = Math.ceil(c / streams)
  const log = join(dir, `h2load-${String(c)}.log`)
  const { stdout } = await run('h2load', [
    '-D',
    String(seconds),
    '--warm-up-time',
    '1',
    '-c',
    String(connections),
    '-m',
    String(streams),
    '-t',
    '1',
    '-d',
    join(dir, 'request.grpc'),
    '-H',
    'content-type: application/grpc',
    '-H',
    'te: trailers',
    '--log-file',
    log,
    `http://127.0.0.1:${String(port)}/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`,
  ])
  const failed = /(\d+) failed/.exec(stdout)?.[1]
  if (failed !== '0') throw new Error(`h2load reported failures:\n${stdout}`)
  const rps = Number(/finished in [\d.]+s, ([\d.]+) req\/s/.exec(stdout)?.[1] ?? NaN)
  const times = readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .map((line) => Number(line.split('\t')[2]) / 1000)
  return { rps, p50: percentile(times, 50), p99: percentile(times, 99) }
}

function wrkMs(text: string, label: string): number {
  const match = new RegExp(`${label}%\\s+([\\d.]+)(us|ms|s)`).exec(text)
  if (match === null) return NaN
  const value = Number(match[1])
  return match[2] === 'us' ? value / 1000 : match[2] === 's' ? value * 1000 : value
}

async function httpLoad(port: number, c: number, seconds: number, dir: string): Promise<Sample> {
  const url = `http://127.0.0.1:${String(port)}/json`
  const script = join(dir, 'post.lua')
  const { stdout } = await run('wrk', [
    '-t1',
    `-c${String(c)}`,
    `-d${String(seconds)}s`,
    '--latency',
    '-s',
    script,
    url,
  ])
  if (/Non-2xx/.test(stdout)) throw new Error(`wrk saw errors:\n${stdout}`)
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1] ?? NaN),
    p50: wrkMs(stdout, '50'),
    p99: wrkMs(stdout, '99'),
  }
}

async function startService(
  redisPort: number,
  dir: string,
  env: Record<string, string>,
  main: string,
) {
  const [http, grpc, debug] = await Promise.all([getFreePort(), getFreePort(), getFreePort()])
  const service = await startProcess(process.execPath, [main], {
    env: {
      ...process.env,
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_URL: `127.0.0.1:${String(redisPort)}`,
      RUNTIME_ROOT: dir,
      RUNTIME_WATCH_ROOT: 'false',
      DISABLE_STATS: 'true',
      HOST: '127.0.0.1',
      PORT: String(http),
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: String(grpc),
      DEBUG_HOST: '127.0.0.1',
      DEBUG_PORT: String(debug),
      ...env,
    },
  })
  await waitFor(
    async () => (await fetch(`http://127.0.0.1:${String(http)}/healthcheck`)).status === 200,
    {
      what: `the service (${service.output()})`,
      timeout: 30_000,
    },
  )
  return { http, grpc, debug, service }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? NaN
}

function fmt(values: number[], digits = 0): string {
  const min = Math.min(...values)
  const max = Math.max(...values)
  return `${median(values).toFixed(digits)} (${min.toFixed(digits)}–${max.toFixed(digits)})`
}

/** A local OTLP/HTTP sink: accepts every export (what a collector next to the service does). */
async function startTraceSink(): Promise<{
  url: string
  exports: () => number
  close: () => void
}> {
  let exports = 0
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      exports++
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${String(port)}`,
    exports: () => exports,
    close: () => server.close(),
  }
}

/** Settings of the `--observability` service: Prometheus, and tracing at 1% to `sink`. */
async function observabilityEnv(sink: string): Promise<Record<string, string>> {
  return {
    DISABLE_STATS: 'false',
    USE_STATSD: 'false',
    USE_PROMETHEUS: 'true',
    PROMETHEUS_ADDR: `127.0.0.1:${String(await getFreePort())}`,
    TRACING_ENABLED: 'true',
    TRACING_SAMPLING_RATE: '0.01',
    OTEL_EXPORTER_OTLP_ENDPOINT: sink,
  }
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2))
  const dir = mkdtempSync(join(tmpdir(), 'ratelimit-bench-'))
  mkdirSync(join(dir, 'config'))
  writeFileSync(join(dir, 'config', 'bench.yaml'), CONFIG)
  const message = encodeRateLimitRequest(REQUEST)
  const frame = Buffer.alloc(5 + message.length)
  frame.writeUInt32BE(message.length, 1)
  message.copy(frame, 5)
  writeFileSync(join(dir, 'request.grpc'), frame)
  writeFileSync(
    join(dir, 'post.lua'),
    `wrk.method = "POST"\nwrk.body = '${JSON.stringify(REQUEST)}'\nwrk.headers["Content-Type"] = "application/json"\n`,
  )

  const results = new Map<string, Sample[]>()
  const add = (key: string, sample: Sample): void => {
    results.set(key, [...(results.get(key) ?? []), sample])
    console.error(
      `${key}: ${sample.rps.toFixed(0)}/s p50 ${sample.p50.toFixed(2)} ms p99 ${sample.p99.toFixed(2)} ms`,
    )
  }
  const redis = await startRedisServer()
  const svc = await startService(redis.port, dir, options.env, options.main)
  const sink = options.observability ? await startTraceSink() : undefined
  const obsEnv = sink === undefined ? undefined : await observabilityEnv(sink.url)
  const obs =
    obsEnv === undefined
      ? undefined
      : await startService(redis.port, dir, { ...options.env, ...obsEnv }, options.main)
  try {
    for (const c of options.concurrency) {
      // Warm-up of every path at this concurrency (not recorded).
      await baseline(redis.port, c, 1)
      await grpcLoad(svc.grpc, c, 1, dir)
      await httpLoad(svc.http, c, 1, dir)
      if (obs !== undefined) {
        await grpcLoad(obs.grpc, c, 1, dir)
        await httpLoad(obs.http, c, 1, dir)
      }
      // Interleaved slices: each service slice is compared with the baseline slice next to it, so
      // both see the same background load.
      for (let slice = 0; slice < options.slices; slice++) {
        add(`baseline ${String(c)}`, await baseline(redis.port, c, options.seconds))
        add(`grpc ${String(c)}`, await grpcLoad(svc.grpc, c, options.seconds, dir))
        add(`http ${String(c)}`, await httpLoad(svc.http, c, options.seconds, dir))
        if (obs !== undefined && obsEnv !== undefined) {
          add(`grpc+obs ${String(c)}`, await grpcLoad(obs.grpc, c, options.seconds, dir))
          add(`http+obs ${String(c)}`, await httpLoad(obs.http, c, options.seconds, dir))
          // One scrape per slice, as a Prometheus server would do every few seconds.
          const scrape = await fetch(`http://${obsEnv.PROMETHEUS_ADDR ?? ''}/metrics`)
          if (!(await scrape.text()).includes('ratelimit_service_total_requests')) {
            throw new Error('the observability service exposes no metrics')
          }
        }
      }
    }
    const stats = await (await fetch(`http://127.0.0.1:${String(svc.debug)}/stats`)).text()
    const errors = /should_rate_limit\.redis_error: (\d+)/.exec(stats)?.[1]
    if (errors !== '0') throw new Error(`the service counted redis errors: ${String(errors)}`)
    if (sink !== undefined && sink.exports() === 0) throw new Error('no spans were exported')
  } finally {
    await obs?.service.stop()
    sink?.close()
    await svc.service.stop()
    await redis.stop()
    rmSync(dir, { recursive: true, force: true })
  }

  const rows: string[] = []
  for (const c of options.concurrency) {
    const base = results.get(`baseline ${String(c)}`) ?? []
    for (const mode of ['grpc', 'http'] as const) {
      const samples = results.get(`${mode} ${String(c)}`) ?? []
      const ratios = samples.map((s, i) => s.rps / (base[i]?.rps ?? NaN))
      rows.push(
        `| ${mode === 'grpc' ? 'gRPC (h2load)' : 'HTTP /json (wrk)'} | ${String(c)} | ${fmt(samples.map((s) => s.rps))} | ${fmt(
          samples.map((s) => s.p50),
          2,
        )} | ${fmt(
          samples.map((s) => s.p99),
          2,
        )} | ${fmt(base.map((s) => s.rps))} | ${fmt(
          base.map((s) => s.p50),
          2,
        )} / ${fmt(
          base.map((s) => s.p99),
          2,
        )} | ${fmt(ratios.map((x) => x * 100))}% |`,
      )
    }
  }
  if (options.observability) {
    for (const c of options.concurrency) {
      for (const mode of ['grpc', 'http'] as const) {
        const plain = results.get(`${mode} ${String(c)}`) ?? []
        const obsSamples = results.get(`${mode}+obs ${String(c)}`) ?? []
        const ratios = obsSamples.map((s, i) => s.rps / (plain[i]?.rps ?? NaN))
        rows.push(
          `| ${mode === 'grpc' ? 'gRPC' : 'HTTP /json'} + Prometheus + tracing 1% | ${String(c)} | ${fmt(obsSamples.map((s) => s.rps))} | ${fmt(
            obsSamples.map((s) => s.p50),
            2,
          )} | ${fmt(
            obsSamples.map((s) => s.p99),
            2,
          )} | | | ${fmt(ratios.map((x) => x * 100))}% of the defaults |`,
        )
      }
    }
  }
  const settings = Object.entries(options.env).map(([k, v]) => `${k}=${v}`)
  const table = [
    `Service settings: ${settings.length > 0 ? settings.join(', ') : 'defaults'}. ${String(options.slices)} interleaved slices of ${String(options.seconds)} s per path and concurrency (baseline, gRPC, HTTP, baseline, …); median (min–max) over the slices; the ratio is taken per slice against the baseline slice next to it.`,
    '',
    '| path | concurrency | decisions/s | p50 ms | p99 ms | baseline pipelines/s | baseline p50 / p99 ms | ratio |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n')
  console.log(table)
  if (options.write) writeResults(table, options)
}

function writeResults(table: string, options: Options): void {
  const path = join(ROOT, 'bench/RESULTS.md')
  const text = readFileSync(path, 'utf8')
  const command = `npx tsx bench/ratelimit/run.ts --seconds ${String(options.seconds)} --slices ${String(options.slices)} --concurrency ${options.concurrency.join(',')} --label "${options.label}"${Object.entries(
    options.env,
  )
    .map(([k, v]) => ` --env ${k}=${v}`)
    .join('')}${options.observability ? ' --observability' : ''} --write`
  const entry = `### ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC — ${options.label}\n\n- **Machine:** ${machineInfo()}; load average at start ${loadavg()
    .map((l) => l.toFixed(1))
    .join(
      ' / ',
    )} (other engineers' test suites share the 2 cores).\n- **Command:** \`${command}\`\n\n${table}\n`
  const marker = '## ratelimit\n'
  const start = text.indexOf(marker)
  const updated =
    start < 0
      ? `${text.trimEnd()}\n\n${marker}\n${entry}`
      : `${text.slice(0, start + marker.length)}\n${entry}${text.slice(start + marker.length)}`
  writeFileSync(path, updated)
}

await main()
