/**
 * The `gatehouse-ratelimit` executable: reads settings from the environment, builds the service,
 * listens, and stops gracefully on SIGTERM/SIGINT/SIGHUP (health turns unhealthy, in-flight calls
 * drain, exit 0). Invalid settings: one message listing every problem, exit 1. Runs when imported.
 *
 * @module
 */
import { buildRateLimitApp } from './app.js'
import { ConfigError, loadSettings } from './settings/settings.js'

async function main(): Promise<void> {
  let settings
  try {
    settings = loadSettings(process.env)
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`gatehouse-ratelimit: ${error.message}`)
      process.exit(1)
    }
    throw error
  }
  let app
  try {
    app = buildRateLimitApp(settings)
  } catch (error) {
    console.error(`gatehouse-ratelimit: cannot start: ${(error as Error).message}`)
    process.exit(1)
  }
  let stopping = false
  const stop = (signal: string): void => {
    if (stopping) return
    stopping = true
    app.logger.warn(`${signal} received, draining and shutting down`)
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        app.logger.error({ err: error }, 'error during shutdown')
        process.exit(1)
      },
    )
  }
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const)
    process.on(signal, () => {
      stop(signal)
    })
  try {
    await app.listen()
  } catch (error) {
    app.logger.fatal({ err: error }, `cannot start: ${(error as Error).message}`)
    await app.close(0).catch(() => undefined)
    process.exit(1)
  }
}

await main()
