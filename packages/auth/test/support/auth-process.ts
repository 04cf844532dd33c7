/**
 * The `gatehouse-auth` executable as a user runs it (`bin/gatehouse-auth.js`, the compiled
 * server), for tests of what the process does: its start-up lines, its exit status, that it
 * stays alive while its database fails.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { getFreePort, startProcess, waitFor, type ManagedProcess } from '@gatehouse/testing'
import { testEnv } from '../helpers.js'

/** The executable. */
export const AUTH_BIN = fileURLToPath(new URL('../../bin/gatehouse-auth.js', import.meta.url))

/** How a run of the executable ended; see {@link runAuth}. */
export interface AuthRun {
  /** Exit status (`null` when a signal ended it). */
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The environment of the executable: `PATH`, the test settings of `databaseUrl`, `overrides`. */
function authEnv(databaseUrl: string, overrides: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, ...testEnv(databaseUrl, overrides) }
}

/**
 * Runs the executable with `args` and the test settings ({@link testEnv}) of `databaseUrl` and
 * `overrides` until it exits (killed after `timeoutMs`), for tests of how it fails.
 */
export async function runAuth(
  args: readonly string[],
  databaseUrl: string,
  overrides: Record<string, string> = {},
  timeoutMs = 20_000,
): Promise<AuthRun> {
  const child = spawn(process.execPath, [AUTH_BIN, ...args], {
    env: authEnv(databaseUrl, overrides),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', resolve)
  })
  clearTimeout(timer)
  return { code, stdout, stderr }
}

/** A running `gatehouse-auth serve`; see {@link startAuthProcess}. */
export interface AuthProcess {
  /** `http://127.0.0.1:<PORT>` */
  readonly url: string
  readonly process: ManagedProcess
  /** Whether the process is still running. */
  alive(): boolean
  /** Stops it (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>
}

/**
 * Starts the executable on a free port of 127.0.0.1 with the test settings ({@link testEnv}) of
 * `databaseUrl` and `overrides`, and resolves once it says it listens.
 *
 * @param options `listening: false` resolves once it runs, before it listens (tests of a start
 *   that waits).
 * @throws {Error} When it exits or does not listen within 20 s (with its output).
 */
export async function startAuthProcess(
  databaseUrl: string,
  overrides: Record<string, string> = {},
  options: { readonly listening?: boolean } = {},
): Promise<AuthProcess> {
  const port = await getFreePort()
  const child = await startProcess(process.execPath, [AUTH_BIN], {
    env: authEnv(databaseUrl, {
      PORT: String(port),
      AUTHSVC_API_HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
      ...overrides,
    }),
  })
  const alive = (): boolean => child.child.exitCode === null && child.child.signalCode === null
  const started: AuthProcess = {
    url: `http://127.0.0.1:${String(port)}`,
    process: child,
    alive,
    stop: () => child.stop('SIGTERM'),
  }
  if (options.listening === false) return started
  try {
    await waitFor(
      () => {
        if (!alive()) throw new Error(`gatehouse-auth exited: ${child.output()}`)
        return child.output().includes('gatehouse-auth: listening on')
      },
      { timeout: 20_000, what: 'gatehouse-auth to listen' },
    )
  } catch (error) {
    await child.stop('SIGKILL')
    throw error
  }
  return started
}
