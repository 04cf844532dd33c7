/**
 * Benchmark of @gatehouse/ratelimit per backend: decisions/s and p50/p99 latency over gRPC
 * (driven by h2load) and over HTTP `/json` (driven by wrk) at several concurrencies, side by side
 * with each backend's physical baseline (a raw client doing what the store sends per decision:
 * ioredis pipelines of INCRBY+EXPIRE, `baseline.ts`; memcache-client get + incr,
 * `memcache-baseline.ts`), all against servers of the run's own, in the same run. Backends
 * (`--backends`, in order): `redis` (one redis-server), `cluster` (a Redis Cluster of three nodes)
 * and `memcache` (one memcached); each is one entry of {@link BACKENDS}.
 *
 * Usage (from the repository root, after `npx tsc -b packages/ratelimit`):
 *   npx tsx bench/ratelimit/run.ts [--seconds 10] [--slices 5] [--concurrency 1,50,200]
 *     [--backends redis,cluster,memcache] [--label default] [--env KEY=VALUE]... [--observability]
 *     [--keys N] [--write]
 *
 * `--observability` also runs a second service with Prometheus and tracing on (USE_PROMETHEUS,
 * TRACING_ENABLED, TRACING_SAMPLING_RATE=0.01, spans exported to a local OTLP/HTTP sink), measured
 * in the same slices, and reports its throughput against the defaults' (slice next to slice, with
 * the service's CPU per decision), and side by side: both services loaded at once, half the
 * concurrency each, so that both see the same machine in the same seconds.
 * `--algorithms fixed_window,sliding_window,token_bucket` instead runs one service per algorithm
 * (`RATE_LIMIT_ALGORITHM`) on the same servers, in interleaved slices, and reports each one's
 * decisions/s against the fixed window's slice next to it (issue 15). `--windows` likewise runs
 * the one-window rule and a rule of two windows (the same hour plus a day, issue 32) side by side.
 * `--keys N` compares a Redis pre-filled with N live keys in the service's key format with one
 * holding 1,000, a service on each, in interleaved slices (issue 34).
 * `--env` passes settings to the service (e.g. `--env REDIS_POOL_SIZE=1`); `--write` stores the
 * markdown table in bench/RESULTS.md under "## ratelimit". `--main PATH` runs another build's
 * `dist/main.js` instead of this checkout's (to compare two commits in the same conditions).
 */
import {
  getFreePort,
  startMemcached,
  startProcess,
  startRedisCluster,
  startRedisServer,
  waitFor,
} from '@gatehouse/testing'
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect as connectHttp2 } from 'node:http2'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'
import { format, resolveConfig } from 'prettier'
import { encodeRateLimitRequest } from '#internal/ratelimit/protocol/protobuf/request.js'
import { processTree, processTreeCpuMs } from '../lib/cpu.js'
import {
  memoryTable,
  rssKiB,
  startMemorySampler,
  treeRssKiB,
  type MemoryProbes,
  type MemoryRow,
} from '../lib/memory.js'
import { startOtlpSink } from '../lib/otlp-sink.js'
import { machineInfo, percentile } from '../lib/report.js'
import { requireTools } from '../lib/tools.js'

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
/** The service `--main` runs unless told otherwise: this checkout's bin. */
const DEFAULT_MAIN = join(ROOT, 'packages/ratelimit/bin/gatehouse-ratelimit.js')

interface Options {
  seconds: number
  slices: number
  concurrency: number[]
  backends: string[]
  label: string
  env: Record<string, string>
  write: boolean
  main: string
  observability: boolean
  /** `--algorithms`: compare these algorithms instead (empty: the ordinary run). */
  algorithms: string[]
  /** `--windows`: compare a rule of two windows with the one-window rule instead (issue 32). */
  windows: boolean
  /** `--keys`: compare a Redis holding this many live keys with one holding 1,000 (0: off). */
  keys: number
  /** `--ceiling`: also measure `ceiling-server.mjs`, Node's servers answering a fixed answer. */
  ceiling: boolean
}

/** The algorithms `--algorithms` accepts (`RATE_LIMIT_ALGORITHM` values). */
const ALGORITHMS = ['fixed_window', 'sliding_window', 'token_bucket']

/** The `--help` text. */
function usage(): string {
  return `Usage: npx tsx bench/ratelimit/run.ts [options]
  --seconds N          seconds per slice (default 10)
  --slices N           interleaved slices per path and concurrency (default 5)
  --concurrency LIST   comma-separated concurrencies (default 1,50,200)
  --backends LIST      comma-separated, in order, of: ${BACKEND_NAMES} (default redis)
  --label TEXT         the run's name in bench/RESULTS.md (default "default")
  --env KEY=VALUE      a setting for the service (repeatable)
  --main PATH          another build's bin/gatehouse-ratelimit.js or dist/main.js
  --observability      also a service with Prometheus and tracing at 1%, in the same slices
  --algorithms LIST    one service per algorithm (${ALGORITHMS.join(', ')}), compared with
                       the fixed window's slices (gRPC and HTTP; no baseline)
  --windows            a rule of two windows (hour and day) against the one-window rule, in
                       interleaved slices (issue 32)
  --keys N             a Redis pre-filled with N live keys against one with 1,000, one
                       service each, in interleaved slices (redis backend only)
  --ceiling            also an empty server (ceiling-server.mjs: Node's http and http2 servers
                       answering the service's answer, no decision), in the same slices
  --write              store the table in bench/RESULTS.md under "## ratelimit"
  --help               print this and exit`
}

