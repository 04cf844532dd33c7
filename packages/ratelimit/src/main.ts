/**
 * The `gatehouse-ratelimit` executable: runs its command line (`cli.ts`: `--help`, `--version`,
 * `--env-file`), reads settings from the environment, builds the service,
 * listens, and stops gracefully on SIGTERM/SIGINT/SIGHUP (health turns unhealthy, in-flight calls
 * drain, exit 0). Invalid settings (and unreadable gRPC TLS files): one message listing every
 * problem, exit 2. With
 * `RATELIMIT_WORKERS` > 1 the primary process forks that many workers sharing the ports and
 * forwards signals to them; when the workers fill the host's cores they run with V8's
 * single-threaded GC (helper threads would only compete with the other workers; measured: about
 * 15% more decisions/s on 2 cores). A worker that exits before all its listeners are bound stops them all
 * (exit 1) instead of being restarted in a loop. Runs when imported.
 *
 * @module
 */
import cluster from 'node:cluster'
import { availableParallelism } from 'node:os'
import { SETTINGS_EXIT_STATUS, SettingsError } from '@gatehouse/settings'
import { AggregatorRegistry } from 'prom-client'
import { buildRateLimitApp, checkTlsFiles, loadMetricMapper, type RateLimitApp } from './app.js'
import { createLogger } from './logging.js'
import { buildPrometheusServer, listenPrometheus } from './stats/prometheus.js'
import { clusterStatsSource, serveClusterStats, workerExitVerdict } from './server/workers.js'
import { runServiceCli } from './cli.js'
import { loadSettings, type Settings } from './settings/settings.js'

const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const
/** What a worker tells the primary once all its listeners are bound. */
const READY = 'gatehouse-ratelimit:ready'

/** Invalid settings (or unusable TLS files) end the start: every problem, exit 2. */
function exitIfInvalidSettings(error: unknown): void {
  if (error instanceof SettingsError) {
    console.error(`gatehouse-ratelimit: ${error.message}`)
    process.exit(SETTINGS_EXIT_STATUS)
  }
}

function readSettings(env: Readonly<Record<string, string | undefined>>): Readonly<Settings> {
  try {
    return loadSettings(env, { availableCores: availableParallelism() })
  } catch (error) {
    exitIfInvalidSettings(error)
    throw error
  }
}

/** Runs the service in this process. */
async function serve(settings: Readonly<Settings>): Promise<void> {
  let app: RateLimitApp | undefined
  // A worker's /stats and Prometheus metrics are summed over all workers by the primary.
  const workerDeps = cluster.isWorker
    ? {
        statsListing: clusterStatsSource(process, () => app?.stats.snapshot() ?? []),
        prometheusServedByPrimary: true,
      }
    : {}
  try {
    app = buildRateLimitApp(settings, workerDeps)
    if (cluster.isWorker && app.prometheusRegistry !== undefined) {
      // Constructing one installs prom-client's answer to the primary's requests.
      new AggregatorRegistry()
      AggregatorRegistry.setRegistries([app.prometheusRegistry])
    }
  } catch (error) {
    exitIfInvalidSettings(error)
    console.error(`gatehouse-ratelimit: cannot start: ${(error as Error).message}`)
    process.exit(1)
  }
  const state = { stopping: false }
  const stop = (signal: string): void => {
    if (state.stopping) return
    state.stopping = true
    app.logger.warn(`${signal} received, draining and shutting down`)
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        app.logger.error({ err: error }, 'error during shutdown')
        process.exit(1)
      },
    )
  }
  for (const signal of SIGNALS) {
    process.on(signal, () => {
      stop(signal)
    })
  }
  try {
    await app.listen()
    if (cluster.isWorker) process.send?.(READY)
  } catch (error) {
    if (state.stopping) return // SIGTERM while waiting for the backend: close() exits.
    app.logger.fatal({ err: error }, `cannot start: ${(error as Error).message}`)
    await app.close(0).catch(() => undefined)
    process.exit(1)
  }
}

/**
 * The primary's scrape endpoint (`USE_PROMETHEUS` with several workers): prom-client's
 * AggregatorRegistry asks every worker for its registry over the cluster channel and sums them.
 */
function servePrometheusForWorkers(settings: Readonly<Settings>): void {
  const aggregator = new AggregatorRegistry()
  const server = buildPrometheusServer(
    settings.prometheusPath,
    () => aggregator.clusterMetrics(),
    (error) => {
      console.error(`gatehouse-ratelimit: cannot collect the workers' metrics: ${String(error)}`)
    },
  )
  server.unref()
  listenPrometheus(server, settings.prometheusAddr).catch((error: unknown) => {
    console.error(`gatehouse-ratelimit: cannot listen on PROMETHEUS_ADDR: ${String(error)}`)
    process.exit(1)
  })
}

/** Forks the workers, replaces any that die once serving, and passes signals on. */
function supervise(workers: number): void {
  let stopSignal: NodeJS.Signals | undefined
  let failed = false
  if (workers >= availableParallelism()) {
    cluster.setupPrimary({ execArgv: [...process.execArgv, '--single-threaded-gc'] })
  }
  serveClusterStats(cluster)
  const listening = new Set<number>()
  const stopAll = (signal: NodeJS.Signals): void => {
    stopSignal ??= signal
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal)
  }
  for (let i = 0; i < workers; i++) cluster.fork()
  cluster.on('message', (worker, message) => {
    if (message === READY) listening.add(worker.id)
  })
  cluster.on('exit', (worker, code, signal) => {
    const how = signal || `code ${String(code)}`
    const verdict = workerExitVerdict({
      stopping: stopSignal !== undefined,
      stopSignal,
      serving: listening.has(worker.id),
      code,
      signal: signal as NodeJS.Signals | null,
    })
    if (verdict.failed) failed = true
    switch (verdict.action) {
      case 'restart':
        console.error(
          `gatehouse-ratelimit: worker ${String(worker.process.pid)} exited (${how}); starting another`,
        )
        cluster.fork()
        return
      case 'stop':
        // It could not start (its error is on standard error): restarting would loop.
        console.error(
          `gatehouse-ratelimit: worker ${String(worker.process.pid)} exited (${how}) before serving; stopping`,
        )
        stopAll('SIGTERM')
        break
      case 'drained':
        break
    }
    if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(failed ? 1 : 0)
  })
  for (const signal of SIGNALS) {
    process.on(signal, () => {
      stopAll(signal)
    })
  }
}

/** Before forking: unusable TLS files end the start here, with exit 2 (workers would exit 1). */
function checkFiles(settings: Readonly<Settings>): void {
  try {
    checkTlsFiles(settings, createLogger({ level: settings.logLevel, format: settings.logFormat }))
  } catch (error) {
    exitIfInvalidSettings(error)
    throw error
  }
}

// --help, --version, a refused command line, check; the variables with --env-file's (each worker
// reads it again).
const cli = await runServiceCli(
  process.argv.slice(2),
  process.env,
  {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
  },
  { availableCores: availableParallelism() },
)
if ('exitCode' in cli) process.exit(cli.exitCode)
const settings = readSettings(cli.serve)
if (settings.workers > 1 && cluster.isPrimary) {
  checkFiles(settings)
  if (settings.usePrometheus && !settings.disableStats) {
    try {
      loadMetricMapper(settings) // a bad mapping file ends the start here, with exit 2
    } catch (error) {
      exitIfInvalidSettings(error)
      throw error
    }
    servePrometheusForWorkers(settings)
  }
  supervise(settings.workers)
} else await serve(settings)
