import { existsSync, readFileSync } from 'node:fs'
import type { AuthDeps } from './app.js'
import { ConfigError, loadSettings, type Settings } from './conf/settings.js'
import { parseEnvFile } from './conf/env-file.js'
import { migrateCommand, serveCommand } from './serve.js'

/** Usage text of `gatehouse-auth --help`. */
export const USAGE = `Usage: gatehouse-auth [serve|migrate] [--env-file <path>]

Supabase-Auth-compatible user authentication server.

Commands:
  serve      apply pending database migrations, then serve the API (default)
  migrate    apply pending database migrations, then exit

Options:
  --env-file <path>  read settings from this file (default: ./.env when present);
                     environment variables win over the file
  -h, --help         show this help

Settings are named AUTHSVC_<NAME> (GOTRUE_<NAME> is accepted too); PORT, DATABASE_URL and
LOG_LEVEL are also read without a prefix. Required: SITE_URL, API_EXTERNAL_URL, JWT_SECRET
(unless JWT_KEYS has a signing key), DB_DRIVER=postgres, DATABASE_URL (postgres://… or
pglite://<dir> | pglite://memory). See the package README for every setting.

Limits (default):
  API_MAX_REQUEST_DURATION   longest a request may take; then 504 (10s)
  PASSWORD_HASH_CONCURRENCY  bcrypt hashes and checks at once (0: one per CPU core)
  PASSWORD_HASH_QUEUE_SIZE   bcrypt hashes and checks waiting; beyond: 429 (100)
  DB_MAX_POOL_SIZE           PostgreSQL connections (0: half of what the server allows)
`

/** Where the CLI writes and how it ends; `process` in production, fakes in tests. */
export interface CliIo {
  out(line: string): void
  err(line: string): void
  /** Called with a callback to run on SIGTERM/SIGINT. */
  onSignal(handler: (signal: string) => void): void
}

interface ParsedArgs {
  command: 'serve' | 'migrate' | 'help'
  envFile: string | undefined
  error?: string
}

/** Parses the command line (without `node` and the script). */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  const parsed: ParsedArgs = { command: 'serve', envFile: undefined }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '-h' || arg === '--help' || arg === 'help') parsed.command = 'help'
    else if (arg === 'serve' || arg === 'migrate') {
      if (parsed.command !== 'help') parsed.command = arg
    } else if (arg === '--env-file') {
      parsed.envFile = argv[++i]
      if (parsed.envFile === undefined) parsed.error = '--env-file needs a path'
    } else if (arg?.startsWith('--env-file=')) parsed.envFile = arg.slice('--env-file='.length)
    else parsed.error = `unknown argument "${String(arg)}"`
  }
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
  const path = envFile ?? '.env'
  if (envFile === undefined && !existsSync(path)) return { ...env }
  return { ...parseEnvFile(readFileSync(path, 'utf8')), ...env }
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
    if (error instanceof ConfigError) {
      io.err(`gatehouse-auth: ${error.message}`)
      return 2
    }
    io.err(`gatehouse-auth: ${error instanceof Error ? error.message : String(error)}`)
    return 2
  }
  return args.command === 'migrate'
    ? migrateCommand(settings, io)
    : serveCommand(settings, io, deps)
}