function parseArgs(argv: string[]): Options {
  const options: Options = {
    seconds: 10,
    slices: 5,
    concurrency: [1, 50, 200],
    backends: ['redis'],
    label: 'default',
    env: {},
    write: false,
    main: DEFAULT_MAIN,
    observability: false,
    algorithms: [],
    windows: false,
    keys: 0,
    ceiling: false,
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const value = (): string => argv[++i] ?? ''
    if (arg === '--seconds') options.seconds = Number(value())
    else if (arg === '--slices') options.slices = Number(value())
    else if (arg === '--concurrency') options.concurrency = value().split(',').map(Number)
    else if (arg === '--backends') {
      options.backends = value().split(',')
      const unknown = options.backends.filter((name) => !(name in BACKENDS))
      if (unknown.length > 0) {
        throw new Error(`unknown backend ${unknown.join(', ')}; known: ${BACKEND_NAMES}`)
      }
    } else if (arg === '--label') options.label = value()
    else if (arg === '--write') options.write = true
    else if (arg === '--observability') options.observability = true
    else if (arg === '--algorithms') {
      options.algorithms = value().split(',')
      const unknown = options.algorithms.filter((name) => !ALGORITHMS.includes(name))
      if (unknown.length > 0) {
        throw new Error(`unknown algorithm ${unknown.join(', ')}; known: ${ALGORITHMS.join(', ')}`)
      }
      if (!options.algorithms.includes('fixed_window')) options.algorithms.unshift('fixed_window')
    } else if (arg === '--windows') options.windows = true
    else if (arg === '--keys') options.keys = Number(value())
    else if (arg === '--ceiling') options.ceiling = true
    else if (arg === '--main') options.main = value()
    else if (arg === '--help') {
      console.log(usage())
      process.exit(0)
    } else if (arg === '--env') {
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
  /** CPU milliseconds of the service's processes (primary and workers) during the slice. */
  serviceCpuMs?: number
}

const DOMAIN = 'bench'
const CONFIG = `domain: ${DOMAIN}
descriptors:
  - key: client_id
    rate_limit:
      unit: hour
      requests_per_unit: 4000000000
`
/** The same rule with a second window (`--windows`). */
const TWO_WINDOWS_CONFIG = `domain: ${DOMAIN}
descriptors:
  - key: client_id
    rate_limit:
      - { unit: hour, requests_per_unit: 4000000000 }
      - { unit: day, requests_per_unit: 4000000000 }
`
const REQUEST = {
  domain: DOMAIN,
  descriptors: [{ entries: [{ key: 'client_id', value: 'bench-client' }] }],
  hitsAddend: 0,
}

/** A backend under test: its servers, the settings that select it, and its raw-client baseline. */
interface Backend {
  /** The table's name for it. */
  readonly name: string
  /** Service settings that select it. */
  readonly env: Record<string, string>
  /** Raw-client pipelines/s at concurrency `c` for `seconds`, on the key the service uses. */
  baseline(c: number, seconds: number): Promise<Sample>
  stop(): Promise<void>
}

/** The baseline's key: the shape and length of the key the service writes for {@link REQUEST}. */
const BENCH_KEY = 'bench_client_id_bench-client_0'

/**
 * Runs a baseline script of this folder in its own process, with `target` (what it connects to)
 * followed by the concurrency, the seconds and {@link BENCH_KEY}.
 */
async function rawBaseline(
  script: 'baseline.ts' | 'memcache-baseline.ts',
  target: readonly string[],
  c: number,
  seconds: number,
): Promise<Sample> {
  const { stdout } = await run(
    process.execPath,
    [
      '--import',
      'tsx',
      join(ROOT, 'bench/ratelimit', script),
      ...target,
      String(c),
      String(seconds),
      BENCH_KEY,
    ],
    { cwd: ROOT },
  )
  return JSON.parse(stdout.trim()) as Sample
}

/** Every backend the bench knows, by `--backends` name. Add a row here. */
const BACKENDS: Record<string, () => Promise<Backend>> = {
  redis: async () => {
    const redis = await startRedisServer()
    return {
      name: 'Redis',
      env: { REDIS_SOCKET_TYPE: 'tcp', REDIS_URL: redis.hostPort },
      baseline: (c, seconds) => rawBaseline('baseline.ts', ['single', redis.hostPort], c, seconds),
      stop: () => redis.stop(),
    }
  },
  cluster: async () => {
    const cluster = await startRedisCluster({ nodes: 3 })
    return {
      name: 'Redis Cluster (3 nodes)',
      env: { REDIS_TYPE: 'cluster', REDIS_URL: cluster.url, REDIS_PIPELINE_WINDOW: '150us' },
      baseline: (c, seconds) => rawBaseline('baseline.ts', ['cluster', cluster.url], c, seconds),
      stop: () => cluster.stop(),
    }
  },
  memcache: async () => {
    const memcached = await startMemcached()
    return {
      name: 'memcache',
      env: { BACKEND_TYPE: 'memcache', MEMCACHE_HOST_PORT: memcached.hostPort },
      baseline: (c, seconds) =>
        rawBaseline('memcache-baseline.ts', [memcached.hostPort], c, seconds),
      stop: () => memcached.stop(),
    }
  },
}
const BACKEND_NAMES = Object.keys(BACKENDS).join(', ')

async function grpcLoad(port: number, c: number, seconds: number, dir: string): Promise<Sample> {
  const streams = Math.min(c, 10)
  const connections = Math.ceil(c / streams)
  const log = join(dir, `h2load-${String(port)}-${String(c)}.log`)
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

async function startService(dir: string, env: Record<string, string>, main: string) {
  const [http, grpc, debug] = await Promise.all([getFreePort(), getFreePort(), getFreePort()])
  const service = await startProcess(process.execPath, [main], {
    env: {
      ...process.env,
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

/** Runs `load` and adds the CPU the service's processes used meanwhile to its sample. */
async function withServiceCpu(
  service: { readonly child: { readonly pid?: number | undefined } },
  load: () => Promise<Sample>,
): Promise<Sample> {
  const pid = service.child.pid ?? 0
  const before = processTreeCpuMs(pid)
  const sample = await load()
  return { ...sample, serviceCpuMs: processTreeCpuMs(pid) - before }
}

/**
 * The table row of a side-by-side `--observability` measurement (`grpc=obs`, `http=obs`): the
 * observed service's rate against the defaults' in the same seconds, both at half the
 * concurrency.
 */
function sideBySideRow(
  results: ReadonlyMap<string, Sample[]>,
  backend: string,
  path: string,
  c: string,
): string {
  const mode = path.slice(0, -'=obs'.length)
  const plain = results.get(`${backend}\t${mode}=defaults\t${c}`) ?? []
  const samples = results.get(`${backend}\t${path}\t${c}`) ?? []
  const ratios = samples.map((s, i) => s.rps / (plain[i]?.rps ?? NaN))
  const name = mode === 'grpc' ? 'gRPC' : 'HTTP /json'
  const half = String(Math.max(1, Math.floor(Number(c) / 2)))
  return `| ${backend} | ${name} + Prometheus + tracing 1%, side by side with the defaults (${half} each) | ${c} | ${sampleCells(samples)} | ${fmt(plain.map((s) => s.rps))} (the defaults, same seconds) | | ${fmt(ratios.map((x) => x * 100))}% of the defaults |`
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

/** The decisions/s, p50 and p99 cells of a row of `samples`. */
function sampleCells(samples: readonly Sample[]): string {
  return [
    fmt(samples.map((s) => s.rps)),
    fmt(
      samples.map((s) => s.p50),
      2,
    ),
    fmt(
      samples.map((s) => s.p99),
      2,
    ),
  ].join(' | ')
}

/**
 * The table row of an `--observability` path (`grpc+obs`, `http+obs`) of one backend and
 * concurrency: its samples, and its throughput per slice against the defaults' slice next to it.
 */
function observabilityRow(
  results: ReadonlyMap<string, Sample[]>,
  backend: string,
  path: string,
  c: string,
): string {
  const mode = path.slice(0, -'+obs'.length)
  const plain = results.get(`${backend}\t${mode}\t${c}`) ?? []
  const samples = results.get(`${backend}\t${path}\t${c}`) ?? []
  const ratios = samples.map((s, i) => s.rps / (plain[i]?.rps ?? NaN))
  // The service's CPU per decision against the defaults' in the slice next to it (both slices
  // last as long, so CPU/rps compares CPU per decision): steadier than throughput on a shared
  // machine, whose neighbours move both services' rates.
  const cpu = samples.map(
    (s, i) =>
      (s.serviceCpuMs ?? NaN) / s.rps / ((plain[i]?.serviceCpuMs ?? NaN) / (plain[i]?.rps ?? NaN)),
  )
  const name = mode === 'grpc' ? 'gRPC' : 'HTTP /json'
  return `| ${backend} | ${name} + Prometheus + tracing 1% | ${c} | ${sampleCells(samples)} | | | ${fmt(ratios.map((x) => x * 100))}% of the defaults; service CPU per decision ${fmt(cpu.map((x) => x * 100))}% of theirs |`
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
    // BENCH_OBSERVABILITY_ENV="KEY=value …" changes the observed service (one part at a time).
    ...Object.fromEntries(
      (process.env.BENCH_OBSERVABILITY_ENV ?? '')
        .split(' ')
        .filter(Boolean)
        .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
    ),
  }
}

/** Whether the `--observability` service samples any trace (so that the sink must get some). */
function observedServiceTraces(): boolean {
  const env = process.env.BENCH_OBSERVABILITY_ENV ?? ''
  return (
    !/(^| )TRACING_ENABLED=false( |$)/.test(env) && !/(^| )TRACING_SAMPLING_RATE=0( |$)/.test(env)
  )
}

/** How {@link main}'s table names a path. */
const PATH_NAMES: Readonly<Record<string, string>> = {
  grpc: 'gRPC (h2load)',
  http: 'HTTP /json (wrk)',
  'grpc-ceiling': 'gRPC, empty server (ceiling)',
  'http-ceiling': 'HTTP /json, empty server (ceiling)',
}

/** How long the bench waits for one answer it takes from the service (`startCeiling`). */
const ANSWER_TIMEOUT_MS = 10_000

/**
 * Starts `ceiling-server.mjs` with as many workers as the running service has (its primary's
 * children; a service without workers serves in one process), answering what `service` answers
 * the bench's request, taken from it once over each path.
 */
async function startCeiling(
  dir: string,
  service: {
    readonly http: number
    readonly grpc: number
    readonly service: { readonly child: { readonly pid?: number | undefined } }
  },
) {
  const json = await (
    await fetch(`http://127.0.0.1:${String(service.http)}/json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(REQUEST),
      signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS),
    })
  ).text()
  const grpc = await grpcAnswer(service.grpc, readFileSync(join(dir, 'request.grpc')))
  const answers = join(dir, 'ceiling-answers.json')
  writeFileSync(answers, JSON.stringify({ json, grpc: grpc.toString('base64') }))
  const [http, grpcPort] = await Promise.all([getFreePort(), getFreePort()])
  const workers = String(Math.max(1, processTree(service.service.child.pid ?? 0).length - 1))
  const ceiling = await startProcess(process.execPath, [
    join(ROOT, 'bench/ratelimit/ceiling-server.mjs'),
    String(http),
    String(grpcPort),
    workers,
    answers,
  ])
  await waitFor(() => ceiling.output().includes('listening'), {
    what: `the empty server (${ceiling.output()})`,
    timeout: 30_000,
  })
  return { http, grpc: grpcPort, service: ceiling }
}

/** The response data (the framed message) of one gRPC call of `frame` to the service. */
async function grpcAnswer(port: number, frame: Buffer): Promise<Buffer> {
  const session = connectHttp2(`http://127.0.0.1:${String(port)}`)
  try {
    return await new Promise<Buffer>((resolve, reject) => {
      const stream = session.request({
        ':method': 'POST',
        ':path': '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
        'content-type': 'application/grpc',
        te: 'trailers',
      })
      const chunks: Buffer[] = []
      stream.on('data', (chunk: Buffer) => chunks.push(chunk))
      stream.on('end', () => {
        resolve(Buffer.concat(chunks))
      })
      stream.on('error', reject)
      stream.setTimeout(ANSWER_TIMEOUT_MS, () => {
        stream.close()
        reject(new Error(`no gRPC answer from the service within ${String(ANSWER_TIMEOUT_MS)} ms`))
      })
      stream.end(frame)
    })
  } finally {
    session.close()
  }
}

/**
 * With `--ceiling`: the service's decisions/s per slice as a share of the empty server's slice
 * next to it, per backend, path and concurrency (no lines without it).
 */
function ceilingShares(results: ReadonlyMap<string, Sample[]>): string[] {
  const lines: string[] = []
  for (const [key, ceiling] of results) {
    const [backend = '', path = '', c = ''] = key.split('\t')
    if (!path.endsWith('-ceiling')) continue
    const mode = path.slice(0, -'-ceiling'.length)
    const samples = results.get(`${backend}\t${mode}\t${c}`) ?? []
    const shares = samples.map((s, i) => (s.rps / (ceiling[i]?.rps ?? NaN)) * 100)
    lines.push(
      `- ${backend}, ${PATH_NAMES[mode] ?? mode}, c=${c}: the service reaches ${fmt(shares)}% of the empty server's decisions/s (slice next to slice).`,
    )
  }
  return lines.length === 0 ? [] : [...lines, '']
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2))
  requireTools([
    { command: 'h2load', debianPackage: 'nghttp2-client' },
    { command: 'wrk', debianPackage: 'wrk' },
  ])
  const loadAtStart = loadavg()
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

  if (options.keys > 0) {
    try {
      const table = await compareKeyspaces(options, dir)
      console.log(table)
      if (options.write) await writeResults(table, options, loadAtStart)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
    return
  }

  if (options.algorithms.length > 0 || options.windows) {
    try {
      let variants: Variant[]
      let title: string
      if (options.windows) {
        const twoDir = join(dir, 'two')
        mkdirSync(join(twoDir, 'config'), { recursive: true })
        writeFileSync(join(twoDir, 'config', 'bench.yaml'), TWO_WINDOWS_CONFIG)
        variants = [
          { name: 'one window (hour)', env: {} },
          { name: 'two windows (hour, day)', env: { RUNTIME_ROOT: twoDir } },
        ]
        title =
          'Windows per rule (issue 32): the one-window rule and the same rule with a second window, one service each on the same servers'
      } else {
        variants = options.algorithms.map((algorithm) => ({
          name: algorithm,
          env: { RATE_LIMIT_ALGORITHM: algorithm },
        }))
        title = 'Algorithms (RATE_LIMIT_ALGORITHM, one service each on the same servers)'
      }
      const table = await compareVariants(options, dir, variants, title)
      console.log(table)
      if (options.write) await writeResults(table, options, loadAtStart)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
    return
  }

  const results = new Map<string, Sample[]>()
  const add = (key: string, sample: Sample): void => {
    results.set(key, [...(results.get(key) ?? []), sample])
    console.error(
      `${key}: ${sample.rps.toFixed(0)}/s p50 ${sample.p50.toFixed(2)} ms p99 ${sample.p99.toFixed(2)} ms`,
    )
  }
  const sink = options.observability ? await startOtlpSink() : undefined
  const memory: MemoryRow[] = []
  try {
    for (const name of options.backends) {
      const open = BACKENDS[name]
      if (open === undefined) throw new Error(`unknown backend ${name}`)
      const backend = await open()
      const env = { ...backend.env, ...options.env }
      const svc = await startService(dir, env, options.main)
      const obsEnv = sink === undefined ? undefined : await observabilityEnv(sink.url)
      const obs =
        obsEnv === undefined
          ? undefined
          : await startService(dir, { ...env, ...obsEnv }, options.main)
      const ceiling = options.ceiling ? await startCeiling(dir, svc) : undefined
      const sampler = startMemorySampler(serviceMemoryProbes(backend.name, svc.service))
      try {
        for (const c of options.concurrency) {
          const at = (path: string): string => `${backend.name}\t${path}\t${String(c)}`
          // Warm-up of every path at this concurrency (not recorded).
          await backend.baseline(c, 1)
          for (const service of [svc, obs]) {
            if (service === undefined) continue
            await grpcLoad(service.grpc, c, 1, dir)
            await httpLoad(service.http, c, 1, dir)
          }
          if (ceiling !== undefined) {
            await grpcLoad(ceiling.grpc, c, 1, dir)
            await httpLoad(ceiling.http, c, 1, dir)
          }
          // Interleaved slices: each service slice is compared with the baseline slice next to
          // it, so both see the same background load.
          for (let slice = 0; slice < options.slices; slice++) {
            add(at('baseline'), await backend.baseline(c, options.seconds))
            const cpuOf = (service: Pick<typeof svc, 'service'>, load: () => Promise<Sample>) =>
              withServiceCpu(service.service, load)
            add(at('grpc'), await cpuOf(svc, () => grpcLoad(svc.grpc, c, options.seconds, dir)))
            add(at('http'), await cpuOf(svc, () => httpLoad(svc.http, c, options.seconds, dir)))
            if (ceiling !== undefined) {
              for (const [path, load, port] of [
                ['grpc-ceiling', grpcLoad, ceiling.grpc],
                ['http-ceiling', httpLoad, ceiling.http],
              ] as const) {
                add(at(path), await cpuOf(ceiling, () => load(port, c, options.seconds, dir)))
              }
            }
            if (obs !== undefined && obsEnv !== undefined) {
              add(
                at('grpc+obs'),
                await cpuOf(obs, () => grpcLoad(obs.grpc, c, options.seconds, dir)),
              )
              add(
                at('http+obs'),
                await cpuOf(obs, () => httpLoad(obs.http, c, options.seconds, dir)),
              )
              // Side by side: both services loaded at once, half the concurrency each, so that
              // both see the same machine in the same seconds (a shared machine's speed drifts
              // between slices); the ratio of their rates is what observability costs.
              const half = Math.max(1, Math.floor(c / 2))
              for (const [mode, load] of [
                ['grpc', grpcLoad],
                ['http', httpLoad],
              ] as const) {
                const [plain, observed] = await Promise.all([
                  load(mode === 'grpc' ? svc.grpc : svc.http, half, options.seconds, dir),
                  load(mode === 'grpc' ? obs.grpc : obs.http, half, options.seconds, dir),
                ])
                add(at(`${mode}=defaults`), plain)
                add(at(`${mode}=obs`), observed)
              }
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
        memory.push(...sampler.stop())
      } finally {
        await ceiling?.service.stop()
        await obs?.service.stop()
        await svc.service.stop()
        await backend.stop()
      }
    }
    if (sink !== undefined && observedServiceTraces() && sink.exports() === 0) {
      throw new Error('no spans were exported')
    }
  } finally {
    sink?.close()
    rmSync(dir, { recursive: true, force: true })
  }

  const rows: string[] = []
  for (const key of results.keys()) {
    const [backend = '', path = '', c = ''] = key.split('\t')
    if (path === 'baseline') continue
    if (path.endsWith('+obs')) {
      rows.push(observabilityRow(results, backend, path, c))
      continue
    }
    if (path.endsWith('=obs')) {
      rows.push(sideBySideRow(results, backend, path, c))
      continue
    }
    if (path.endsWith('=defaults')) continue
    const base = results.get(`${backend}\tbaseline\t${c}`) ?? []
    const samples = results.get(key) ?? []
    const ratios = samples.map((s, i) => s.rps / (base[i]?.rps ?? NaN))
    rows.push(
      [
        '',
        backend,
        PATH_NAMES[path] ?? path,
        c,
        fmt(samples.map((s) => s.rps)),
        fmt(
          samples.map((s) => s.p50),
          2,
        ),
        fmt(
          samples.map((s) => s.p99),
          2,
        ),
        fmt(base.map((s) => s.rps)),
        `${fmt(
          base.map((s) => s.p50),
          2,
        )} / ${fmt(
          base.map((s) => s.p99),
          2,
        )}`,
        `${fmt(ratios.map((x) => x * 100))}%`,
        fmt(samples.map((s) => ((s.serviceCpuMs ?? NaN) * 1000) / (s.rps * options.seconds))),
        '',
      ]
        .join(' | ')
        .trim(),
    )
  }
  const settings = Object.entries(options.env).map(([k, v]) => `${k}=${v}`)
  const table = [
    `Service settings: ${settings.length > 0 ? settings.join(', ') : 'defaults'}. ${String(options.slices)} interleaved slices of ${String(options.seconds)} s per path and concurrency (baseline, gRPC, HTTP, baseline, …); median (min–max) over the slices; the ratio is taken per slice against the baseline slice next to it. Each backend runs on servers of its own; its baseline is a raw client doing what the store sends per decision (Redis: an INCRBY + EXPIRE pipeline, baseline.ts; memcache: get + incr, memcache-baseline.ts).`,
    '',
    '| backend | path | concurrency | decisions/s | p50 ms | p99 ms | baseline decisions/s | baseline p50 / p99 ms | ratio | server CPU µs per decision |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    ...ceilingShares(results),
    'Resident memory (VmRSS) of the service: idle after start, and its peak over the slices.',
    '',
    memoryTable(memory),
  ].join('\n')
  console.log(table)
  if (options.write) await writeResults(table, options, loadAtStart)
}

/**
 * Memory probes of one service: its primary process and the sum of its workers (the primary's
 * descendants), in KiB.
 */
function serviceMemoryProbes(
  label: string,
  service: { readonly child: { readonly pid?: number | undefined } },
): MemoryProbes {
  const pid = service.child.pid ?? 0
  return {
    [`${label}: service primary`]: () => rssKiB(pid),
    [`${label}: service workers (all)`]: () => treeRssKiB(pid) - rssKiB(pid),
  }
}

/** The keys of the smaller Redis in `--keys`. */
const SMALL_KEYSPACE = 1000

/**
 * Writes `count` distinct live keys in the service's key format for the bench's rule (domain,
 * `client_id`, a value of their own, the current hour's window start), each with a small count
 * and the window's `EX`, in pipelines of 10,000 `SET`s.
 *
 * @returns Redis' `used_memory_human` afterwards.
 */
async function fillKeyspace(hostPort: string, count: number): Promise<string> {
  const [host = '127.0.0.1', port = '6379'] = hostPort.split(':')
  const redis = new Redis({ host, port: Number(port) })
  try {
    const hour = 3600
    const windowStart = Math.floor(Date.now() / 1000 / hour) * hour
    for (let from = 0; from < count; from += 10_000) {
      const pipeline = redis.pipeline()
      for (let i = from; i < Math.min(count, from + 10_000); i++) {
        pipeline.set(
          `${DOMAIN}_client_id_k${String(i)}_${String(windowStart)}`,
          i % 100,
          'EX',
          hour,
        )
      }
      await pipeline.exec()
    }
    const size = await redis.dbsize()
    if (size < count) throw new Error(`Redis holds ${String(size)} keys, not ${String(count)}`)
    const info = await redis.info('memory')
    return /used_memory_human:(\S+)/.exec(info)?.[1] ?? '?'
  } finally {
    redis.disconnect()
  }
}

/**
 * `--keys N`: two Redis servers, one pre-filled with {@link SMALL_KEYSPACE} live keys and one with
 * `N`, a service on each; per concurrency, interleaved slices (the small one's gRPC slice, the
 * large one's, then HTTP alike), each large slice's decisions/s taken against the small one's of
 * the same round and path. The bench's requests all hit its one key: what is measured is what a
 * large live keyspace costs every decision (the dictionary's size, the expiry cycle's sampling of
 * keys with a TTL, memory).
 *
 * @returns The markdown table (and the services' memory).
 */
async function compareKeyspaces(options: Options, dir: string): Promise<string> {
  if (options.backends.some((name) => name !== 'redis')) {
    throw new Error('--keys measures the redis backend only (--backends redis)')
  }
  const sizes = [SMALL_KEYSPACE, options.keys]
  const label = (keys: number): string => `${keys.toLocaleString('en-US')} keys`
  const backends: Backend[] = []
  const services: Awaited<ReturnType<typeof startService>>[] = []
  const results = new Map<string, Sample[]>()
  const memory: MemoryRow[] = []
  const redisMemory: string[] = []
  try {
    for (const keys of sizes) {
      const redis = await startRedisServer()
      backends.push({
        name: label(keys),
        env: { REDIS_SOCKET_TYPE: 'tcp', REDIS_URL: redis.hostPort },
        baseline: () => Promise.reject(new Error('no baseline in --keys')),
        stop: () => redis.stop(),
      })
      const started = performance.now()
      const used = await fillKeyspace(redis.hostPort, keys)
      redisMemory.push(`${label(keys)}: Redis used_memory ${used}`)
      console.error(
        `filled ${label(keys)} in ${((performance.now() - started) / 1000).toFixed(1)} s (${used})`,
      )
      services.push(
        await startService(
          dir,
          { REDIS_SOCKET_TYPE: 'tcp', REDIS_URL: redis.hostPort, ...options.env },
          options.main,
        ),
      )
    }
    const sampler = startMemorySampler(
      Object.assign(
        {},
        ...services.map((svc, i) => serviceMemoryProbes(label(sizes[i] ?? 0), svc.service)),
      ) as MemoryProbes,
    )
    for (const c of options.concurrency) {
      for (const svc of services) {
        await grpcLoad(svc.grpc, c, 1, dir)
        await httpLoad(svc.http, c, 1, dir)
      }
      for (let slice = 0; slice < options.slices; slice++) {
        for (const path of ['grpc', 'http']) {
          for (const [i, svc] of services.entries()) {
            const sample =
              path === 'grpc'
                ? await grpcLoad(svc.grpc, c, options.seconds, dir)
                : await httpLoad(svc.http, c, options.seconds, dir)
            const key = `${String(i)}\t${path}\t${String(c)}`
            results.set(key, [...(results.get(key) ?? []), sample])
            console.error(
              `${label(sizes[i] ?? 0)}\t${path}\t${String(c)}: ${sample.rps.toFixed(0)}/s p99 ${sample.p99.toFixed(2)} ms`,
            )
          }
        }
      }
    }
    memory.push(...sampler.stop())
    for (const svc of services) {
      const stats = await (await fetch(`http://127.0.0.1:${String(svc.debug)}/stats`)).text()
      const errors = /should_rate_limit\.redis_error: (\d+)/.exec(stats)?.[1]
      if (errors !== '0') throw new Error(`the service counted redis errors: ${String(errors)}`)
    }
  } finally {
    for (const svc of services) await svc.service.stop()
    for (const backend of backends) await backend.stop()
  }
  const rows: string[] = []
  for (const c of options.concurrency) {
    for (const path of ['grpc', 'http']) {
      const small = results.get(`0\t${path}\t${String(c)}`) ?? []
      for (const [i, keys] of sizes.entries()) {
        const samples = results.get(`${String(i)}\t${path}\t${String(c)}`) ?? []
        const ratios = samples.map((s, j) => (s.rps / (small[j]?.rps ?? NaN)) * 100)
        rows.push(
          `| ${label(keys)} | ${path === 'grpc' ? 'gRPC (h2load)' : 'HTTP /json (wrk)'} | ${String(c)} | ${sampleCells(samples)} | ${fmt(ratios)}% |`,
        )
      }
    }
  }
  const settings = Object.entries(options.env).map(([k, v]) => `${k}=${v}`)
  return [
    `Live keys in Redis: one Redis pre-filled with ${label(SMALL_KEYSPACE)}, one with ${label(options.keys)} (the service's key format, EX one hour), a service on each; the requests all hit the bench's one key. Service settings: ${settings.length > 0 ? settings.join(', ') : 'defaults'}. ${String(options.slices)} interleaved rounds of ${String(options.seconds)} s slices; median (min–max); the ratio is taken per round against the ${label(SMALL_KEYSPACE)} slice of the same path (target: 90 % or more). ${redisMemory.join('; ')}.`,
    '',
    '| keys | path | concurrency | decisions/s | p50 ms | p99 ms | % of 1,000 keys |',
    '|---|---|---|---|---|---|---|',
    ...rows,
    '',
    'Resident memory (VmRSS) of each service: idle after start, and its peak over the slices.',
    '',
    memoryTable(memory),
  ].join('\n')
}

/** One service of {@link compareVariants}: its name in the table and its settings. */
interface Variant {
  readonly name: string
  readonly env: Record<string, string>
}

/**
 * `--algorithms` and `--windows`: per backend, one service per variant on the same servers; per
 * concurrency, interleaved slices (gRPC then HTTP of each variant in turn), each slice's
 * decisions/s taken against the first variant's slice of the same round.
 *
 * @returns The markdown table.
 */
async function compareVariants(
  options: Options,
  dir: string,
  variants: readonly Variant[],
  title: string,
): Promise<string> {
  const results = new Map<string, Sample[]>()
  const rows: string[] = []
  for (const name of options.backends) {
    const open = BACKENDS[name]
    if (open === undefined) throw new Error(`unknown backend ${name}`)
    const backend = await open()
    const services: { algorithm: string; svc: Awaited<ReturnType<typeof startService>> }[] = []
    try {
      for (const variant of variants) {
        const env = { ...backend.env, ...options.env, ...variant.env }
        services.push({ algorithm: variant.name, svc: await startService(dir, env, options.main) })
      }
      for (const c of options.concurrency) {
        for (const { svc } of services) {
          await grpcLoad(svc.grpc, c, 1, dir)
          await httpLoad(svc.http, c, 1, dir)
        }
        for (let slice = 0; slice < options.slices; slice++) {
          for (const { algorithm, svc } of services) {
            for (const path of ['grpc', 'http']) {
              const sample =
                path === 'grpc'
                  ? await grpcLoad(svc.grpc, c, options.seconds, dir)
                  : await httpLoad(svc.http, c, options.seconds, dir)
              const key = `${backend.name}\t${algorithm}\t${path}\t${String(c)}`
              results.set(key, [...(results.get(key) ?? []), sample])
              console.error(`${key}: ${sample.rps.toFixed(0)}/s p99 ${sample.p99.toFixed(2)} ms`)
            }
          }
        }
      }
      for (const { svc } of services) {
        const stats = await (await fetch(`http://127.0.0.1:${String(svc.debug)}/stats`)).text()
        const errors = /should_rate_limit\.redis_error: (\d+)/.exec(stats)?.[1]
        if (errors !== '0') throw new Error(`the service counted redis errors: ${String(errors)}`)
      }
    } finally {
      for (const { svc } of services) await svc.service.stop()
      await backend.stop()
    }
    for (const c of options.concurrency) {
      for (const path of ['grpc', 'http']) {
        const first = variants[0]?.name ?? ''
        const fixed = results.get(`${backend.name}\t${first}\t${path}\t${String(c)}`) ?? []
        for (const { name: algorithm } of variants) {
          const samples = results.get(`${backend.name}\t${algorithm}\t${path}\t${String(c)}`) ?? []
          const ratios = samples.map((s, i) => (s.rps / (fixed[i]?.rps ?? NaN)) * 100)
          rows.push(
            `| ${backend.name} | ${algorithm} | ${path === 'grpc' ? 'gRPC (h2load)' : 'HTTP /json (wrk)'} | ${String(c)} | ${fmt(samples.map((s) => s.rps))} | ${fmt(
              samples.map((s) => s.p50),
              2,
            )} | ${fmt(
              samples.map((s) => s.p99),
              2,
            )} | ${fmt(ratios)}% |`,
          )
        }
      }
    }
  }
  const settings = Object.entries(options.env).map(([k, v]) => `${k}=${v}`)
  return [
    `${title}. Service settings: ${settings.length > 0 ? settings.join(', ') : 'defaults'}. ${String(options.slices)} interleaved rounds of ${String(options.seconds)} s slices (each service's gRPC then HTTP slice); median (min–max); the ratio is taken per round against the ${variants[0]?.name ?? ''} slice of the same path.`,
    '',
    `| backend | ${options.windows ? 'rule' : 'algorithm'} | path | concurrency | decisions/s | p50 ms | p99 ms | % of ${variants[0]?.name ?? ''} |`,
    '|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n')
}

/** Adds the run's entry at the top of the ratelimit section, formatted as `npm run lint` expects. */
async function writeResults(
  table: string,
  options: Options,
  load: readonly number[],
): Promise<void> {
  const path = join(ROOT, 'bench/RESULTS.md')
  const text = readFileSync(path, 'utf8')
  const command = `npx tsx bench/ratelimit/run.ts --seconds ${String(options.seconds)} --slices ${String(options.slices)} --concurrency ${options.concurrency.join(',')} --backends ${options.backends.join(',')} --label "${options.label}"${Object.entries(
    options.env,
  )
    .map(([k, v]) => ` --env ${k}=${v}`)
    .join(
      '',
    )}${options.observability ? ' --observability' : ''}${options.keys > 0 ? ` --keys ${String(options.keys)}` : ''}${options.algorithms.length > 0 ? ` --algorithms ${options.algorithms.join(',')}` : ''}${options.windows ? ' --windows' : ''}${options.ceiling ? ' --ceiling' : ''}${options.main === DEFAULT_MAIN ? '' : ` --main ${options.main}`} --write`
  const entry = `### ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC — ${options.label}\n\n- **Machine:** ${machineInfo()}; load average at start ${load
    .map((l) => l.toFixed(1))
    .join(
      ' / ',
    )} (a shared machine: note what else ran).\n- **Command:** \`${command}\`\n\n${table}\n`
  const marker = '## ratelimit\n'
  const start = text.indexOf(marker)
  const updated =
    start < 0
      ? `${text.trimEnd()}\n\n${marker}\n${entry}`
      : `${text.slice(0, start + marker.length)}\n${entry}${text.slice(start + marker.length)}`
  const config = await resolveConfig(path)
  writeFileSync(path, await format(updated, { ...config, filepath: path }))
}

await main()
