/**
 * A real `gatehouse-ratelimit` process for the auth server's shared-limit tests: its own config
 * directory (the auth server's generated YAML), on a Redis of the caller's, on random loopback
 * ports; stopped (or killed) and started again by the test.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  getFreePorts,
  startProcess,
  waitFor,
  type ManagedProcess,
  type TestRedisServer,
} from '@gatehouse/testing'

const RATELIMIT_MAIN = fileURLToPath(new URL('../../../ratelimit/src/main.ts', import.meta.url))

/** A running (or stopped) rate limit service; see {@link startRateLimitService}. */
export interface RateLimitService {
  /** `127.0.0.1:<port>` of its gRPC listener: `RATE_LIMIT_SERVICE_ADDRESS`. */
  readonly address: string
  /** Starts it again on the same ports and config (after {@link RateLimitService.stop}). */
  start(): Promise<void>
  /** Stops it (`SIGKILL`: as a crash). */
  stop(signal?: NodeJS.Signals): Promise<void>
  /** Stops it and removes its config directory. */
  close(): Promise<void>
}

/**
 * Starts `gatehouse-ratelimit` with `configs` (file name → YAML) in its runtime directory and
 * waits for its health check.
 *
 * @param options `env`: more variables of the service (`MAX_DESCRIPTOR_ENTRY_BYTES`, …);
 *   `grpcPort`: its gRPC port, when the auth servers were configured first (default: a free one).
 */
export async function startRateLimitService(
  redis: TestRedisServer,
  configs: Readonly<Record<string, string>>,
  options: { readonly env?: Readonly<Record<string, string>>; readonly grpcPort?: number } = {},
): Promise<RateLimitService> {
  const { env = {} } = options
  const [freeGrpc, httpPort] = (await getFreePorts(2)) as [number, number]
  const grpcPort = options.grpcPort ?? freeGrpc
  const root = mkdtempSync(join(tmpdir(), 'gatehouse-auth-rl-'))
  mkdirSync(join(root, 'config'))
  for (const [name, yaml] of Object.entries(configs)) {
    writeFileSync(join(root, 'config', name), yaml)
  }
  let running: ManagedProcess | undefined
  const service: RateLimitService = {
    address: `127.0.0.1:${String(grpcPort)}`,
    async start() {
      const started = await startProcess(process.execPath, ['--import', 'tsx', RATELIMIT_MAIN], {
        env: {
          ...process.env,
          HOST: '127.0.0.1',
          PORT: String(httpPort),
          GRPC_HOST: '127.0.0.1',
          GRPC_PORT: String(grpcPort),
          DEBUG_HOST: '127.0.0.1',
          DEBUG_PORT: '0',
          RUNTIME_ROOT: root,
          RUNTIME_SUBDIRECTORY: '',
          RUNTIME_APPDIRECTORY: 'config',
          RUNTIME_WATCH_ROOT: 'false',
          BACKEND_TYPE: 'redis',
          REDIS_SOCKET_TYPE: 'tcp',
          REDIS_URL: redis.hostPort,
          USE_STATSD: 'false',
          LOG_LEVEL: 'warn',
          ...env,
        },
      })
      running = started
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${String(httpPort)}/healthcheck`)).ok,
        // Generous: it compiles its sources with tsx, slow on a busy 2-core machine.
        { what: () => `gatehouse-ratelimit (output: ${started.output()})`, timeout: 90_000 },
      )
    },
    async stop(signal) {
      await running?.stop(signal)
      running = undefined
    },
    async close() {
      await service.stop()
      rmSync(root, { recursive: true, force: true })
    },
  }
  await service.start()
  return service
}
