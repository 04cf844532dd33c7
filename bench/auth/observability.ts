/**
 * `bench/auth/run.ts --observability` (bench/auth/README.md, "Observability"): what telemetry
 * costs the auth server. Two servers on one database, slices alternating: the defaults (tracing
 * and metrics off), and the same with Prometheus metrics on (`METRICS_EXPORTER=prometheus`,
 * scraped once per slice as Prometheus would) and tracing at `TRACING_SAMPLING_RATE=0.01`
 * exporting to a local OTLP/HTTP sink. Figures: refresh rotations/s (the most SQL per request,
 * so the most database spans) and `GET /user` req/s (the cheapest request, so the largest share
 * of the per-request hooks).
 */
import { createTestDatabase, getFreePort } from '@gatehouse/testing'
import { startOtlpSink } from '../lib/otlp-sink.js'
import { machineInfo, markdownTable, type ResultRow } from '../lib/report.js'
import { requireTools } from '../lib/tools.js'
import { JsonClient, runLoad } from './load.js'
import { compareRounds, rate, spread } from './rounds.js'
import { benchAuthEnv, buildPackages, startAuth, stopChild } from './server.js'
import { randomRequestsScript, runWrk } from './wrk.js'
import { CONCURRENCY, PASSWORD, ROUNDS, SLICE_MS, WARMUP_MS } from './settings.js'

/** Two servers share PostgreSQL's 100 connections with the other engineers' tests. */
const POOL_SIZE = String(Math.min(CONCURRENCY, 30))

interface Tokens {
  access_token: string
  refresh_token: string
}

/** Runs the comparison and prints its table. */
export async function runObservability(): Promise<void> {
  requireTools([{ command: 'wrk', debianPackage: 'wrk' }])
  buildPackages('auth')
  const database = await createTestDatabase('bench_auth_obs')
  const sink = await startOtlpSink()
  const [plainPort, obsPort, metricsPort] = await Promise.all([
    getFreePort(),
    getFreePort(),
    getFreePort(),
  ])
  const base = (port: number): Record<string, string> => ({
    ...benchAuthEnv(port, database.url, POOL_SIZE),
    AUTHSVC_RATE_LIMIT_PASSWORD_FAILURES: '0',
  })
  const plain = startAuth(base(plainPort))
  const obs = startAuth({
    ...base(obsPort),
    AUTHSVC_METRICS_ENABLED: 'true',
    AUTHSVC_METRICS_EXPORTER: 'prometheus',
    OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
    OTEL_EXPORTER_PROMETHEUS_PORT: String(metricsPort),
    AUTHSVC_TRACING_ENABLED: 'true',
    AUTHSVC_TRACING_SAMPLING_RATE: '0.01',
    OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
    // BENCH_OBSERVABILITY_ENV="KEY=value …" changes the observed server (one part at a time).
    ...Object.fromEntries(
      (process.env.BENCH_OBSERVABILITY_ENV ?? '')
        .split(' ')
        .filter(Boolean)
        .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
    ),
  })
  const metricsUrl = `http://127.0.0.1:${String(metricsPort)}/`
  const plainHttp = new JsonClient('127.0.0.1', plainPort, CONCURRENCY)
  const obsHttp = new JsonClient('127.0.0.1', obsPort, CONCURRENCY)
  try {
    await Promise.all([plain.ready, obs.ready])
    const users = await Promise.all(
      Array.from({ length: CONCURRENCY }, (_, w) =>
        plainHttp.send<Tokens>('POST', '/signup', {
          email: `bench${String(w)}@example.com`,
          password: PASSWORD,
        }),
      ),
    )
    const chains = users.map((u) => u.refresh_token)
    const rotate = async (http: JsonClient, w: number): Promise<void> => {
      const t = await http.send<Tokens>('POST', '/token?grant_type=refresh_token', {
        refresh_token: chains[w],
      })
      chains[w] = t.refresh_token
    }
    const scrape = async (): Promise<void> => {
      const res = await fetch(metricsUrl)
      if (!res.ok) throw new Error(`scrape: ${String(res.status)}`)
      await res.text()
    }
    const names = { figure: 'observability', baseline: 'defaults' }
    const refresh = await compareRounds(
      'refresh',
      () => runLoad(CONCURRENCY, SLICE_MS, WARMUP_MS, (w) => rotate(plainHttp, w)),
      async () => {
        await scrape()
        return runLoad(CONCURRENCY, SLICE_MS, WARMUP_MS, (w) => rotate(obsHttp, w))
      },
      { rounds: ROUNDS, sliceMs: SLICE_MS, names },
    )

    const script = (port: number): string =>
      randomRequestsScript(
        `127.0.0.1:${String(port)}`,
        users.map((u) => ({
          method: 'GET',
          path: '/user',
          headers: { Authorization: `Bearer ${u.access_token}` },
        })),
      )
    const getUser = await compareRounds(
      'GET /user',
      () => {
        runWrk(`127.0.0.1:${String(plainPort)}`, CONCURRENCY, WARMUP_MS, script(plainPort))
        return Promise.resolve(
          runWrk(`127.0.0.1:${String(plainPort)}`, CONCURRENCY, SLICE_MS, script(plainPort)),
        )
      },
      async () => {
        await scrape()
        runWrk(`127.0.0.1:${String(obsPort)}`, CONCURRENCY, WARMUP_MS, script(obsPort))
        return runWrk(`127.0.0.1:${String(obsPort)}`, CONCURRENCY, SLICE_MS, script(obsPort))
      },
      { rounds: ROUNDS, sliceMs: SLICE_MS, names },
    )
    const scraped = await (await fetch(metricsUrl)).text()
    if (!scraped.includes('http_server_request_duration_count')) {
      throw new Error('the observability server exports no request metrics')
    }

    const c = String(CONCURRENCY)
    const loads = [...refresh.loads, ...getUser.loads]
    const rows: ResultRow[] = [
      {
        figure: `refresh rotations/s, Prometheus + tracing 1%, c=${c} (rounds ${spread(refresh)})`,
        value: rate(refresh.figure),
        baseline: 'the same server with the defaults (telemetry off)',
        baselineValue: rate(refresh.baseline),
        unit: '/s',
      },
      {
        figure: `GET /user req/s, Prometheus + tracing 1%, c=${c} (rounds ${spread(getUser)})`,
        value: rate(getUser.figure),
        baseline: 'the same server with the defaults (telemetry off)',
        baselineValue: rate(getUser.baseline),
        unit: '/s',
      },
    ]
    console.log(
      `\n${new Date().toISOString()} — ${machineInfo()}; load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}; pools of ${POOL_SIZE}\n`,
    )
    console.log(markdownTable(rows))
    console.log('\nTarget: telemetry costs under 5 % of throughput.')
  } finally {
    plainHttp.close()
    obsHttp.close()
    await Promise.all([stopChild(plain.child), stopChild(obs.child)])
    // The server's shutdown exports the spans still batched.
    const exports = sink.exports()
    sink.close()
    await database.drop()
    if (exports === 0) console.log('warning: no OTLP export reached the sink')
    else console.log(`OTLP exports received by the sink: ${String(exports)}`)
  }
}
