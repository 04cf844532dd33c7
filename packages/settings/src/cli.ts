/**
 * The command-line pieces every Gatehouse executable shares: options parsed by Node's
 * `util.parseArgs` into one-line {@link UsageError}s, the message and exit status of a refused
 * command line, the version read from a package's own `package.json`, and the environment
 * overlaid on an `--env-file`.
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { readEnvFile, type ReadEnvFileOptions } from './env-file.js'
import { SettingsError } from './errors.js'

/**
 * The exit status of a refused command line (an unknown option, a missing value, an unknown
 * command): 2, as Go's `flag` package, cobra and the GNU tools exit.
 */
export const USAGE_EXIT_STATUS = 2

/** The `code` of every {@link UsageError}. */
export const USAGE_ERROR_CODE = 'ERR_USAGE'

/**
 * Thrown for a command line that cannot be run. The message is one line that says what is wrong,
 * without the program's name (`unknown option '--bogus'`); {@link usageErrorLine} adds the name
 * and where to read more.
 */
export class UsageError extends Error {
  /** Always {@link USAGE_ERROR_CODE}. */
  readonly code = USAGE_ERROR_CODE
  /** @param message What is wrong, on one line. */
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

/**
 * The line an executable prints for a refused command line: its name, the problem and where the
 * usage is (`gatehouse-auth: unknown option '--bogus' (see gatehouse-auth --help)`), instead of
 * the whole usage text.
 *
 * @param program The executable's name.
 * @param error The problem.
 * @param helpFlag The option that prints the usage. @default '--help'
 */
export function usageErrorLine(program: string, error: UsageError, helpFlag = '--help'): string {
  return `${program}: ${error.message} (see ${program} ${helpFlag})`
}

/** One option of a command line: a string that takes a value, or a boolean flag. */
export interface OptionSpec {
  readonly type: 'string' | 'boolean'
  /** A one-letter alias: `h` for `-h`. */
  readonly short?: string
}

/** The options of a command line, by long name (`'env-file'` for `--env-file`). */
export type OptionSpecs = Readonly<Record<string, OptionSpec>>

/** The options given: a string option's value (the last one given), `true` for a given flag. */
export type OptionValues<O extends OptionSpecs> = {
  readonly [K in keyof O]?: O[K]['type'] extends 'string' ? string : true
}

/** A parsed command line: see {@link parseCommandLine}. */
export interface CommandLine<O extends OptionSpecs> {
  /** The options given. */
  readonly values: OptionValues<O>
  /** The arguments that are no options, in order (everything after `--` is one). */
  readonly positionals: readonly string[]
}

/**
 * Parses a command line with Node's `util.parseArgs`: `--name value`, `--name=value`, `-n value`,
 * `-nvalue`, grouped short flags (`-hv`), and `--` before arguments that start with `-`. Unlike
 * `parseArgs`' own errors (several sentences), each problem is one line.
 *
 * @param argv The arguments, without `node` and the script.
 * @param options The options the command line may hold.
 * @returns The options and the other arguments; what the positionals mean is the caller's.
 * @throws {@link UsageError} For the first problem: `unknown option '--bogus'`, `option
 *   '--env-file' needs a value`, `option '--help' takes no value`.
 * @see https://nodejs.org/api/util.html#utilparseargsconfig
 * @example
 *
 * ```ts
 * import { parseCommandLine } from '@gatehouse/settings'
 *
 * const { values, positionals } = parseCommandLine(['check', '--env-file', 'prod.env'], {
 *   'env-file': { type: 'string' },
 *   help: { type: 'boolean', short: 'h' },
 * })
 * // values: { 'env-file': 'prod.env' }, positionals: ['check']
 * ```
 */
export function parseCommandLine<O extends OptionSpecs>(
  argv: readonly string[],
  options: O,
): CommandLine<O> {
  const { tokens } = parseArgs({
    args: [...argv],
    options,
    allowPositionals: true,
    strict: false,
    tokens: true,
  })
  const values: Record<string, string | true> = {}
  const positionals: string[] = []
  for (const token of tokens) {
    if (token.kind === 'positional') positionals.push(token.value)
    else if (token.kind === 'option') {
      const spec = Object.hasOwn(options, token.name) ? options[token.name] : undefined
      if (spec === undefined) throw new UsageError(`unknown option '${token.rawName}'`)
      if (spec.type === 'boolean') {
        if (token.value !== undefined) {
          throw new UsageError(`option '${token.rawName}' takes no value`)
        }
        values[token.name] = true
      } else {
        if (token.value === undefined || token.value === '') {
          throw new UsageError(`option '${token.rawName}' needs a value`)
        }
        values[token.name] = token.value
      }
    }
  }
  return { values: values as OptionValues<O>, positionals }
}

/**
 * The `version` of a package's `package.json`, read now (so `--version` and `/health` say what
 * is installed, from the one place a release sets it).
 *
 * @param packageJson The file, usually `new URL('../package.json', import.meta.url)` from a
 *   module in the package's `src/` or `dist/`.
 * @throws {Error} When the file cannot be read, is not JSON, or has no string `version`.
 */
export function readPackageVersion(packageJson: URL): string {
  const parsed = JSON.parse(readFileSync(packageJson, 'utf8')) as unknown
  const version =
    typeof parsed === 'object' && parsed !== null && 'version' in parsed
      ? parsed.version
      : undefined
  if (typeof version !== 'string') {
    throw new TypeError(`${packageJson.pathname} has no "version"`)
  }
  return version
}

/**
 * The variables an executable reads its settings from: those of an `.env` file (`--env-file`)
 * overlaid with the environment, so that a variable set in the environment wins over the file.
 *
 * @param env The process's environment.
 * @param envFile The file (`--env-file`), or undefined for none.
 * @param options `optional`: a missing file gives no variables (a default such as `./.env`).
 * @throws {@link SettingsError} When the file cannot be read: `<path>: cannot read the env
 *   file (ENOENT: …)`; executables exit with `SETTINGS_EXIT_STATUS` as for any invalid setting.
 */
export function environmentWithFile(
  env: Readonly<Record<string, string | undefined>>,
  envFile: string | undefined,
  options: ReadEnvFileOptions = {},
): Record<string, string | undefined> {
  if (envFile === undefined) return { ...env }
  let fromFile: Record<string, string>
  try {
    fromFile = readEnvFile(envFile, options)
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    throw new SettingsError([`${envFile}: cannot read the env file (${reason})`])
  }
  return { ...fromFile, ...env }
}
