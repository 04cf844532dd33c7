import { spawn, type ChildProcess } from 'node:child_process'

/** A child process started by a test helper, killed when the test process exits. */
export interface ManagedProcess {
  readonly child: ChildProcess
  /** Output seen so far (stdout and stderr interleaved, last 16 KiB), for error messages. */
  output(): string
  /** Sends `signal` (default `SIGTERM`) and resolves once the process has exited. Idempotent. */
  stop(signal?: NodeJS.Signals): Promise<void>
}

/** Options of {@link startProcess}. */
export interface StartProcessOptions {
  /** Environment of the child. @default process.env */
  env?: NodeJS.ProcessEnv
  /** Working directory of the child. @default process.cwd() */
  cwd?: string
  /** User id the child runs as (a test run as root starting a server that refuses root). */
  uid?: number
  /** Group id the child runs as. */
  gid?: number
}

/**
 * Spawns `command` with `args`, collecting its output and making sure it dies with the test
 * process even if a test forgets to stop it.
 *
 * @throws {Error} When the executable cannot be started (for example, not installed).
 */
export async function startProcess(
  command: string,
  args: readonly string[],
  options: StartProcessOptions = {},
): Promise<ManagedProcess> {
  const child = spawn(command, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid }),
  })
  let output = ''
  const collect = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-16_384)
  }
  child.stdout.on('data', collect)
  child.stderr.on('data', collect)
  const killOnExit = (): void => {
    child.kill('SIGKILL')
  }
  process.once('exit', killOnExit)
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      process.removeListener('exit', killOnExit)
      resolve()
    })
  })
  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error): void => {
      child.off('spawn', onSpawn)
      process.removeListener('exit', killOnExit)
      reject(new Error(`could not start ${command}: ${error.message}`, { cause: error }))
    }
    const onSpawn = (): void => {
      child.off('error', onError)
      // Later errors (a failed kill) must not crash the test process; the exit promise reports.
      child.on('error', collect.bind(null, Buffer.from('')))
      resolve()
    }
    child.once('error', onError)
    child.once('spawn', onSpawn)
  })
  return {
    child,
    output: () => output,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      await exited
    },
  }
}
