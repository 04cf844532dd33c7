/**
 * The `gatehouse-ratelimit` executable: runs its command line (`cli.ts`: `--help`, `--version`,
 * `--env-file`), reads settings from the environment, builds the service,
 * listens, and stops gracefully on SIGTERM/SIGINT/SIGHUP (health turns unhealthy, in-flight calls
 * drain, exit 0). Invalid settings (and unreadable gRPC TLS files): one message listing every
 * problem, exit 2. A backend that does not answer within `BACKEND_STARTUP_TIMEOUT_SECONDS` (each
 * failed attempt is a `warn` line), a port in use, or any other failure to start: one line
 * naming the setting to fix and the cause, exit 1. With
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
import {
  buildRateLimitApp,
  checkTlsFiles,
  loadMetricMapper,
  statsSinkKind,
  waitForBackendAtStart,
  type RateLimitApp,
} from './app.js'
import { systemClock } from './clock.js'
import { createLogger, sharedLinesLogger } from './logging.js'
import { buildPrometheusServer, listenPrometheus } from './stats/prometheus.js'
import {
  clusterStatsSource,
  PrimaryForwardingSink,
  printWorkerStats,
  serveClusterStats,
  workerExitVerdict,
} from './server/workers.js'
import { StreamSink } from './stats/sinks.js'
import { runServiceCli } from './cli.js'
import { loadSettings, type Settings } from './settings/settings.js'

const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const
/** What a worker tells the primary once all its listeners are bound. */
const READY = 'gatehouse-ratelimit:ready'
/**
 * Set (to `1`) in the environment of the worker that writes the lines all workers would write
 * alike (`sharedLinesLogger`): the first one, then whichever replaces it.
 */
const LEAD_WORKER = 'GATEHOUSE_RATELIMIT_LEAD_WORKER'

/** Invalid settings (or unusable TLS files) end the start: every problem, exit 2. */
function exitIfInvalidSettings(error: unknown): void {
  if (error instanceof SettingsError) {
    console.error(`gatehouse-ratelimit: ${error.message}`)
    process.exit(SETTINGS_EXIT_STATUS)
  }
}

/** Any other failure to start: one line (the error names the setting to fix), exit 1. */
function exitCannotStart(error: unknown): never {
  console.error(`gatehouse-ratelimit: cannot start: ${(error as Error).message}`)
  process.exit(1)
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
  const worker = cluster.worker
  const logger =
    worker === undefined
      ? undefined
      : createLogger({ level: settings.logLevel, format: settings.logFormat })
  const workerDeps =
    worker === undefined || logger === undefined
      ? {}
      : {
          logger,
          sharedLogger: sharedLinesLogger(logger, process.env[LEAD_WORKER] === '1', worker.id),
          statsListing: clusterStatsSource(process, () => app?.stats.snapshot() ?? []),
          prometheusServedByPrimary: true,
          // Standard-output stats are printed once, for all workers, by the primary.
          ...(statsSinkKind(settings) === 'stdout'
            ? { statsSink: new PrimaryForwardingSink(process) }
            : {}),
        }
  try {
    app = buildRateLimitApp(settings, workerDeps)
    if (cluster.isWorker && app.prometheusRegistry !== undefined) {
      // Constructing one installs prom-client's answer to the primary's requests.
      new AggregatorRegistry()
      AggregatorRegistry.setRegistries([app.prometheusRegistry])
    }
  } catch (error) {
    exitIfInvalidSettings(error)
    exitCannotStart(error)
  }
  const state = { stopping: false }
  const stop = (signal: string): void => {
    if (state.stopping) return
    state.stopping = true
    app.sharedLogger.warn(`${signal} received, draining and shutting down`)
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
    await app.close(0).catch(() => undefined)
    exitCannotStart(error)
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

/**
 * Forks the workers, replaces any that die once serving, and passes signals on.
 *
 * @param beforeExit Called once every worker has exited, before the primary exits.
 */
function supervise(workers: number, beforeExit: () => void): void {
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
  let lead = cluster.fork({ [LEAD_WORKER]: '1' }).id
  for (let i = 1; i < workers; i++) cluster.fork({ [LEAD_WORKER]: '0' })
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
        if (worker.id === lead) lead = cluster.fork({ [LEAD_WORKER]: '1' }).id
        else cluster.fork({ [LEAD_WORKER]: '0' })
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
    if (Object.keys(cluster.workers ?? {}).length === 0) {
      beforeExit()
      process.exit(failed ? 1 : 0)
    }
  })
  for (const signal of SIGNALS) {
    process.on(signal, () => {
      stopAll(signal)
    })
  }
}

/**
 * Before forking: unusable TLS files end the start here, with exit 2 (workers would exit 1), and
 * the backend is waited for here, once (workers would each log every attempt).
 */
async function checkBeforeForking(settings: Readonly<Settings>): Promise<void> {
  const logger = createLogger({ level: settings.logLevel, format: settings.logFormat })
  try {
    checkTlsFiles(settings, logger)
  } catch (error) {
    exitIfInvalidSettings(error)
    throw error
  }
  // A signal while waiting stops the start, as it does in a single process.
  const exitNow = (): void => process.exit(0)
  for (const signal of SIGNALS) process.on(signal, exitNow)
  try {
    // Its warnings only: the first worker tells when the backend is connected.
    const quiet = logger.child({}, { level: logger.levelVal > 40 ? logger.level : 'warn' })
    await waitForBackendAtStart(settings, quiet)
  } catch (error) {
    exitCannotStart(error)
  }
  for (const signal of SIGNALS) process.off(signal, exitNow)
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
  await checkBeforeForking(settings)
  if (settings.usePrometheus && !settings.disableStats) {
    try {
      loadMetricMapper(settings) // a bad mapping file ends the start here, with exit 2
    } catch (error) {
      exitIfInvalidSettings(error)
      throw error
    }
    servePrometheusForWorkers(settings)
  }
  const printed =
    statsSinkKind(settings) === 'stdout'
      ? printWorkerStats(
          cluster,
          new StreamSink(process.stdout, systemClock),
          settings.statsFlushIntervalMs,
        )
      : undefined
  supervise(settings.workers, () => printed?.flush())
} else await serve(settings)
