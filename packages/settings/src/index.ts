/**
 * `@gatehouse/settings`: settings from environment variables for the Gatehouse servers. One field
 * table per server gives the loader (every problem at once), its messages and `--help`; values
 * are parsed as upstream's Go servers parse them (durations, booleans, maps); `.env` files are
 * read with Node's parser; one list says what never reaches a log; the executables share their
 * command-line parsing, usage errors and version.
 *
 * @packageDocumentation
 */
export { parseGoDuration } from './duration.js'
export { parseBool, parseList, parseMap } from './values.js'
export { parseOtlpHeaders, parseResourceAttributes } from './otel.js'
export {
  DurationError,
  SETTINGS_ERROR_CODE,
  SETTINGS_EXIT_STATUS,
  SettingsError,
  ValueError,
  type ValueErrorCode,
} from './errors.js'
export {
  bool,
  decimal,
  duration,
  family,
  field,
  integer,
  invalid,
  Invalid,
  list,
  map,
  oneOf,
  port,
  secondsOrDuration,
  text,
  url,
  type DurationOptions,
  type FamilyOptions,
  type FamilyRule,
  type Field,
  type FieldOptions,
  type InvalidOptions,
  type Names,
  type RangeOptions,
  type SecondsOrDurationOptions,
} from './fields.js'
export {
  defineSettings,
  group,
  type DefaultTexts,
  type Env,
  type Fields,
  type Group,
  type HelpOptions,
  helpSummary,
  type MarkdownOptions,
  type SettingsOf,
  type SettingsRead,
  type SettingsTable,
  type TableOptions,
  type Values,
} from './table.js'
export { markdownTable, markedSections, replaceMarkedRegion, type MarkdownRow } from './markdown.js'
export { parseEnvFile, readEnvFile, type ReadEnvFileOptions } from './env-file.js'
export {
  USAGE_ERROR_CODE,
  USAGE_EXIT_STATUS,
  UsageError,
  environmentWithFile,
  parseCommandLine,
  readPackageVersion,
  usageErrorLine,
  type CommandLine,
  type OptionSpec,
  type OptionSpecs,
  type OptionValues,
} from './cli.js'
export {
  REDACT_CENSOR,
  REDACT_PATHS,
  SECRET_HEADERS,
  SECRET_KEYS,
  SECRET_QUERY_PARAMS,
  redactUrl,
} from './redact.js'
