/**
 * Command lines read as Go's `flag` package reads them, with its error texts, for the
 * executables that keep upstream's Go flags (`gatehouse-ratelimit-client`): `-name value`,
 * `-name=value`, `--name` as `-name`, boolean flags without a value (`-name=false` to unset),
 * parsing stops at the first argument that is no flag and after `--`.
 *
 * @see https://pkg.go.dev/flag
 * @module
 */
import { parseBool, ValueError } from '@gatehouse/settings'

/** One flag, as `flag.String`, `flag.Bool` or `flag.Var` defines it. */
export type GoFlag =
  | {
      /** `flag.String`: takes a value; the last one given counts. */
      readonly kind: 'string'
      readonly name: string
      readonly usage: string
      /** @default '' */
      readonly default?: string
    }
  | {
      /** `flag.Bool`: `-name` sets it; `-name=<strconv.ParseBool text>` sets it to that. */
      readonly kind: 'bool'
      readonly name: string
      readonly usage: string
    }
  | {
      /** `flag.Var`: takes a value each time it is given; all are kept, in order. */
      readonly kind: 'value'
      readonly name: string
      readonly usage: string
      /** The `Set` method's check: Go's error text for a value it refuses, else undefined. */
      readonly check: (value: string) => string | undefined
    }

/** The `code` of every {@link GoFlagError}. */
export const GO_FLAG_ERROR_CODE = 'ERR_GO_FLAG'

/**
 * A command line Go's `flag` package refuses; the message is its text, such as
 * `flag provided but not defined: -x` or `invalid value "abc" for flag -n: parse error`.
 */
export class GoFlagError extends Error {
  /** Always {@link GO_FLAG_ERROR_CODE}. */
  readonly code = GO_FLAG_ERROR_CODE
  /** @param message Go's text. */
  constructor(message: string) {
    super(message)
    this.name = 'GoFlagError'
  }
}

/** The flags a command line gave, by name; see {@link parseGoFlags}. */
export interface GoFlagValues {
  /** `string` flags given (the last value) and defaults of those not given. */
  readonly strings: ReadonlyMap<string, string>
  /** `bool` flags set to true. */
  readonly bools: ReadonlySet<string>
  /** Every value of each `value` flag, in order (none given: absent). */
  readonly values: ReadonlyMap<string, readonly string[]>
  /** `-h`, `-help` (or `--h`, `--help`) was given and is not a defined flag (Go's `ErrHelp`). */
  readonly help: boolean
  /** The arguments left after the flags (from the first that is no flag, or after `--`). */
  readonly args: readonly string[]
}

/** The escapes `strconv.Quote` writes by name. */
const NAMED_ESCAPES: Readonly<Record<string, string | undefined>> = {
  '"': '\\"',
  '\\': '\\\\',
  '\x07': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
}

/**
 * Go's `%q` of a string (`strconv.Quote`): in double quotes, with `\"`, `\\`, the C escapes and
 * `\xNN`/`\u00NN` for other control characters.
 */
export function goQuote(text: string): string {
  let quoted = '"'
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0
    const escape = Object.hasOwn(NAMED_ESCAPES, char) ? NAMED_ESCAPES[char] : undefined
    if (escape !== undefined) quoted += escape
    else if (code < 0x20 || code === 0x7f) quoted += `\\x${code.toString(16).padStart(2, '0')}`
    else if (code >= 0x80 && code < 0xa0) quoted += `\\u${code.toString(16).padStart(4, '0')}`
    else quoted += char
  }
  return `${quoted}"`
}

/**
 * Parses `argv` as `flag.FlagSet.Parse` does.
 *
 * @throws {GoFlagError} With Go's text: `flag provided but not defined: -x`, `bad flag syntax:
 *   ---x`, `flag needs an argument: -x`, `invalid boolean value "v" for -x: parse error`,
 *   `invalid value "v" for flag -x: <the check's text>`.
 */
