/**
 * The errors of the settings toolkit: {@link ValueError} for one value's text, {@link SettingsError}
 * for a whole configuration.
 *
 * @module
 */

/** The codes of {@link ValueError}, one per value parser. */
export type ValueErrorCode = 'ERR_INVALID_DURATION' | 'ERR_INVALID_BOOLEAN' | 'ERR_INVALID_MAP'

/**
 * Thrown by the value parsers ({@link parseGoDuration}, {@link parseBool}, {@link parseMap}) for
 * text they refuse. The message follows Go's wording where Go has one.
 */
export class ValueError extends SyntaxError {
  /** Which parser refused the text. */
  readonly code: ValueErrorCode
  /**
   * @param message What is wrong, for example `strconv.ParseBool: parsing "maybe": invalid syntax`.
   * @param code Which parser refused the text.
   */
  constructor(message: string, code: ValueErrorCode) {
    super(message)
    this.name = new.target.name
    this.code = code
  }
}

/**
 * Thrown by {@link parseGoDuration}; the message is Go's `time.ParseDuration` message, for example
 * `time: unknown unit "d" in duration "1d"`.
 */
export class DurationError extends ValueError {
  /** @param message Go's message. */
  constructor(message: string) {
    super(message, 'ERR_INVALID_DURATION')
  }
}

/** The `code` of every {@link SettingsError}. */
export const SETTINGS_ERROR_CODE = 'ERR_INVALID_SETTINGS'

/**
 * The exit status of both servers' executables when their settings are invalid: 2, as for a bad
 * command line (and as a Go program that panics, which is what upstream ratelimit does on a bad
 * variable). An exit status of 1 stays for failures at run time.
 */
export const SETTINGS_EXIT_STATUS = 2

/**
 * Thrown when settings are invalid; lists every problem at once, one a line, each as
 * `NAME: problem (got "…")` (secrets are shown as `(got a value)`).
 *
 * @example
 *
 * ```ts
 * import { SETTINGS_EXIT_STATUS, SettingsError } from '@gatehouse/settings'
 *
 * let load!: () => unknown
 * try {
 *   load()
 * } catch (error) {
 *   if (!(error instanceof SettingsError)) throw error
 *   console.error(`my-server: ${error.message}`) // "my-server: invalid settings:\n  PORT: …"
 *   process.exit(SETTINGS_EXIT_STATUS)
 * }
 * ```
 */
export class SettingsError extends Error {
  /** Always {@link SETTINGS_ERROR_CODE}. */
  readonly code = SETTINGS_ERROR_CODE
  /** Every problem found, one per entry, in the order of the field table. */
  readonly problems: readonly string[]
  /** @param problems Every problem found; at least one. */
  constructor(problems: readonly string[]) {
    super(`invalid settings:\n  ${problems.join('\n  ')}`)
    this.name = 'SettingsError'
    this.problems = Object.freeze([...problems])
  }
}
