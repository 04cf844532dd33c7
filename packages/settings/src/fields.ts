/**
 * The fields of a settings table: one environment variable each, with its names, its default
 * (written as the variable's text, as envconfig's `default:"…"` tags) and its parser.
 *
 * @module
 */
import { parseGoDuration } from './duration.js'
import { ValueError } from './errors.js'
import { parseBool, parseList, parseMap } from './values.js'

/**
 * What a field's parser (or a check) answers for text it refuses: one or more problems, shown as
 * `NAME: problem (got "…")`. Make one with {@link invalid}.
 */
export class Invalid {
  /** The problems, without the variable's name. */
  readonly messages: readonly string[]
  /** Whether `(got "…")` follows (`(got a value)` for a secret). */
  readonly echo: boolean
  /**
   * @param messages The problems.
   * @param echo Whether the value is quoted after them.
   */
  constructor(messages: readonly string[], echo: boolean) {
    this.messages = messages
    this.echo = echo
  }
}

/** Options of {@link invalid}. */
export interface InvalidOptions {
  /**
   * Quote the value after the message (`(got "…")`, or `(got a value)` for a secret).
   *
   * @default true
   */
  readonly echo?: boolean
}

/**
 * A refusal, for parsers and checks.
 *
 * @param message The problem (or several), for example `must be postgres`.
 * @example
 *
 * ```ts
 * import { field, invalid } from '@gatehouse/settings'
 *
 * const driver = field('DB_DRIVER', (text) => (text === 'postgres' ? text : invalid('must be postgres')))
 * ```
 */
export function invalid(
  message: string | readonly string[],
  options: InvalidOptions = {},
): Invalid {
  return new Invalid(typeof message === 'string' ? [message] : message, options.echo ?? true)
}

/**
 * A variable's names: the name itself, then aliases. The name gets the table's prefixes
 * (`AUTHSVC_`, `GOTRUE_`); aliases are read as written, after it (`['API_PORT', 'PORT']`,
 * `['REDIS_URL', 'KVSTORE_URL']`).
 */
export type Names = string | readonly [name: string, ...aliases: string[]]

/** Options every field takes. */
export interface FieldOptions<T> {
  /**
   * The default, written as the variable's text and parsed as a set value would be (`'10s'`,
   * `'false'`, `'a,b'`). An empty variable counts as unset.
   *
   * @default '' (`'false'` for {@link bool}); a field that cannot parse its default text needs
   *   another default, a computed one or `required`
   */
  readonly default?: string
  /** Unset is a problem: `required`, or this text instead. */
  readonly required?: boolean | string
  /** Never shown in problems: `(got a value)` instead of the value. */
  readonly secret?: boolean
  /**
   * What the setting means, written once, in Markdown: the README's "Meaning" cell (the table's
   * `markdown()`) shows it whole, `--help` its first sentence (code spans
   * and links as plain text), followed by the default in parentheses. Start with a sentence that
   * stands alone.
   */
  readonly help?: string
  /** Follows the default in `--help` and the README: `0: one per CPU core`. */
  readonly note?: string
  /**
   * The README's Default cell for a field whose default is computed (from other settings or the
   * host), in Markdown: `` `2` for `redis` on 2+ cores, else `1` ``. `--help` shows the value
   * computed on the host instead.
   */
  readonly computedDefault?: string
  /** A further check of the parsed value: a problem, or `undefined` when fine. */
  readonly check?: (value: T) => string | Invalid | undefined
}

