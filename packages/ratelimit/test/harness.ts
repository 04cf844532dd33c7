/**
 * Starts the service in-process for integration tests: a temporary runtime directory with the
 * given config files, settings from an env map (loopback, port 0, memory backend and
 * RUNTIME_WATCH_ROOT=false unless overridden), a fake clock, and clients for gRPC (through the
 * proto files), HTTP and the debug port.
 */
import { FakeClock, getFreePorts, startProcess, type ManagedProcess } from '@gatehouse/testing'
import * as grpc from '@grpc/grpc-js'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pino } from 'pino'
import { buildRateLimitApp, type AppDeps, type RateLimitApp } from '#internal/app.js'
import { loadSettings } from '#internal/settings/settings.js'
import { NullSink } from '#internal/stats/sinks.js'
import { protoClient, type ProtoClient } from './proto.js'

/** Options of {@link startService}. */
export interface StartOptions {
  /** Environment overrides (settings). */
  readonly env?: Record<string, string>
  /** Config files by path relative to the app directory (`config/`). */
  readonly files?: Record<string, string>
  /** Start time of the fake clock. */
  readonly now?: number
  /** Extra dependencies. */
  readonly deps?: AppDeps
  /** Credentials of {@link Harness.client}. @default plaintext */
  readonly credentials?: grpc.ChannelCredentials
}

/** An HTTP answer. */
export interface HttpAnswer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

/** A running service. */
export interface Harness {
  readonly app: RateLimitApp
  readonly clock: FakeClock
  /** The runtime root (RUNTIME_ROOT). */
  readonly root: string
  /** The app directory holding the config files. */
  readonly configDir: string
  readonly grpcAddress: string
  readonly httpUrl: string
  readonly debugUrl: string
  readonly client: ProtoClient
  /** POSTs a body to `/json`. */
  json(body: string | Buffer | object): Promise<HttpAnswer>
  /** GETs a path of the HTTP (default) or debug server. */
  get(path: string, server?: 'http' | 'debug'): Promise<HttpAnswer>
  /** Current value of a counter or gauge (0 when absent). */
  stat(name: string): number
  /** Writes (or replaces) a config file. */
  writeConfig(path: string, content: string): void
  close(): Promise<void>
}

/** Starts the service. */
export async function startService(options: StartOptions = {}): Promise<Harness> {
  const root = mkdtempSync(join(tmpdir(), 'gatehouse-ratelimit-'))
  const configDir = join(root, 'config')
  mkdirSync(configDir, { recursive: true })
  const writeConfig = (path: string, content: string): void => {
    mkdirSync(dirname(join(configDir, path)), { recursive: true })
    writeFileSync(join(configDir, path), content)
  }
  for (const [path, content] of Object.entries(options.files ?? {})) writeConfig(path, content)

  const settings = loadSettings({
    ...(await loopbackEnv(root)).env,
    BACKEND_TYPE: 'memory',
    USE_STATSD: 'false',
    EXPIRATION_JITTER_MAX_SECONDS: '0',
    ...options.env,
  })
  const clock = new FakeClock(options.now ?? Date.UTC(2026, 0, 1, 0, 0, 0))
  const app = buildRateLimitApp(settings, {
    clock,
    logger: pino({ level: 'silent' }),
    statsSink: new NullSink(),
    ...options.deps,
  })
  let ports: Awaited<ReturnType<RateLimitApp['listen']>>
  try {
    ports = await app.listen()
  } catch (error) {
    // A service that cannot start leaves nothing behind.
    await app.close(0)
    rmSync(root, { recursive: true, force: true })
    throw error
  }
  const grpcAddress =
    settings.grpcUds !== '' ? `unix:${settings.grpcUds}` : `127.0.0.1:${String(ports.grpc)}`
  const httpUrl = `http://127.0.0.1:${String(ports.http)}`
  const debugUrl = `http://127.0.0.1:${String(ports.debug)}`
  const client = protoClient(grpcAddress, options.credentials)
  const answer = async (response: Response): Promise<HttpAnswer> => ({
    status: response.status,
    headers: response.headers,
    text: await response.text(),
  })
  return {
    app,
    clock,
    root,
    configDir,
    grpcAddress,
    httpUrl,
    debugUrl,
    client,
    writeConfig,
    json: async (body) =>
      answer(
        await fetch(`${httpUrl}/json`, {
          method: 'POST',
          body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
        }),
      ),
    get: async (path, server = 'http') =>
      answer(await fetch(`${server === 'http' ? httpUrl : debugUrl}${path}`)),
    stat: (name) => app.stats.snapshot().find((s) => s.name === name)?.value ?? 0,
    close: async () => {
      client.close()
      await app.close(2000)
      rmSync(root, { recursive: true, force: true })
    },
  }
}

/** The gRPC error a call ends with; throws when the call succeeds. */
export async function grpcError(promise: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await promise
  } catch (error) {
    return error as grpc.ServiceError
  }
  throw new Error('expected a gRPC error')
}

/** Sends raw request bytes to ShouldRateLimit; resolves with the error (null on success). */
export function rawShouldRateLimit(
  address: string,
  bytes: Buffer,
): Promise<grpc.ServiceError | null> {
  const Client = grpc.makeGenericClientConstructor({}, 'Raw')
  const raw = new Client(address, grpc.credentials.createInsecure())
  return new Promise((resolve) => {
    raw.makeUnaryRequest(
      '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
      (b: Buffer) => b,
      (b: Buffer) => b,
      bytes,
      (error) => {
        raw.close()
        resolve(error)
      },
    )
  })
}

const PACKAGE = fileURLToPath(new URL('../', import.meta.url))

/** Runs the `gatehouse-ratelimit` executable from source (as the bin does from dist) with `env`. */
export function spawnService(env: Record<string, string>): Promise<ManagedProcess> {
  return startProcess(
    process.execPath,
    ['--import', 'tsx', '--conditions', 'dev-source', join(PACKAGE, 'src/main.ts')],
    { env: { ...process.env, ...env } },
  )
}

/** Resolves with the exit code of a spawned process (null when a signal ended it). */
export function exitCode(p: ManagedProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (p.child.exitCode !== null) resolve(p.child.exitCode)
    else
      p.child.once('exit', (code) => {
        resolve(code)
      })
  })
}

/**
 * Settings that put the three listeners on loopback, on free ports (known before the start, as a
 * spawned executable needs), with the runtime root `root` not watched; also the ports.
 */
export async function loopbackEnv(root: string) {
  const [port, grpcPort, debugPort] = (await getFreePorts(3)) as [number, number, number]
  const env = {
    HOST: '127.0.0.1',
    PORT: String(port),
    GRPC_HOST: '127.0.0.1',
    GRPC_PORT: String(grpcPort),
    DEBUG_HOST: '127.0.0.1',
    DEBUG_PORT: String(debugPort),
    RUNTIME_ROOT: root,
    RUNTIME_WATCH_ROOT: 'false',
  }
  return { port, grpcPort, debugPort, env }
}