export function parseGoFlags(argv: readonly string[], flags: readonly GoFlag[]): GoFlagValues {
  const byName = new Map(flags.map((flag) => [flag.name, flag]))
  const strings = new Map<string, string>()
  for (const flag of flags) if (flag.kind === 'string') strings.set(flag.name, flag.default ?? '')
  const bools = new Set<string>()
  const values = new Map<string, string[]>()
  let help = false
  let i = 0
  while (i < argv.length) {
    const arg = argv[i] ?? ''
    if (arg.length < 2 || !arg.startsWith('-')) break
    const dashes = arg.startsWith('--') ? 2 : 1
    if (arg === '--') {
      i++
      break
    }
    i++
    let name = arg.slice(dashes)
    if (name === '' || name.startsWith('-') || name.startsWith('=')) {
      throw new GoFlagError(`bad flag syntax: ${arg}`)
    }
    let value: string | undefined
    const equals = name.indexOf('=', 1)
    if (equals !== -1) {
      value = name.slice(equals + 1)
      name = name.slice(0, equals)
    }
    const flag = byName.get(name)
    if (flag === undefined) {
      if (name === 'help' || name === 'h') {
        help = true
        break
      }
      throw new GoFlagError(`flag provided but not defined: -${name}`)
    }
    if (flag.kind === 'bool') {
      let set = true
      if (value !== undefined) {
        try {
          set = parseBool(value)
        } catch (error) {
          if (!(error instanceof ValueError)) throw error
          throw new GoFlagError(`invalid boolean value ${goQuote(value)} for -${name}: parse error`)
        }
      }
      if (set) bools.add(name)
      else bools.delete(name)
      continue
    }
    if (value === undefined && i < argv.length) value = argv[i++]
    if (value === undefined) throw new GoFlagError(`flag needs an argument: -${name}`)
    if (flag.kind === 'string') strings.set(name, value)
    else {
      const problem = flag.check(value)
      if (problem !== undefined) {
        throw new GoFlagError(`invalid value ${goQuote(value)} for flag -${name}: ${problem}`)
      }
      values.set(name, [...(values.get(name) ?? []), value])
    }
  }
  return { strings, bools, values, help, args: argv.slice(i) }
}

/**
 * A flag's value name and usage text as `flag.UnquoteUsage` gives them: the first back-quoted
 * word of the usage (quotes removed), else the flag's type (`string`, `value`, none for a bool).
 */
function unquoteUsage(flag: GoFlag): { name: string; usage: string } {
  const open = flag.usage.indexOf('`')
  const close = open === -1 ? -1 : flag.usage.indexOf('`', open + 1)
  if (close !== -1) {
    const name = flag.usage.slice(open + 1, close)
    return { name, usage: flag.usage.slice(0, open) + name + flag.usage.slice(close + 1) }
  }
  return { name: flag.kind === 'bool' ? '' : flag.kind, usage: flag.usage }
}

/**
 * The usage Go's `flag` package prints (`Usage of <program>:` and `PrintDefaults`): the flags
 * sorted by name, each as `  -name type` with its usage on the next line after four spaces and a
 * tab (on the same line for a one-letter bool), and a non-empty string default as
 * `(default "…")`.
 */
export function goFlagUsage(program: string, flags: readonly GoFlag[]): string {
  const lines = [`Usage of ${program}:`]
  const sorted = [...flags].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  for (const flag of sorted) {
    const unquoted = unquoteUsage(flag)
    const head = `  -${flag.name}${unquoted.name === '' ? '' : ` ${unquoted.name}`}`
    const fallback = flag.kind === 'string' ? (flag.default ?? '') : ''
    const usage =
      unquoted.usage.replaceAll('\n', '\n    \t') +
      (fallback === '' ? '' : ` (default ${goQuote(fallback)})`)
    lines.push(head.length <= 4 ? `${head}\t${usage}` : `${head}\n    \t${usage}`)
  }
  return `${lines.join('\n')}\n`
}
