/**
 * The command line of `gatehouse-ratelimit` (`main.ts` runs it): `--help`, `--version`,
 * `--env-file <path>`, and `check [<dir-or-file>]` (upstream's `ratelimit_config_check`);
 * everything else about the service is set by environment variables, as upstream's.
 *
 * @module
 */
import {
  SETTINGS_EXIT_STATUS,
  SettingsError,
  USAGE_EXIT_STATUS,
  UsageError,
  environmentWithFile,
  parseCommandLine,
  usageErrorLine,
} from '@gatehouse/settings'
import { checkConfigs, type CommandIo } from './config-check.js'
import { packageVersion } from './version.js'
import { loadSettings, settingsTable, type HostInfo, type Settings } from './settings/settings.js'

/** The executable's name, as its messages start. */
export const SERVICE_PROGRAM = 'gatehouse-ratelimit'

const OPTIONS = {
  'env-file': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const

/** What a `gatehouse-ratelimit` command line asks for: see {@link parseServiceArgs}. */
export type ServiceCommand =
  | { readonly name: 'help' | 'version' }
  | {
      readonly name: 'serve'
      /** `--env-file`: variables read before the environment's, which win. */
      readonly envFile: string | undefined
    }
  | {
      readonly name: 'check'
      /** The directory or file to check; undefined for the service's `RUNTIME_*` directory. */
      readonly path: string | undefined
      readonly envFile: string | undefined
    }

/**
 * Parses `gatehouse-ratelimit`'s command line (without `node` and the script): no command
 * (serve), `check [<dir-or-file>]`, `-h`/`--help`, `--version`, `--env-file <path>`.
 *
 * @throws {UsageError} With one line, for anything else.
 */
export function parseServiceArgs(argv: readonly string[]): ServiceCommand {
  const { values, positionals } = parseCommandLine(argv, OPTIONS)
  if (values.help === true) return { name: 'help' }
  if (values.version === true) return { name: 'version' }
  const envFile = values['env-file']
  const [first, path, extra] = positionals
  if (first === undefined) return { name: 'serve', envFile }
  if (first !== 'check') throw new UsageError(`unknown command '${first}'`)
  if (extra !== undefined) throw new UsageError(`unexpected argument '${extra}'`)
  return { name: 'check', path, envFile }
}

/**
 * `--help`: the command line, what the service is, and every variable it reads with its
 * meaning and its default on this host.
 */
export function serviceUsage(host: HostInfo): string {
  return [
    'Usage: gatehouse-ratelimit [check [<dir-or-file>]] [--env-file <path>]',
    '',
    "Rate limit service compatible with envoyproxy/ratelimit: Envoy's envoy.service.ratelimit.v3",
    'gRPC API, HTTP POST /json and GET /healthcheck, a debug server, YAML configs and Redis keys.',
    'SIGTERM or SIGINT drains in-flight calls and exits 0.',
    '',
    'Commands:',
    '  (none)     serve',
    '  check [<dir-or-file>]',
    '             load the config files of a directory, or one file, as the service would',
    "             (upstream's ratelimit_config_check); exit status 1 when one does not load.",
    "             Without a path: the service's RUNTIME_* directory",
    '',
    'Options:',
    '  --env-file <path>  read variables from this file first; the environment wins over it',
    '  -h, --help         show this help',
    '  --version          print the version',
    '',
    'Configured by environment variables (upstream names; KVSTORE_* and REDIS_* spellings both',
    'accepted). Invalid values stop it at once, listing every problem (exit status 2); so does',
    'a command line it cannot run.',
    '',
    'Environment variables (default):',
    ...settingsTable.help(host, { columns: 100 }),
    '',
    'Full reference: the @gatehouse/ratelimit README.',
    '',
  ].join('\n')
}

/** What `main.ts` does after the command line: serve with these variables, or exit. */
export type ServiceCliResult =
  { readonly serve: Record<string, string | undefined> } | { readonly exitCode: number }

/**
 * `check`: the configuration files, loaded as the service with these variables would load them.
 *
 * @returns The exit status.
 */
async function check(
  path: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
  io: CommandIo,
  host: HostInfo,
): Promise<number> {
  let settings: Readonly<Settings>
  try {
    settings = loadSettings(env, host)
  } catch (error) {
    if (!(error instanceof SettingsError)) throw error
    io.err(`${SERVICE_PROGRAM}: ${error.message}\n`)
    return SETTINGS_EXIT_STATUS
  }
  if (path === undefined && settings.configType !== 'FILE') {
    io.err(
      `${SERVICE_PROGRAM}: CONFIG_TYPE=${settings.configType} reads no files; name a directory or a file to check\n`,
    )
    return USAGE_EXIT_STATUS
  }
  return checkConfigs(path, settings, io)
}

/**
 * Runs the command line of `gatehouse-ratelimit`: prints the help or the version, refuses a
 * command line it cannot run (one line, exit 2), checks configuration files, or reads the
 * `--env-file` for the service.
 *
 * @param env The process's environment.
 * @param host Facts about the host, for the defaults `--help` shows.
 */
export async function runServiceCli(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  io: CommandIo,
  host: HostInfo,
): Promise<ServiceCliResult> {
  let command: ServiceCommand
  try {
    command = parseServiceArgs(argv)
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    io.err(`${usageErrorLine(SERVICE_PROGRAM, error)}\n`)
    return { exitCode: USAGE_EXIT_STATUS }
  }
  switch (command.name) {
    case 'help':
      io.out(serviceUsage(host))
      return { exitCode: 0 }
    case 'version':
      io.out(`${SERVICE_PROGRAM} ${packageVersion()}\n`)
      return { exitCode: 0 }
    case 'serve':
    case 'check':
      break
  }
  let variables: Record<string, string | undefined>
  try {
    variables = environmentWithFile(env, command.envFile)
  } catch (error) {
    if (!(error instanceof SettingsError)) throw error
    io.err(`${SERVICE_PROGRAM}: ${error.message}\n`)
    return { exitCode: SETTINGS_EXIT_STATUS }
  }
  if (command.name === 'check') {
    return { exitCode: await check(command.path, variables, io, host) }
  }
  return { serve: variables }
}