/** One environment variable of a settings table, parsed to a `T`. Made by {@link field}. */
export interface Field<T> {
  /** Tells fields from groups. */
  readonly kind: 'field'
  /** The name, then the aliases. */
  readonly names: readonly [string, ...string[]]
  /** The default as text; see {@link FieldOptions.default}. */
  readonly default: string
  /** See {@link FieldOptions.required}. */
  readonly required: boolean | string
  /** See {@link FieldOptions.secret}. */
  readonly secret: boolean
  /** See {@link FieldOptions.help}. */
  readonly help: string
  /** See {@link FieldOptions.note}. */
  readonly note: string
  /** See {@link FieldOptions.computedDefault}; empty when the default is constant. */
  readonly computedDefault: string
  /** Parses a set (non-empty) value, or the default. */
  readonly parse: (text: string) => T | Invalid
  /**
   * Set for a family made by {@link family}: how the table collects its members, one variable
   * each. Absent for a field read from one variable.
   */
  readonly family?: FamilyRule
}

/** How a {@link family}'s variables are found and read. */
export interface FamilyRule {
  /**
   * The placeholder that ends the field's names (`<LOCALE>` in
   * `MAILER_TEMPLATES_INVITE_<LOCALE>`): a variable whose name is the part before it followed by
   * a suffix is a member.
   */
  readonly placeholder: string
  /** The key of a member's suffix (`pt-BR` for `PT_BR`), or the problem with the suffix. */
  readonly key: (suffix: string) => string | Invalid
  /** Parses a member's (non-empty) text. */
  readonly parseMember: (text: string) => unknown
}

/**
 * A field with any parser: the building block of the others.
 *
 * @param names The variable's name, or its name then aliases.
 * @param parse From the text (never empty, unless the default is) to the value or an
 *   {@link Invalid}.
 * @param options Default, `required`, `secret`, help text, check.
 */
export function field<T>(
  names: Names,
  parse: (text: string) => T | Invalid,
  options: FieldOptions<T> = {},
): Field<T> {
  const { check } = options
  const checked = (value: T): T | Invalid => {
    const problem = check?.(value)
    return problem === undefined ? value : typeof problem === 'string' ? invalid(problem) : problem
  }
  return Object.freeze({
    kind: 'field',
    names: typeof names === 'string' ? ([names] as const) : names,
    default: options.default ?? '',
    required: options.required ?? false,
    secret: options.secret ?? false,
    help: options.help ?? '',
    note: options.note ?? '',
    computedDefault: options.computedDefault ?? '',
    parse:
      check === undefined
        ? parse
        : (text: string): T | Invalid => {
            const value = parse(text)
            return value instanceof Invalid ? value : checked(value)
          },
  })
}

/** Runs a parser that throws {@link ValueError}, answering `message` instead. */
function attempt<T>(parse: (text: string) => T, message: string): (text: string) => T | Invalid {
  return (text) => {
    try {
      return parse(text)
    } catch (error) {
      if (error instanceof ValueError) return invalid(message)
      throw error
    }
  }
}

/** Options of {@link family}. */
export interface FamilyOptions<T> extends Pick<FieldOptions<T>, 'help' | 'note' | 'secret'> {
  /** The key of a member's suffix, or the problem with it. @default the suffix as written */
  readonly key?: (suffix: string) => string | Invalid
}

/**
 * A family of variables: every variable named `<NAME>_<SUFFIX>` the environment sets (the table's
 * prefixes apply to the name as to any field's), read with `member`'s parser into one record by
 * key. Its value is `{}` when none is set. The name ends in the placeholder that `--help` and the
 * README show (`'MAILER_SUBJECTS_INVITE_<LOCALE>'`); a variable that is another field's never
 * counts as a member.
 *
 * @param name The name, ending in `_<PLACEHOLDER>`.
 * @param member How each member is read: its parser and check (its name, default and help are not
 *   used).
 * @param options Help, note, secret, and how a suffix becomes a key.
 * @throws {TypeError} When the name does not end in a `_<PLACEHOLDER>`.
 */
