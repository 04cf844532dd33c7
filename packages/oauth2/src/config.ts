/**
 * The package's global state, all of it, and the environment it reads. The Ruby gem keeps the same
 * things process-wide (`OAuth2.config`, `OAuth2::Response.register_parser`), so this is the one
 * exception to "no module-level mutable state"; everything else is per client.
 *
 * | global                    | set by                       | read                                                              |
 * | ------------------------- | ---------------------------- | ----------------------------------------------------------------- |
 * | `globals.configuration`   | {@link configure}            | when a `Client` is created: it keeps a snapshot (`client.config`) |
 * | `globals.parsersByKey`    | `Response.registerParser`    | when a body is parsed (`parse: key`), by every client             |
 * | `globals.parsersByMime`   | `Response.registerParser`    | when a body is parsed by Content-Type, by every client            |
 * | `OAUTH_DEBUG` (env)       | the process environment      | when a `Client` is created ({@link debugEnabled})                 |
 *
 * The built-in parsers (JSON, form, text) live in `response.ts` and never change.
 *
 * @module
 */
import { assertKnownKeys, invalidType, optionKeys } from './args.js'
import type { Response } from './response.js'

/** Library-wide settings. */
export interface Configuration {
  /**
   * Silences the warning issued when a token response has more than one token-like field
   * (`access_token`, `id_token`, `token`, ...).
   *
   * @default true
   */
  readonly silenceExtraTokensWarning: boolean
  /**
   * Silences the warning issued when no token is found in a token response.
   *
   * @default true
   */
  readonly silenceNoTokensWarning: boolean
  /**
   * Shown instead of secret values in inspected objects and debug output.
   *
   * @default '[FILTERED]'
   */
  readonly filteredLabel: string
  /**
   * Keys whose values are replaced by {@link Configuration.filteredLabel} in debug output (headers,
   * query strings, fragments, form and JSON bodies), compared case-insensitively. The list is
   * extensible: {@link configure} adds the keys it is given to the built-in ones (which cannot be
   * removed). Also always filtered: the `Authorization`, `Proxy-Authorization`, `Cookie`,
   * `Set-Cookie` and `DPoP` headers, the headers of `connectionOpts.headers`, and URL userinfo.
   *
   * @default ['access_token', 'refresh_token', 'id_token', 'client_secret', 'assertion', 'code_verifier', 'token', 'password', 'code', 'client_assertion', 'device_code', 'subject_token', 'actor_token']
   */
  readonly filteredDebugKeys: readonly string[]
}

const DEFAULTS: Configuration = Object.freeze({
  silenceExtraTokensWarning: true,
  silenceNoTokensWarning: true,
  filteredLabel: '[FILTERED]',
  filteredDebugKeys: Object.freeze([
    'access_token',
    'refresh_token',
    'id_token',
    'client_secret',
    'assertion',
    'code_verifier',
    'token',
    'password',
    'code',
    'client_assertion',
    'device_code',
    'subject_token',
    'actor_token',
  ]),
})

const SETTING_KEYS = optionKeys<Configuration>({
  silenceExtraTokensWarning: true,
  silenceNoTokensWarning: true,
  filteredLabel: true,
  filteredDebugKeys: true,
})

/** A body parser added with `Response.registerParser`, and the MIME types it handles. @internal */
export interface ParserEntry {
  readonly key: string
  readonly mimeTypes: readonly string[]
  readonly parser: Parser
}

/** The package's only mutable module state: see the table at the top of this file. */
const globals = {
  configuration: DEFAULTS,
  parsersByKey: new Map<string, ParserEntry>(),
  parsersByMime: new Map<string, ParserEntry>(),
}

/**
 * Changes library-wide settings (the gem's `OAuth2.configure`). Clients and access tokens read the
 * settings when they are created, so call this before creating them.
 *
 * @param settings The settings to change; the others keep their values.
 * @returns The settings in force before the call, so they can be restored with
 *   `configure(previous)`.
 * @throws {TypeError} `ERR_INVALID_ARG_TYPE` when a setting has the wrong type.
 *
 * @example
 * ```ts
 * import { configure } from '@gatehouse/oauth2'
 * configure({ filteredDebugKeys: ['client_assertion'], silenceNoTokensWarning: false })
 * ```
 */
export function configure(settings: Partial<Configuration>): Configuration {
  if (typeof settings !== 'object' || (settings as unknown) === null) {
    throw invalidType('settings', 'an object', settings)
  }
  assertKnownKeys('settings', settings, SETTING_KEYS)
  const previous = globals.configuration
  const next = { ...previous, ...settings }
  for (const key of ['silenceExtraTokensWarning', 'silenceNoTokensWarning'] as const) {
    if (typeof next[key] !== 'boolean') throw invalidType(`settings.${key}`, 'a boolean', next[key])
  }
  if (typeof next.filteredLabel !== 'string') {
    throw invalidType('settings.filteredLabel', 'a string', next.filteredLabel)
  }
  if (
    !Array.isArray(next.filteredDebugKeys) ||
    !next.filteredDebugKeys.every((k) => typeof k === 'string')
  ) {
    throw invalidType('settings.filteredDebugKeys', 'an array of strings', next.filteredDebugKeys)
  }
  // Extending the list (the gem's `filtered_debug_keys += [...]`) keeps the built-in keys.
  const keys = new Set([...DEFAULTS.filteredDebugKeys, ...next.filteredDebugKeys])
  globals.configuration = Object.freeze({ ...next, filteredDebugKeys: Object.freeze([...keys]) })
  return previous
}

/** The settings in force now (a frozen snapshot). @internal */
export function currentConfiguration(): Configuration {
  return globals.configuration
}

/**
 * Whether debug logging is on: only when the environment variable `OAUTH_DEBUG` is `true`
 * (case-insensitive), as in the gem. Runtimes without `process.env` never log.
 *
 * @internal
 */
export function debugEnabled(
  env: Readonly<Record<string, string | undefined>> | undefined = (
    globalThis as { process?: { env?: Record<string, string | undefined> } }
  ).process?.env,
): boolean {
  return env?.OAUTH_DEBUG?.toLowerCase() === 'true'
}

/**
 * A body parser: receives the body string and the response, returns the parsed value. Register
 * one with `Response.registerParser`.
 */
export type Parser = (body: string, response: Response) => unknown

/** Adds or replaces a parser (see `Response.registerParser`). @internal */
export function registerParser(entry: ParserEntry): void {
  globals.parsersByKey.set(entry.key, entry)
  for (const mime of entry.mimeTypes) globals.parsersByMime.set(mime.toLowerCase(), entry)
}

/** The parser registered under `key`. @internal */
export function parserByKey(key: string): ParserEntry | undefined {
  return globals.parsersByKey.get(key)
}

/** The parser registered for a MIME type (lowercase, without parameters). @internal */
export function parserByMime(mime: string): ParserEntry | undefined {
  return globals.parsersByMime.get(mime)
}
