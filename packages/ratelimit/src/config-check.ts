/**
 * `gatehouse-ratelimit check`: upstream's `ratelimit_config_check` (`src/config_check_cmd`).
 * Loads configuration files with the service's own loader (the FILE provider's reading, then
 * `RateLimitConfig.load` with the settings' options) and prints upstream's lines:
 *
 * ```text
 * checking rate limit configs...
 * loading config directory: <dir>
 * opening config file: <name>
 * all rate limit configs ok
 * ```
 *
 * or, on standard error, `error opening directory …`, `error reading file …` or
 * `error loading rate limit configs: …` (exit status 1).
 *
 * @see https://github.com/envoyproxy/ratelimit/blob/main/src/config_check_cmd/main.go
 * @module
 */
import { readFile, stat } from 'node:fs/promises'
import { basename } from 'node:path'
import { getSystemErrorMap } from 'node:util'
import { pino } from 'pino'
import { configLoadOptions, fileConfigProvider } from './app.js'
import { RateLimitConfig, type ConfigFile } from './config/config.js'
import { RateLimitConfigError } from './config/errors.js'
import type { Settings } from './settings/settings.js'
import { StatsManager } from './stats/manager.js'
import { StatsStore } from './stats/store.js'

/** Where a command writes: `process.stdout` and `process.stderr` in the executable. */
export interface CommandIo {
  /** Writes one line (or several) to standard output. */
  out(text: string): void
  /** Writes one line (or several) to standard error. */
  err(text: string): void
}

/** The exit status of a configuration that does not load (upstream's `os.Exit(1)`). */
export const CHECK_FAILED_EXIT_STATUS = 1

/**
 * A file-system error as Go's `*os.PathError` prints it: `open <path>: no such file or directory`
 * (the operation, the path, the system's text for the error number).
 */
function pathError(error: unknown, path: string): string {
  const { syscall, errno, code, message } = error as NodeJS.ErrnoException
  if (errno === undefined) return message
  const op = syscall === 'read' ? 'read' : 'open'
  const text = getSystemErrorMap().get(errno)?.[1] ?? code ?? message
  return `${op} ${(error as NodeJS.ErrnoException).path ?? path}: ${text}`
}

/** The settings whose FILE provider reads the directory `path` as its app directory. */
function directorySettings(settings: Readonly<Settings>, path: string): Readonly<Settings> {
  return {
    ...settings,
    runtimeRoot: path,
    runtimeSubdirectory: '',
    runtimeAppDirectory: '',
    runtimeWatchRoot: false,
  }
}

/**
 * The files to check, named as the service names them, or the exit status after an error line:
 * a directory is read as the service reads its app directory (recursively, dot files as
 * `RUNTIME_IGNOREDOTFILES` says), a file alone by its base name.
 */
async function readFiles(
  path: string | undefined,
  settings: Readonly<Settings>,
  io: CommandIo,
): Promise<ConfigFile[] | number> {
  const silent = pino({ level: 'silent' })
  // No path: the service's own directory, its files named as the service's errors name them.
  const directory = path ?? fileConfigProvider(settings, silent).appDirectoryPath
  let isDirectory: boolean
  try {
    isDirectory = (await stat(directory)).isDirectory()
  } catch (error) {
    io.out(`loading config directory: ${directory}\n`)
    io.err(`error opening directory ${directory}: ${pathError(error, directory)}\n`)
    return CHECK_FAILED_EXIT_STATUS
  }
  if (!isDirectory) {
    io.out(`opening config file: ${directory}\n`)
    try {
      return [{ name: basename(directory), content: await readFile(directory, 'utf8') }]
    } catch (error) {
      io.err(`error reading file ${directory}: ${pathError(error, directory)}\n`)
      return CHECK_FAILED_EXIT_STATUS
    }
  }
  io.out(`loading config directory: ${directory}\n`)
  const provider = fileConfigProvider(
    path === undefined ? settings : directorySettings(settings, path),
    silent,
  )
  const read = await provider.readAll()
  if ('error' in read) {
    const failed = read.error as NodeJS.ErrnoException
    const where = failed.path ?? directory
    io.err(
      failed.syscall === 'scandir'
        ? `error opening directory ${where}: ${pathError(failed, where)}\n`
        : `error reading file ${where}: ${pathError(failed, where)}\n`,
    )
    return CHECK_FAILED_EXIT_STATUS
  }
  for (const file of read.files) io.out(`opening config file: ${file.name}\n`)
  return read.files
}

/**
 * Checks the configuration files of `path` (a directory, or one file), or of the service's
 * directory (`RUNTIME_ROOT`/`RUNTIME_SUBDIRECTORY`/`RUNTIME_APPDIRECTORY`) when `path` is
 * undefined, as the service with `settings` would load them (`MERGE_DOMAIN_CONFIG`,
 * `RATE_LIMIT_ALGORITHM`, `BACKEND_TYPE`'s algorithms). Progress goes to standard output, the
 * error line to standard error.
 *
 * @returns The exit status: 0 when every file loads, {@link CHECK_FAILED_EXIT_STATUS} otherwise.
 */
export async function checkConfigs(
  path: string | undefined,
  settings: Readonly<Settings>,
  io: CommandIo,
): Promise<number> {
  io.out('checking rate limit configs...\n')
  const files = await readFiles(path, settings, io)
  if (typeof files === 'number') return files
  try {
    RateLimitConfig.load(files, {
      stats: new StatsManager(new StatsStore()),
      // Memcache is the backend without an atomic take (its store has none).
      ...configLoadOptions(settings, settings.backendType !== 'memcache'),
    })
  } catch (error) {
    if (!(error instanceof RateLimitConfigError)) throw error
    io.err(`error loading rate limit configs: ${error.message}\n`)
    return CHECK_FAILED_EXIT_STATUS
  }
  io.out('all rate limit configs ok\n')
  return 0
}