export function family<T>(
  name: string,
  member: Field<T>,
  options: FamilyOptions<T> = {},
): Field<Readonly<Record<string, T>>> {
  const placeholder = /_(<[A-Z][A-Z_]*>)$/.exec(name)?.[1]
  if (placeholder === undefined) {
    throw new TypeError(`the family name ${name} must end in a placeholder such as _<LOCALE>`)
  }
  const base = field<Readonly<Record<string, T>>>(name, () => ({}), {
    ...(options.help === undefined ? {} : { help: options.help }),
    ...(options.note === undefined ? {} : { note: options.note }),
    ...(options.secret === undefined ? {} : { secret: options.secret }),
  })
  return Object.freeze({
    ...base,
    family: Object.freeze({
      placeholder,
      key: options.key ?? ((suffix: string) => suffix),
      parseMember: member.parse,
    }),
  })
}

/**
 * A text variable, as is.
 *
 * @param names The variable's name, or its name then aliases.
 * @param options Default (`''` unless given), `required`, `secret`, help, check.
 */
export function text(names: Names, options: FieldOptions<string> = {}): Field<string> {
  return field(names, (value) => value, options)
}

/**
 * An absolute URL (checked with `new URL`), kept as text. Problem: `must be an absolute URL`.
 *
 * @param names The variable's name, or its name then aliases.
 * @param options Default, `required`, `secret`, help, check.
 */
export function url(names: Names, options: FieldOptions<string> = {}): Field<string> {
  return field(
    names,
    (value) => (value === '' || URL.canParse(value) ? value : invalid('must be an absolute URL')),
    options,
  )
}

/**
 * A boolean, as Go's `strconv.ParseBool` reads it ({@link parseBool}). Problem:
 * `must be a boolean (true/false/1/0)`.
 *
 * @param names The variable's name, or its name then aliases.
 * @param options Default (`'false'` unless given, Go's zero value), help, check.
 */
export function bool(names: Names, options: FieldOptions<boolean> = {}): Field<boolean> {
  return field(names, attempt(parseBool, 'must be a boolean (true/false/1/0)'), {
    default: 'false',
    ...options,
  })
}

/** Bounds of {@link integer} and {@link decimal}. */
export interface RangeOptions {
  /** Smallest accepted value. @default 0 */
  readonly min?: number
  /** Largest accepted value. @default no bound */
  readonly max?: number
}

function numeric(
  kind: 'integer' | 'number',
  { min = 0, max }: RangeOptions,
): (text: string) => number | Invalid {
  const pattern = kind === 'integer' ? /^[-+]?\d+$/ : /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/
  const what = kind === 'integer' ? 'an integer' : 'a number'
  const message =
    max === undefined
      ? `must be ${what} of at least ${String(min)}`
      : `must be ${what} from ${String(min)} to ${String(max)}`
  return (text) => {
    const value = pattern.test(text) ? Number(text) : NaN
    const valid = kind === 'integer' ? Number.isSafeInteger(value) : Number.isFinite(value)
    return valid && value >= min && (max === undefined || value <= max) ? value : invalid(message)
  }
}

/**
 * A decimal integer (an optional sign, digits; as Go's `strconv.Atoi`) within bounds. Problem:
 * `must be an integer from 1 to 100` (or `of at least 1` without a maximum).
 *
 * @param names The variable's name, or its name then aliases.
 * @param options Bounds (`min` 0 unless given), default, help, check.
 */
export function integer(
  names: Names,
  options: FieldOptions<number> & RangeOptions = {},
): Field<number> {
  return field(names, numeric('integer', options), options)
}

/**
 * A TCP port: an {@link integer} from 0 to 65535.
 *
 * @param names The variable's name, or its name then aliases.
 * @param options Default, help, check.
 */
export function port(names: Names, options: FieldOptions<number> = {}): Field<number> {
  return integer(names, { ...options, min: 0, max: 65_535 })
}

/**
 * A decimal number (`0.8`, `.5`, `1e3`) within bounds. Problem: `must be a number from 0 to 1`.
 *
 * @param names The variable's name, or its name then aliases.
 * @param options Bounds, default, help, check.
 */
export function decimal(
  names: Names,
  options: FieldOptions<number> & RangeOptions = {},
): Field<number> {
  return field(names, numeric('number', options), options)
}

