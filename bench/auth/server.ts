/** The auth server as the auth benchmarks run it: the compiled bin in a process of its own. */
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { waitFor } from '@gatehouse/testing'

const root = fileURLToPath(new URL('../../', import.meta.url))

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

/** Stops a child process (a server) with SIGTERM and waits for it to exit. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}
