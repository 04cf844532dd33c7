/**
 * The `gatehouse-auth` executable as a user runs it (`bin/gatehouse-auth.js`, the compiled
 * server), for tests of what the process does: its start-up lines, its exit status, that it
 * stays alive while its database fails.
 */
import { fileURLToPath } from 'node:url'
import { getFreePort, startProcess, waitFor, type ManagedProcess } from '@gatehouse/testing'
import { testEnv } from '../helpers.js'

/** The executable. */
export const AUTH_BIN = fileURLToPath(new URL('../../bin/gatehouse-auth.js', import.meta.url))

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
 * @throws {Error} When it exits or does not listen within 20 s (with its output).
 */
export async function startAuthProcess(
  databaseUrl: string,
  overrides: Record<string, string> = {},
): Promise<AuthProcess> {
  const port = await getFreePort()
  const child = await startProcess(process.execPath, [AUTH_BIN], {
    env: {
      PATH: process.env.PATH,
      ...testEnv(databaseUrl, {
        PORT: String(port),
        AUTHSVC_API_HOST: '127.0.0.1',
        LOG_LEVEL: 'error',
        ...overrides,
      }),
    },
  })
  const alive = (): boolean => child.child.exitCode === null && child.child.signalCode === null
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
  return {
    url: `http://127.0.0.1:${String(port)}`,
    process: child,
    alive,
    stop: () => child.stop('SIGTERM'),
  }
}