/** A Go duration in milliseconds, or `undefined` when the text is not one or is negative. */
function nonNegativeDuration(text: string): number | undefined {
  const ms = attempt(parseGoDuration, '')(text)
  return ms instanceof Invalid || ms < 0 ? undefined : ms
}

/** Options of {@link duration}. */
export interface DurationOptions extends FieldOptions<number> {
  /** Refuse zero too: `must be greater than zero`. @default false */
  readonly positive?: boolean
}

/**
 * A non-negative Go duration (`10s`, `1h30m`, `150ms`; {@link parseGoDuration}), in milliseconds.
 * Problem: `must be a non-negative Go duration such as 10s, 1m30s or 150ms`.
 *
 * @param names The variable's name, or its name then aliases.
 * @param options Default (a duration such as `'10s'`), `positive`, help, check.
 */
export function duration(names: Names, options: DurationOptions = {}): Field<number> {
  return field(
    names,
    (value) => {
      const ms = nonNegativeDuration(value)
      if (ms === undefined) {
        return invalid('must be a non-negative Go duration such as 10s, 1m30s or 150ms')
      }
      return options.positive === true && ms === 0 ? invalid('must be greater than zero') : ms
    },
    options,
  )
}

/** Options of {@link secondsOrDuration}. */
export interface SecondsOrDurationOptions extends FieldOptions<number> {
  /**
   * The unit of the value: `'ms'` (durations rounded up to whole milliseconds) or `'s'` (seconds,
   * fractional for a duration such as `1500ms`).
   */
  readonly unit: 'ms' | 's'
}

/**
 * A non-negative whole number of seconds (`30`) or a Go duration (`1m30s`), as GoTrue's settings
 * that moved from seconds to durations. Problem:
 * `must be a number of seconds or a duration such as 10s`.
 *
 * @param names The variable's name, or its name then aliases.
 * @param options The unit of the value, default, help, check.
 */
export function secondsOrDuration(names: Names, options: SecondsOrDurationOptions): Field<number> {
  const scale = options.unit === 'ms' ? 1000 : 1
  return field(
    names,
    (value) => {
      if (/^\d+$/.test(value)) return Number(value) * scale
      const ms = nonNegativeDuration(value)
      if (ms === undefined) return invalid('must be a number of seconds or a duration such as 10s')
      return options.unit === 'ms' ? Math.ceil(ms) : ms / 1000
    },
    options,
  )
}

/**
 * One of a fixed set of values, compared without regard to case and answered as listed. Problem:
 * `must be one of tcp, unix`.
 *
 * @param names The variable's name, or its name then aliases.
 * @param values The accepted values.
 * @param options Default (one of `values`), help, check.
 */
export function oneOf<const T extends string>(
  names: Names,
  values: readonly T[],
  options: FieldOptions<T> = {},
): Field<T> {
  return field(
    names,
    (value) =>
      values.find((allowed) => allowed.toLowerCase() === value.toLowerCase()) ??
      invalid(`must be one of ${values.join(', ')}`),
    options,
  )
}

/**
 * A comma-separated list ({@link parseList}: items trimmed, empty ones dropped).
 *
 * @param names The variable's name, or its name then aliases.
 * @param options Default (`'service_role,supabase_admin'`), help, check.
 */
export function list(
  names: Names,
  options: FieldOptions<readonly string[]> = {},
): Field<readonly string[]> {
  return field(names, (value) => parseList(value), options)
}

/**
 * A `k1:v1,k2:v2` map ({@link parseMap}). Problem:
 * `must be a list of key:value pairs separated by commas`.
 *
 * @param names The variable's name, or its name then aliases.
 * @param options Default, help, check.
 */
export function map(
  names: Names,
  options: FieldOptions<Readonly<Record<string, string>>> = {},
): Field<Readonly<Record<string, string>>> {
  return field(
    names,
    attempt(parseMap, 'must be a list of key:value pairs separated by commas'),
    options,
  )
}
