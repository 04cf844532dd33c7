import { randomUUID } from 'node:crypto'
import { probeTcp, type FreePortsOptions } from './net.js'
import { startServerOnFreePort } from './server-process.js'

/**
 * A unique Redis key prefix for one test file or test, so tests can share the machine's Redis
 * (127.0.0.1:6379) without seeing each other's keys.
 *
 * @param label Readable part of the prefix, such as the test file's name.
 * @returns A string like `test:ratelimit:1f0c…:` (ends with a colon).
 */
export function redisKeyPrefix(label = 'gatehouse'): string {
  return `test:${label}:${randomUUID()}:`
}

/**
 * The shared Redis of the machine, for tests that only need a key prefix:
 * `TEST_REDIS_URL`, default `redis://127.0.0.1:6379`.
 */
export function sharedRedisUrl(env: NodeJS.ProcessEnv = process.env): string {
  return env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
}

/** A `redis-server` of a test's own, on a random loopback port. */
export interface TestRedisServer {
  readonly host: string
  readonly port: number
  /** `redis://127.0.0.1:<port>` */
  readonly url: string
  /** `127.0.0.1:<port>`, the `host:port` form envoy-style settings use. */
  readonly hostPort: string
  /** Stops the server (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>
  /** Kills the server abruptly (SIGKILL), as a crash would. */
  kill(): Promise<void>
  /** Starts it again on the same port (after `stop` or `kill`); resolves when it answers PING. */
  restart(): Promise<void>
}

/** Options of {@link startRedisServer}. */
export interface StartRedisOptions {
  /** Extra `redis-server` arguments, such as `['--requirepass', 'secret']`. */
  args?: readonly string[]
  /** Executable. @default 'redis-server' */
  command?: string
  /** How its port is found (a cluster node needs its bus port, 10000 above, free too). */
  ports?: FreePortsOptions
}

/**
 * Starts an own `redis-server` on a random loopback port, without persistence, and resolves once
 * it answers `PING`. Use it where a test needs isolation beyond a key prefix (FLUSHALL, killing
 * and restarting the server, authentication).
 *
 * @throws {Error} When `redis-server` is missing, exits before it answers on three ports in turn,
 *   or does not come up within 10 s.
 */
export async function startRedisServer(options: StartRedisOptions = {}): Promise<TestRedisServer> {
  const host = '127.0.0.1'
  const command = options.command ?? 'redis-server'
  const args = (port: number): string[] => [
    '--bind',
    host,
    '--port',
    String(port),
    '--save',
    '',
    '--appendonly',
    'no',
    ...(options.args ?? []),
  ]
  const server = await startServerOnFreePort({
    name: 'redis-server',
    command,
    args,
    ready: (port) => ping(host, port),
    ...(options.ports === undefined ? {} : { ports: options.ports }),
  })
  const { port } = server
  return {
    host,
    port,
    url: `redis://${host}:${String(port)}`,
    hostPort: `${host}:${String(port)}`,
    stop: async () => server.process.stop('SIGTERM'),
    kill: async () => server.process.stop('SIGKILL'),
    restart: async () => server.restart('SIGTERM'),
  }
}

/**
 * Sends one inline `PING` and resolves true on `+PONG` (or a NOAUTH error, which also proves the
 * server is up), false on any failure. Never rejects.
 */
export async function ping(host: string, port: number): Promise<boolean> {
  return probeTcp(
    host,
    port,
    'PING\r\n',
    (reply) => reply.startsWith('+PONG') || reply.startsWith('-NOAUTH'),
  )
}
