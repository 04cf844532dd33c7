/**
 * The cost of `RATE_LIMIT_BACKEND=ratelimit` (bench/auth/README.md, "Rate limits"): password
 * sign-ins/s and refresh rotations/s of an auth server asking a real `gatehouse-ratelimit` (Redis
 * backend) for every request, next to the same server without limits, in one run. Both servers
 * share one database and alternate slices, so they see the same background load. Every limited
 * request carries a client key of its own, so each decision is a full one (new Redis keys) and
 * none is refused.
 */
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadSettings } from '@gatehouse/auth'
import { rateLimitServiceConfig } from '#internal/auth/limiter/service-config.js'
import { createTestDatabase, getFreePort, startRedisServer, waitFor } from '@gatehouse/testing'
import {
  databaseBackendsCpuProbe,
  matchingProcessesCpuMs,
  processCpuMs,
  processTreeCpuMs,
  type CpuProbes,
} from '../lib/cpu.js'
import { memoryTable, rssKiB, startMemorySampler, treeRssKiB } from '../lib/memory.js'
import { machineInfo, markdownTable, type ResultRow } from '../lib/report.js'
import { JsonClient, runLoad } from './load.js'
import { compareRounds, rate, spread } from './rounds.js'
import { benchAuthEnv, buildPackages, serverNodeArgs, startAuth, stopChild } from './server.js'
import {
  CONCURRENCY,
  onlyFigures,
  PASSWORD,
  ROUNDS,
  SLICE_MS,
  SLOW_WARMUP_MS,
  WARMUP_MS,
} from './settings.js'

/**
 * Unmeasured load on each server before a figure's first round. The rate limit service is idle
 * until then, and idle again in every unlimited slice: without this, its first rounds measure
 * code V8 has not optimised yet rather than a long-running service.
 */
const PREWARM_MS = Number(process.env.BENCH_PREWARM_MS ?? 10_000)
/** Which figures to measure: a comma-separated subset of `sign-in,refresh` (both by default). */
const ONLY = onlyFigures('sign-in,refresh')
const root = fileURLToPath(new URL('../../', import.meta.url))

/** High enough that no request is refused: the bench measures the decision, not refusals. */
const LIMITED_ENV = {
  AUTHSVC_RATE_LIMIT_BACKEND: 'ratelimit',
  AUTHSVC_RATE_LIMIT_HEADER: 'X-Real-IP',
  AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: '100000000',
  AUTHSVC_RATE_LIMIT_SERVICE_TIMEOUT: '2s',
}

interface Tokens {
  access_token: string
  refresh_token: string
}

