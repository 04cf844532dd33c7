import { getFreePort, waitFor, type FreePortsOptions } from './net.js'
import { startProcess, type ManagedProcess } from './process.js'

/** A server process that answered on its port. */
export interface StartedServer {
  readonly port: number
  /** The server's process: a new one after {@link StartedServer.restart}. */
  readonly process: ManagedProcess
  /**
   * Stops the process with `signal` (default `SIGTERM`) and launches it again on the same port;
   * resolves once it answers.
   */
  restart(signal?: NodeJS.Signals): Promise<void>
}

/** Options of {@link startServerOnFreePort}. */
export interface StartServerOptions {
  /** Names the server in error messages, such as `redis-server`. */
  readonly name: string
  /** Executable. */
  readonly command: string
  /** Its arguments when it is to listen on `port`. */
  readonly args: (port: number) => readonly string[]
  /** Resolves true once the server on `port` answers; never rejects. */
  readonly ready: (port: number) => Promise<boolean>
  /** How the port is found. @default {} (any free port, see `getFreePorts`) */
  readonly ports?: FreePortsOptions
  /** Gives the next port to try (tests of this helper). @default a free loopback port */
  readonly pickPort?: () => Promise<number>
  /** Launches on a new port when the server exits before it answers. @default 3 */
  readonly attempts?: number
  /** Longest wait for one launch to answer, in milliseconds. @default 10000 */
  readonly timeoutMs?: number
}

/**
 * Starts a server on a free loopback port and resolves once it answers. A port is free when it
 * is picked but another process can take it before the server binds it (tests start servers in
 * parallel); a server that exits before it answers is therefore launched again on a new port.
 *
 * @throws {Error} When every launch exited before answering (quoting the last one's output), or
 *   when one is still silent after `timeoutMs` (it is then killed).
 */
export async function startServerOnFreePort(options: StartServerOptions): Promise<StartedServer> {
  const attempts = options.attempts ?? 3
  const pickPort = options.pickPort ?? (() => getFreePort('127.0.0.1', options.ports))
  for (let attempt = 1; ; attempt++) {
    const port = await pickPort()
    try {
      let process = await launch(options, port)
      return {
        port,
        get process() {
          return process
        },
        async restart(signal) {
          await process.stop(signal)
          process = await launch(options, port)
        },
      }
    } catch (error) {
      if (!(error instanceof ServerExitedError) || attempt >= attempts) throw error
    }
  }
}

/** Starts the server on `port` and resolves with its process once it answers. */
async function launch(options: StartServerOptions, port: number): Promise<ManagedProcess> {
  const process = await startProcess(options.command, options.args(port))
  await awaitServer(process, `${options.name} on port ${String(port)}`, () => options.ready(port))
  return process
}

/** The server process exited before it answered. */
class ServerExitedError extends Error {
  override readonly name = 'ServerExitedError'
}

/**
 * Resolves once `ready` resolves true. Fails at once, quoting the process's output, when the
 * process exits first; after `timeoutMs` kills it and fails, quoting its output.
 *
 * @param what Names the server in the error message: `redis-server on port 12345`.
 * @throws {Error} When the process exits before answering or does not answer in time.
 */
export async function awaitServer(
  process: ManagedProcess,
  what: string,
  ready: () => Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const { child } = process
  const exited = (): boolean => child.exitCode !== null || child.signalCode !== null
  let state: 'ready' | 'exited'
  try {
    state = await waitFor(async () => (exited() ? 'exited' : (await ready()) && 'ready'), {
      timeout: timeoutMs,
      what: () => `${what} (output: ${process.output()})`,
    })
  } catch (error) {
    await process.stop('SIGKILL')
    throw error
  }
  if (state === 'exited') {
    const status = child.signalCode ?? `status ${String(child.exitCode)}`
    throw new ServerExitedError(
      `${what} exited (${status}) before it answered (output: ${process.output()})`,
    )
  }
}
