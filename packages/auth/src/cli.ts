import {
  SETTINGS_EXIT_STATUS,
  SettingsError,
  USAGE_EXIT_STATUS,
  UsageError,
  environmentWithFile,
  parseCommandLine,
  usageErrorLine,
} from '@gatehouse/settings'
import type { AdminAction } from './admin-command.js'
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
  keys       print an anon and a service_role key signed with JWT_SECRET or
             JWT_KEYS (the same keys for one secret; service_role is an admin key)
  admin createuser <email> <password> [<role>] [--confirm] [--admin] [--aud <aud>]
             create a user (default role JWT_DEFAULT_GROUP_NAME)
  admin deleteuser <email-or-id> [--aud <aud>]
             delete a user
  admin editrole <email-or-id> (<role> | --admin) [--aud <aud>]
             change a user's role
  version    print the version
  help       show this help

Options:
  --env-file <path>  read settings from this file (default: ./.env when present);
                     environment variables win over the file
  --connect          (check) reach the database and the SMTP server
  --confirm          (admin createuser) confirm the email now; nothing is sent
  --admin            (admin createuser, editrole) the role JWT_ADMIN_GROUP_NAME
  -a, --aud <aud>    (admin) the users' audience (default: JWT_AUD)
  -h, --help         show this help
  --version          print the version

A command line it cannot run is refused on one line (exit status ${String(USAGE_EXIT_STATUS)}).
Settings are read as AUTHSVC_<NAME>, else GOTRUE_<NAME>; a second name (PORT, DATABASE_URL,
LOG_LEVEL) also as written. Booleans: 1, t, T, TRUE, true, True, 0, f, F, FALSE, false, False.
Invalid settings are listed all at once and stop the server (exit status ${String(SETTINGS_EXIT_STATUS)}).
The package README describes each one.

Settings (default):
${settingsTable.help(undefined, { width: 36, columns: 100 }).join('\n')}
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
  confirm: { type: 'boolean' },
  admin: { type: 'boolean' },
  aud: { type: 'string', short: 'a' },
} as const

/** The commands an option goes with (`admin <action>` for the admin commands); others: all. */
const OPTION_COMMANDS: Readonly<Partial<Record<keyof typeof OPTIONS, readonly string[]>>> = {
  connect: ['check'],
  confirm: ['admin createuser'],
  admin: ['admin createuser', 'admin editrole'],
  aud: ['admin createuser', 'admin deleteuser', 'admin editrole'],
}

/** The commands that read the settings. */
const SETTINGS_COMMANDS = ['serve', 'migrate', 'ratelimit-config', 'check', 'keys'] as const

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
  | {
      readonly name: 'admin'
      readonly envFile: string | undefined
      readonly admin: AdminAction
    }

function isSettingsCommand(name: string): name is (typeof SETTINGS_COMMANDS)[number] {
  return (SETTINGS_COMMANDS as readonly string[]).includes(name)
}

/** Refuses arguments beyond those a command takes. */
function noMore(extra: string | undefined): void {
  if (extra !== undefined) throw new UsageError(`unexpected argument '${extra}'`)
}

/**
 * `admin createuser|deleteuser|editrole …` (upstream's commands and texts).
 *
 * @throws {UsageError} For missing or extra arguments, or a role given twice.
 */
function parseAdmin(
  rest: readonly string[],
  values: { readonly admin?: true; readonly confirm?: true; readonly aud?: string },
): AdminAction {
  const [action, first, second, third, extra] = rest
  const admin = values.admin === true
  const aud = values.aud
  const roleOrAdmin = (role: string | undefined): void => {
    if (admin && role !== undefined) throw new UsageError("give a role or '--admin', not both")
  }
  switch (action) {
    case 'createuser':
      if (first === undefined || second === undefined) {
        throw new UsageError(
          'Not enough arguments to createuser command. Expected at least email and password values',
        )
      }
      noMore(extra)
      roleOrAdmin(third)
      return {
        action,
        email: first,
        password: second,
        role: third,
        admin,
        confirm: values.confirm === true,
        aud,
      }
    case 'deleteuser':
      if (first === undefined) {
        throw new UsageError(
          'Not enough arguments to deleteuser command. Expected at least ID or email',
        )
      }
      noMore(second)
      return { action, user: first, aud }
    case 'editrole':
      if (first === undefined || (second === undefined && !admin)) {
        throw new UsageError(
          'Not enough arguments to editrole command. Expected an ID or email, and a role or --admin',
        )
      }
      noMore(third)
      roleOrAdmin(second)
      return { action, user: first, role: second, admin, aud }
    case undefined:
      throw new UsageError("'admin' needs a command: createuser, deleteuser or editrole")
    default:
      throw new UsageError(`unknown admin command '${action}'`)
  }
}

/**
 * Parses the command line (without `node` and the script) with `@gatehouse/settings`'
 * `parseCommandLine` (Node's `util.parseArgs`): a command (`serve` when none) and its arguments,
 * `--env-file <path>` (or `--env-file=<path>`), `-h`/`--help` or `help`, `--version` or
 * `version` (the options win over a command), and the options of one command (`--connect`,
 * `--confirm`, `--admin`, `--aud`). Arguments after `--` are the command's.
 *
 * @throws {UsageError} With one line: an unknown option or command, a missing value or argument,
 *   an argument no command takes, an option of another command.
 */
export function parseArgs(argv: readonly string[]): AuthCommand {
  const { values, positionals } = parseCommandLine(argv, OPTIONS)
  const [name = 'serve', ...rest] = positionals
  if (values.help === true || name === 'help') return { name: 'help' }
  if (values.version === true) return { name: 'version' }
  const envFile = values['env-file']
  let command: AuthCommand
  if (name === 'admin') command = { name, envFile, admin: parseAdmin(rest, values) }
  else if (name === 'version') command = { name }
  else if (isSettingsCommand(name)) {
    command = { name, envFile, ...(values.connect === true ? { connect: true } : {}) }
  } else throw new UsageError(`unknown command '${name}'`)
  if (command.name !== 'admin') noMore(rest[0])
  const which = command.name === 'admin' ? `admin ${command.admin.action}` : command.name
  for (const [option, commands] of Object.entries(OPTION_COMMANDS)) {
    if (values[option as keyof typeof OPTIONS] !== undefined && !commands.includes(which)) {
      throw new UsageError(
        `option '--${option}' goes with ${commands.map((c) => `'${c}'`).join(' or ')}`,
      )
    }
  }
  return command
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
    case 'keys':
    case 'admin':
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
  if (command.name === 'keys') {
    const [{ JwtKeys }, { apiKeys }] = await Promise.all([
      import('./crypto/jwt.js'),
      import('./crypto/api-keys.js'),
    ])
    const keys = await apiKeys(await JwtKeys.load(settings.jwt))
    io.out(`anon key: ${keys.anon}`)
    io.out(`service_role key: ${keys.serviceRole}`)
    return 0
  }
  if (command.name === 'admin') {
    const { adminCommand } = await import('./admin-command.js')
    return adminCommand(settings, command.admin, io)
  }
  // Loaded only to run them: --help, --version and a refused command line answer at once.
  const { migrateCommand, serveCommand } = await import('./serve.js')
  return command.name === 'migrate'
    ? migrateCommand(settings, io)
    : serveCommand(settings, io, deps)
}
