/** The auth server as the auth benchmarks run it: the compiled bin in a process of its own. */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { waitFor } from '@gatehouse/testing'

const root = fileURLToPath(new URL('../../', import.meta.url))

/** The `JWT_SECRET` of every benchmarked server (the benches sign and verify with it too). */
export const BENCH_JWT_SECRET = 'bench-secret-bench-secret-bench-secret!'

/** Compiles `packages/<name>` for each name (`tsc -b`), as the servers run from `dist/`. */
export function buildPackages(...names: string[]): void {
  for (const name of names) {
    execFileSync(
      process.execPath,
      [`${root}node_modules/typescript/bin/tsc`, '-b', `${root}packages/${name}`],
      { stdio: 'inherit' },
    )
  }
}

/**
 * The settings every benchmarked auth server runs with: loopback `port`, PostgreSQL at
 * `databaseUrl` with a pool of `poolSize` connections, auto-confirmed sign-ups, errors-only logs.
 */
export function benchAuthEnv(
  port: number,
  databaseUrl: string,
  poolSize: number | string,
): Record<string, string> {
  return {
    AUTHSVC_SITE_URL: 'http://localhost:3000',
    AUTHSVC_API_EXTERNAL_URL: `http://127.0.0.1:${String(port)}`,
    AUTHSVC_JWT_SECRET: BENCH_JWT_SECRET,
    AUTHSVC_DB_DRIVER: 'postgres',
    DATABASE_URL: databaseUrl,
    AUTHSVC_API_HOST: '127.0.0.1',
    PORT: String(port),
    AUTHSVC_MAILER_AUTOCONFIRM: 'true',
    AUTHSVC_JWT_AUD: 'authenticated',
    AUTHSVC_DB_MAX_POOL_SIZE: String(poolSize),
    LOG_LEVEL: 'error',
  }
}

/** Node options for the server processes only, from `BENCH_SERVER_NODE_ARGS` (space-separated). */
export function serverNodeArgs(): string[] {
  return (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean)
}

/** A started server and the promise of its "listening on" line. */
export interface AuthProcess {
  readonly child: ChildProcess
  readonly ready: Promise<unknown>
  /** Its standard output so far. */
  output(): string
}

/**
 * Starts `packages/auth/bin/gatehouse-auth.js` with `env` over this process's environment.
 *
 * @param nodeArgs Node options of the server process only (`--cpu-prof`, …).
 */
export function startAuth(env: Record<string, string>, nodeArgs: string[] = []): AuthProcess {
  const child = spawn(
    process.execPath,
    [...nodeArgs, `${root}packages/auth/bin/gatehouse-auth.js`],
    { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] },
  )
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
  return {
    child,
    ready: waitFor(() => out.includes('listening on'), { timeout: 30_000, what: 'auth server' }),
    output: () => out,
  }
}

/** Prints how many error lines a server logged during the run, and the first, if any. */
export function reportServerErrors(server: AuthProcess, label = 'server'): void {
  const errors = server
    .output()
    .split('\n')
    .filter((line) => line.includes('"level":"error"'))
  if (errors.length > 0) {
    console.log(`${label} errors (${String(errors.length)}), first: ${errors[0] ?? ''}`)
  }
}

/** Stops a child process (a server) with SIGTERM and waits for it to exit. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}