async function main(): Promise<void> {
  buildPackages('auth', 'ratelimit')
  const database = await createTestDatabase('bench_auth_limits')
  const redis = await startRedisServer()
  const runtime = mkdtempSync(join(tmpdir(), 'bench-auth-limits-'))
  const [grpcPort, httpPort, plainPort, limitedPort] = await Promise.all([
    getFreePort(),
    getFreePort(),
    getFreePort(),
    getFreePort(),
  ])
  const base = (port: number): Record<string, string> => ({
    // Two servers share PostgreSQL's 100 connections with the other engineers' tests.
    ...benchAuthEnv(port, database.url, 20),
    AUTHSVC_RATE_LIMIT_PASSWORD_FAILURES: '0',
  })
  const limitedEnv = {
    ...base(limitedPort),
    ...LIMITED_ENV,
    AUTHSVC_RATE_LIMIT_SERVICE_ADDRESS: `127.0.0.1:${String(grpcPort)}`,
  }
  mkdirSync(join(runtime, 'config'))
  writeFileSync(
    join(runtime, 'config', 'auth.yaml'),
    // As the limited server sees them: its environment over this process's (AUTHSVC_* knobs).
    rateLimitServiceConfig(loadSettings({ ...process.env, ...limitedEnv })),
  )
  const service = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean),
      `${root}packages/ratelimit/bin/gatehouse-ratelimit.js`,
    ],
    {
      env: {
        ...process.env,
        HOST: '127.0.0.1',
        PORT: String(httpPort),
        GRPC_HOST: '127.0.0.1',
        GRPC_PORT: String(grpcPort),
        DEBUG_HOST: '127.0.0.1',
        DEBUG_PORT: '0',
        RUNTIME_ROOT: runtime,
        RUNTIME_SUBDIRECTORY: '',
        RUNTIME_WATCH_ROOT: 'false',
        BACKEND_TYPE: 'redis',
        REDIS_SOCKET_TYPE: 'tcp',
        REDIS_URL: redis.hostPort,
        // As bench/ratelimit: no stats export. `USE_STATSD=false` alone writes a JSON line per
        // decision (the response-time timer) to standard output, which no deployment does.
        USE_STATSD: 'false',
        DISABLE_STATS: 'true',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  )
  const nodeArgs = serverNodeArgs()
  const plain = startAuth(base(plainPort), nodeArgs)
  const limited = startAuth(limitedEnv, nodeArgs)
  const plainHttp = new JsonClient('127.0.0.1', plainPort, CONCURRENCY)
  const limitedHttp = new JsonClient('127.0.0.1', limitedPort, CONCURRENCY)
  // CPU per operation of every process involved (the service with its workers).
  const cpu: CpuProbes = {
    bench: () => processCpuMs('self'),
    'auth (no limits)': () => processCpuMs(plain.child.pid ?? 0),
    'auth (limited)': () => processCpuMs(limited.child.pid ?? 0),
    ratelimit: () => processTreeCpuMs(service.pid ?? 0),
    redis: () =>
      matchingProcessesCpuMs(
        (command) =>
          command.startsWith('redis-server') && command.includes(`:${String(redis.port)}`),
      ),
    postgres: databaseBackendsCpuProbe(database.name),
  }
  try {
    await waitFor(
      async () => (await fetch(`http://127.0.0.1:${String(httpPort)}/healthcheck`)).ok,
      { timeout: 30_000, what: 'gatehouse-ratelimit' },
    )
    await Promise.all([plain.ready, limited.ready])
    let key = 0
    const client = (): Record<string, string> => ({ 'x-real-ip': `bench-${String(key++)}` })
    const signInBody = (w: number) => ({
      email: `bench${String(w)}@example.com`,
      password: PASSWORD,
    })
    const chains = (
      await Promise.all(
        Array.from({ length: CONCURRENCY }, (_, w) =>
          plainHttp.send<Tokens>('POST', '/signup', signInBody(w)),
        ),
      )
    ).map((t) => t.refresh_token)
    // Resident memory: idle now, then the peak under load, of both auth servers and the service.
    const servicePid = service.pid ?? 0
    const memory = startMemorySampler({
      'auth server (no limits)': () => rssKiB(plain.child.pid ?? 0),
      'auth server (limited)': () => rssKiB(limited.child.pid ?? 0),
      'rate limit service primary': () => rssKiB(servicePid),
      'rate limit service workers (all)': () => treeRssKiB(servicePid) - rssKiB(servicePid),
    })

    /** Limited against unlimited, `op` on each server in alternating slices. */
    const compare = async (
      name: string,
      warmupMs: number,
      op: (http: JsonClient, w: number, headers: Record<string, string>) => Promise<void>,
    ) => {
      if (PREWARM_MS > 0) {
        console.log(`${name}: ${String(PREWARM_MS)} ms of unmeasured load on each server first`)
        await runLoad(CONCURRENCY, PREWARM_MS, 0, (w) => op(plainHttp, w, {}))
        await runLoad(CONCURRENCY, PREWARM_MS, 0, (w) => op(limitedHttp, w, client()))
      }
      return compareRounds(
        name,
        () => runLoad(CONCURRENCY, SLICE_MS, warmupMs, (w) => op(plainHttp, w, {}), cpu),
        () => runLoad(CONCURRENCY, SLICE_MS, warmupMs, (w) => op(limitedHttp, w, client()), cpu),
        { rounds: ROUNDS, sliceMs: SLICE_MS, names: { figure: 'limited', baseline: 'unlimited' } },
      )
    }
    const signIn = ONLY.has('sign-in')
      ? await compare('sign-in', SLOW_WARMUP_MS, async (http, w, headers) => {
          await http.send('POST', '/token?grant_type=password', signInBody(w), undefined, headers)
        })
      : undefined
    const refresh = ONLY.has('refresh')
      ? await compare('refresh', WARMUP_MS, async (http, w, headers) => {
          const body = { refresh_token: chains[w] }
          const t = await http.send<Tokens>(
            'POST',
            '/token?grant_type=refresh_token',
            body,
            undefined,
            headers,
          )
          chains[w] = t.refresh_token
        })
      : undefined

    const c = String(CONCURRENCY)
    const loads = [...(signIn?.loads ?? []), ...(refresh?.loads ?? [])]
    const rows: ResultRow[] = []
    if (signIn) {
      rows.push({
        figure: `password sign-ins/s, RATE_LIMIT_BACKEND=ratelimit, c=${c} (rounds ${spread(signIn)})`,
        value: rate(signIn.figure),
        baseline: 'the same without limits',
        baselineValue: rate(signIn.baseline),
        unit: '/s',
      })
    }
    if (refresh) {
      rows.push({
        figure: `refresh rotations/s, RATE_LIMIT_BACKEND=ratelimit, c=${c} (rounds ${spread(refresh)})`,
        value: rate(refresh.figure),
        baseline: 'the same without limits',
        baselineValue: rate(refresh.baseline),
        unit: '/s',
      })
    }
    console.log(
      `\n${new Date().toISOString()} — ${machineInfo()}; load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}\n`,
    )
    console.log(markdownTable(rows))
    console.log('\nTargets: sign-in ≥ 95 %, refresh ≥ 90 % of the same without limits.')
    console.log(`\n${memoryTable(memory.stop())}`)
  } finally {
    plainHttp.close()
    limitedHttp.close()
    await Promise.all([stopChild(plain.child), stopChild(limited.child), stopChild(service)])
    await redis.stop()
    rmSync(runtime, { recursive: true, force: true })
    await database.drop()
  }
}

await main()
