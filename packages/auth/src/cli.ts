import { parseArgs as parseArgv } from 'node:util'
import { SETTINGS_EXIT_STATUS, readEnvFile } from '@gatehouse/settings'
import type { AuthDeps } from './app.js'
import { loadSettings, settingsTable, type Settings } from './conf/settings.js'
import { rateLimitServiceConfig } from './limiter/service-config.js'
import { migrateCommand, serveCommand } from './serve.js'

/** Usage text of `gatehouse-auth --help`: the commands, then every setting with its default. */
export const USAGE = `Usage: gatehouse-auth [serve|migrate|ratelimit-config] [--env-file <path>]

Supabase-Auth-compatible user authentication server.

Commands:
  serve      apply pending database migrations, then serve the API (default)
  migrate    apply pending database migrations, then exit
  ratelimit-config
             print the rate limit service's YAML config for these settings
             (RATE_LIMIT_BACKEND=ratelimit; see the README)

Options:
  --env-file <path>  read settings from this file (default: ./.env when present);
                     environment variables win over the file
  -h, --help         show this help

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

interface ParsedArgs {
  command: 'serve' | 'migrate' | 'ratelimit-config' | 'help'
  envFile: string | undefined
  error?: string
}

/**
 * Parses the command line (without `node` and the script) with `node:util`'s `parseArgs`:
 * `serve`, `migrate` or `ratelimit-config` (the last one given), `help`, `-h` or `--help` (wins over a command),
 * `--env-file <path>` or `--env-file=<path>`; anything else is an error.
 */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  const parsed: ParsedArgs = { command: 'serve', envFile: undefined }
  const { tokens } = parseArgv({
    args: [...argv],
    options: { 'env-file': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: false,
    tokens: true,
  })
  let help = false
  for (const token of tokens) {
    if (token.kind === 'option-terminator') parsed.error = 'unknown argument "--"'
    else if (token.kind === 'positional') {
      if (token.value === 'help') help = true
      else if (
        token.value === 'serve' ||
        token.value === 'migrate' ||
        token.value === 'ratelimit-config'
      )
        parsed.command = token.value
      else parsed.error = `unknown argument "${token.value}"`
    } else if (token.name === 'env-file') {
      parsed.envFile = token.value
      if (token.value === undefined) parsed.error = '--env-file needs a path'
    } else if (token.name === 'help' && token.value === undefined) help = true
    else parsed.error = `unknown argument "${argv[token.index] ?? token.rawName}"`
  }
  if (help) parsed.command = 'help'
  return parsed
}

/**
 * The variables settings are read from: the `.env` file (if any) overlaid with the environment.
 *
 * @throws {Error} When an explicitly named file cannot be read.
 */
export function readEnvironment(
  env: Readonly<Record<string, string | undefined>>,
  envFile: string | undefined,
): Record<string, string | undefined> {
  return { ...readEnvFile(envFile ?? '.env', { optional: envFile === undefined }), ...env }
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
  const args = parseArgs(argv)
  if (args.error !== undefined) {
    io.err(`gatehouse-auth: ${args.error}\n\n${USAGE}`)
    return 2
  }
  if (args.command === 'help') {
    io.out(USAGE)
    return 0
  }
  let settings: Settings
  try {
    settings = loadSettings(readEnvironment(env, args.envFile))
  } catch (error) {
    // A SettingsError lists every problem; an unreadable --env-file is a bad setting too.
    io.err(`gatehouse-auth: ${error instanceof Error ? error.message : String(error)}`)
    return SETTINGS_EXIT_STATUS
  }
  if (args.command === 'ratelimit-config') {
    io.out(rateLimitServiceConfig(settings))
    return 0
  }
  return args.command === 'migrate'
    ? migrateCommand(settings, io)
    : serveCommand(settings, io, deps)
}
