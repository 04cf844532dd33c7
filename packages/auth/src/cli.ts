import {
  SETTINGS_EXIT_STATUS,
  SettingsError,
  USAGE_EXIT_STATUS,
  UsageError,
  environmentWithFile,
  parseCommandLine,
  usageErrorLine,
} from '@gatehouse/settings'
import type { AuthDeps } from './app.js'
import { loadSettings, settingsTable, type Settings } from './conf/settings.js'
import { rateLimitServiceConfig } from './limiter/service-config.js'
import { VERSION } from './version.js'

/** The executable's name, as its messages start. */
const PROGRAM = 'gatehouse-auth'

/** Usage text of `gatehouse-auth --help`: the commands, then every setting with its default. */
export const USAGE = `Usage: gatehouse-auth [command] [--env-file <path>]

Supabase-Auth-compatible user authentication server.

Commands:
  serve      apply pending database migrations, then serve the API (default)
  migrate    apply pending database migrations, then exit
  ratelimit-config
             print the rate limit service's YAML config for these settings
             (RATE_LIMIT_BACKEND=ratelimit; see the README)
  check [--connect]
             check the settings without serving; with --connect, also reach the
             database and the SMTP server (SMTP_HOST), one line each
             (exit status 1 when one cannot be reached)
  version    print the version
  help       show this help

Options:
  --env-file <path>  read settings from this file (default: ./.env when present);
                     environment variables win over the file
  --connect          (check) reach the database and the SMTP server
  -h, --help         show this help
  --version          print the version

A command line it cannot run is refused on one line (exit status ${String(USAGE_EXIT_STATUS)}).
Settings are read as AUTHSVC_<NAME>, else GOTRUE_<NAME>; a second name (PORT, DATABASE_URL,
LOG_LEVEL) also as written. Booleans: 1, t, T, TRUE, true, True, 0, f, F, FALSE, false, False.
Invalid settings are listed all at once and stop the server (exit status ${String(SETTINGS_EXIT_STATUS)}).
The package README describes each one.

Settings (default):
${settingsTable.help(undefined, { width: 36 }).join('\n')}
`

/** Where the CLI writes and how it ends; `process` in production, fakes in tests. */
export interface CliIo {
  out(line: string): void
  err(line: string): void
  /** Called with a callback to run on SIGTERM/SIGINT. */
  onSignal(handler: (signal: string) => void): void
}

/** The options of every command. */
const OPTIONS = {
  'env-file': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
  connect: { type: 'boolean' },
} as const

/** The commands that read the settings. */
const SETTINGS_COMMANDS = ['serve', 'migrate', 'ratelimit-config', 'check'] as const

/** What a command line asks for: see {@link parseArgs}. */
export type AuthCommand =
  | { readonly name: 'help' | 'version' }
  | {
      readonly name: (typeof SETTINGS_COMMANDS)[number]
      /** `--env-file`; undefined reads `./.env` when it exists. */
      readonly envFile: string | undefined
      /** `check --connect`. */
      readonly connect?: true
    }

function isSettingsCommand(name: string): name is (typeof SETTINGS_COMMANDS)[number] {
  return (SETTINGS_COMMANDS as readonly string[]).includes(name)
}

/**
 * Parses the command line (without `node` and the script) with `@gatehouse/settings`'
 * `parseCommandLine` (Node's `util.parseArgs`): a command (`serve` when none), `--env-file <path>`
 * (or `--env-file=<path>`), `-h`/`--help` or `help`, `--version` or `version` (the options win
 * over a command). Arguments after `--` are the command's.
 *
 * @throws {UsageError} With one line: an unknown option or command, a missing value, an
 *   argument no command takes.
 */
export function parseArgs(argv: readonly string[]): AuthCommand {
  const { values, positionals } = parseCommandLine(argv, OPTIONS)
  const [name = 'serve', ...rest] = positionals
  if (values.help === true || name === 'help') return { name: 'help' }
  if (values.version === true) return { name: 'version' }
  if (name !== 'version' && !isSettingsCommand(name)) {
    throw new UsageError(`unknown command '${name}'`)
  }
  if (rest[0] !== undefined) throw new UsageError(`unexpected argument '${rest[0]}'`)
  if (values.connect === true && name !== 'check') {
    throw new UsageError("option '--connect' goes with 'check'")
  }
  if (name === 'version') return { name }
  return {
    name,
    envFile: values['env-file'],
    ...(values.connect === true ? { connect: true } : {}),
  }
}

/**
 * The variables settings are read from: the `--env-file` (or `./.env` when it exists) overlaid
 * with the environment, which wins.
 *
 * @throws {SettingsError} When an explicitly named file cannot be read.
 */
export function readEnvironment(
  env: Readonly<Record<string, string | undefined>>,
  envFile: string | undefined,
): Record<string, string | undefined> {
  return environmentWithFile(env, envFile ?? '.env', { optional: envFile === undefined })
}

/**
 * Runs `gatehouse-auth`.
 *
 * @param deps Replacements for the server's dependencies (`serve` only), such as a clock.
 * @returns The exit code (for `serve`: once the server has stopped after a signal).
 */
export async function runCli(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  io: CliIo,
  deps: AuthDeps = {},
): Promise<number> {
  let command: AuthCommand
  try {
    command = parseArgs(argv)
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    io.err(usageErrorLine(PROGRAM, error))
    return USAGE_EXIT_STATUS
  }
  switch (command.name) {
    case 'help':
      io.out(USAGE)
      return 0
    case 'version':
      io.out(`${PROGRAM} ${VERSION}`)
      return 0
    case 'serve':
    case 'migrate':
    case 'ratelimit-config':
    case 'check':
      break
  }
  let settings: Settings
  try {
    settings = loadSettings(readEnvironment(env, command.envFile))
  } catch (error) {
    if (!(error instanceof SettingsError)) throw error
    io.err(`${PROGRAM}: ${error.message}`)
    return SETTINGS_EXIT_STATUS
  }
  if (command.name === 'ratelimit-config') {
    io.out(rateLimitServiceConfig(settings))
    return 0
  }
  if (command.name === 'check') {
    const { checkCommand } = await import('./check.js')
    return checkCommand(settings, io, { connect: command.connect === true })
  }
  // Loaded only to run them: --help, --version and a refused command line answer at once.
  const { migrateCommand, serveCommand } = await import('./serve.js')
  return command.name === 'migrate'
    ? migrateCommand(settings, io)
    : serveCommand(settings, io, deps)
}
