import { spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

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
  /**
   * Opens an IPC channel to the child (`child.send()` and its `'message'` events; in the child
   * `process.send()` and `process.on('message')`). @default false
   */
  ipc?: boolean
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
    stdio: options.ipc === true ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid }),
  })
  let output = ''
  const collect = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-16_384)
  }
  // Pipes both (stdio above); typed as possibly null because the IPC channel is optional.
  child.stdout?.on('data', collect)
  child.stderr?.on('data', collect)
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

/** What a process run to its end by {@link runProcess} did. */
export interface ProcessResult {
  /** The exit status, or null when a signal ended it. */
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Options of {@link runProcess}. */
export interface RunProcessOptions extends Omit<StartProcessOptions, 'ipc'> {
  /** Longest run, in milliseconds; then the process is killed (SIGKILL). @default 30000 */
  timeoutMs?: number
}

/**
 * Runs `command` with `args` to its end, as a user at a terminal would, and gives its exit status
 * and its standard output and error apart (unlike `execFile`, a non-zero status is a result, not
 * an error).
 *
 * @throws {Error} When the executable cannot be started.
 */
export function runProcess(
  command: string,
  args: readonly string[],
  options: RunProcessOptions = {},
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.env === undefined ? {} : { env: options.env }),
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    })
    const stdout: Buffer[] = []
    const stderr: Buffer[] = []
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk))
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk))
    const killOnExit = (): void => {
      child.kill('SIGKILL')
    }
    process.once('exit', killOnExit)
    const timer = setTimeout(killOnExit, options.timeoutMs ?? 30_000)
    child.once('error', (error) => {
      clearTimeout(timer)
      process.removeListener('exit', killOnExit)
      reject(new Error(`could not start ${command}: ${error.message}`, { cause: error }))
    })
    child.once('close', (code) => {
      clearTimeout(timer)
      process.removeListener('exit', killOnExit)
      resolve({
        code,
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
      })
    })
  })
}

/**
 * The Node.js arguments that run a TypeScript entry point from its source, as the package's bin
 * runs the compiled file: tsx (by absolute URL, so any working directory will do) and the
 * `dev-source` condition (`@gatehouse/*` resolve to their sources, no build needed).
 *
 * @param entry Absolute path of the entry point, such as `…/packages/auth/src/main.ts`.
 * @example `runProcess(process.execPath, [...sourceEntryArgs(main), '--version'])`
 */
export function sourceEntryArgs(entry: string): string[] {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
  return ['--import', tsx, '--conditions', 'dev-source', entry]
}
