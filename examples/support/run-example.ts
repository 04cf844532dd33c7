/**
 * Runs an example file as its README says (`node --conditions=dev-source --import tsx <file>`
 * from the repository root), with the environment it is given, answering its prompts.
 */
import { spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  getFreePort,
  redisKeyPrefix,
  sharedRedisUrl,
  startProcess,
  waitFor,
  type ManagedProcess,
} from '@gatehouse/testing'

/** The repository root. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** What an example printed, and how it ended. */
export interface ExampleRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Options of {@link runExample}. */
export interface RunExampleOptions {
  /** Variables added to this process's environment. */
  readonly env?: Readonly<Record<string, string>>
  /**
   * Called with each line the example prints (a prompt too, before its newline); a string is
   * written back to its standard input as a line.
   */
  readonly answer?: (line: string) => Promise<string | undefined> | string | undefined
  /** Killed after this long. @default 60000 */
  readonly timeoutMs?: number
}

/** Runs `file` (relative to the repository root) to its end. */
export async function runExample(
  file: string,
  options: RunExampleOptions = {},
): Promise<ExampleRun> {
  const child = spawn(
    process.execPath,
    ['--conditions=dev-source', '--import', 'tsx', join(ROOT, file)],
    { cwd: ROOT, env: { ...process.env, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] },
  )
  let stdout = ''
  let stderr = ''
  let pending = ''
  let answering = Promise.resolve()
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000)
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
    pending += chunk
    // Whole lines, and a prompt (text without a newline yet, ending in ": ").
    const parts = pending.split('\n')
    pending = parts.pop() ?? ''
    if (pending.endsWith(': ')) {
      parts.push(pending)
      pending = ''
    }
    for (const line of parts) {
      answering = answering.then(async () => {
        const reply = await options.answer?.(line)
        if (reply !== undefined) child.stdin.write(`${reply}\n`)
      })
    }
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
  clearTimeout(timer)
  await answering
  return { code, stdout, stderr }
}

/** The rate limit service an example runs, as started by {@link startRateLimitService}. */
export interface ExampleRateLimitService {
  readonly process: ManagedProcess
  /** `host:port` of its gRPC server. */
  readonly grpcAddress: string
  /** Its Redis key prefix (`CACHE_KEY_PREFIX`) on the shared Redis. */
  readonly keyPrefix: string
}

/**
 * The executable `npx <name>` runs, as `[node, script]`: the package's `bin/` launcher of the
 * built `dist/` (`npm test` builds before it tests; after a change, `npm run build`).
 */
export function executable(name: 'gatehouse-auth' | 'gatehouse-ratelimit'): [string, string] {
  const dir = name === 'gatehouse-auth' ? 'packages/auth' : 'packages/ratelimit'
  return [process.execPath, join(ROOT, dir, 'bin', `${name}.js`)]
}

/**
 * Starts `gatehouse-ratelimit` as the examples' READMEs do (`RUNTIME_ROOT`, Redis over TCP, stats
 * to standard output), on free loopback ports of its own, one worker, and a key prefix of its own
 * on the shared Redis; resolves once it is healthy.
 */
export async function startRateLimitService(runtimeRoot: string): Promise<ExampleRateLimitService> {
  const [http, grpc, debug] = [await getFreePort(), await getFreePort(), await getFreePort()]
  const keyPrefix = redisKeyPrefix('example')
  const [node, script] = executable('gatehouse-ratelimit')
  const service = await startProcess(node, [script], {
    cwd: ROOT,
    env: {
      ...process.env,
      RUNTIME_ROOT: runtimeRoot,
      RUNTIME_WATCH_ROOT: 'false',
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_URL: sharedRedisUrl(),
      USE_STATSD: 'false',
      CACHE_KEY_PREFIX: keyPrefix,
      HOST: '127.0.0.1',
      GRPC_HOST: '127.0.0.1',
      DEBUG_HOST: '127.0.0.1',
      PORT: String(http),
      GRPC_PORT: String(grpc),
      DEBUG_PORT: String(debug),
      RATELIMIT_WORKERS: '1',
    },
  })
  await waitUntilOk(`http://127.0.0.1:${String(http)}/healthcheck`, service)
  return { process: service, grpcAddress: `127.0.0.1:${String(grpc)}`, keyPrefix }
}

/** Waits until `url` answers 200, or fails with the process's output. */
export async function waitUntilOk(url: string, started: ManagedProcess): Promise<void> {
  await waitFor(async () => (await fetch(url).catch(() => undefined))?.ok === true, {
    timeout: 60_000,
    what: `${url} to answer:\n${started.output()}`,
  })
}
