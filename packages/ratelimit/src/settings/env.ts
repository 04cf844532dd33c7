/**
 * Typed reading of environment variables with Go-compatible parsing (upstream uses envconfig:
 * `strconv.ParseBool`, `time.ParseDuration`), collecting every problem instead of stopping at
 * the first.
 *
 * @module
 */

/** Go's `strconv.ParseBool` spellings. */
const TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True'])
const FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False'])

const DURATION_UNITS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
}

/**
 * Parses a Go duration string (`10s`, `1h30m`, `150us`, `0`).
 *
 * @returns Milliseconds, or undefined when the text is not a valid duration.
 */
export function parseGoDuration(text: string): number | undefined {
  if (text === '0' || text === '+0' || text === '-0') return 0
  const match = /^([-+]?)(.+)$/.exec(text)
  if (match === null) return undefined
  const [, sign, rest] = match as unknown as [string, string, string]
  const part = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y
  let total = 0
  let pos = 0
  while (pos < rest.length) {
    part.lastIndex = pos
    const m = part.exec(rest)
    if (m === null) return undefined
    total += Number(m[1]) * (DURATION_UNITS[m[2] ?? ''] ?? NaN)
    pos = part.lastIndex
  }
  if (pos === 0) return undefined
  return sign === '-' ? -total : total
}

/** Reads variables from an environment, remembering each problem as `NAME: problem (got "…")`. */
export class EnvReader {
  readonly problems: string[] = []
  /**
   * Every setting read through a typed method, in reading order: its names joined with ` | `
   * (all spellings of one setting) mapped to its default as text. Feeds `--help`.
   */
  readonly defaults = new Map<string, string>()
  readonly #env: Readonly<Record<string, string | undefined>>

  constructor(env: Readonly<Record<string, string | undefined>>) {
    this.#env = env
  }

  /**
   * The raw value of the first set name (all names are spellings of one setting), or undefined.
   * Several spellings set to different values is a problem.
   */
  raw(names: string | readonly string[]): { name: string; value: string } | undefined {
    const list = typeof names === 'string' ? [names] : names
    let found: { name: string; value: string } | undefined
    for (const name of list) {
      const value = this.#env[name]
      if (value === undefined || value === '') continue
      if (found === undefined) found = { name, value }
      else if (found.value !== value) {
        this.problems.push(`${found.name} and ${name} are both set, to different values; set one`)
      }
    }
    return found
  }

  #see(names: string | readonly string[], fallback: string | number | boolean): void {
    const key = typeof names === 'string' ? names : names.join(' | ')
    if (!this.defaults.has(key)) this.defaults.set(key, String(fallback))
  }

  #problem(name: string, problem: string, value: string, secret = false): void {
    this.problems.push(secret ? `${name}: ${problem}` : `${name}: ${problem} (got "${value}")`)
  }

  /** A string setting. */
  string(names: string | readonly string[], fallback: string): string {
    this.#see(names, fallback)
    return this.raw(names)?.value ?? fallback
  }

  /** A boolean setting (Go `ParseBool` spellings). */
  bool(names: string | readonly string[], fallback: boolean): boolean {
    this.#see(names, fallback)
    const found = this.raw(names)
    if (found === undefined) return fallback
    if (TRUE.has(found.value)) return true
    if (FALSE.has(found.value)) return false
    this.#problem(found.name, 'must be a boolean (true/false/1/0)', found.value)
    return fallback
  }

  #numeric(
    names: string | readonly string[],
    fallback: number,
    [min, max]: readonly [number, number],
    kind: 'integer' | 'number',
  ): number {
    this.#see(names, fallback)
    const found = this.raw(names)
    if (found === undefined) return fallback
    const pattern = kind === 'integer' ? /^[-+]?\d+$/ : /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/
    const value = pattern.test(found.value) ? Number(found.value) : NaN
    const valid = kind === 'integer' ? Number.isSafeInteger(value) : Number.isFinite(value)
    if (!valid || value < min || value > max) {
      this.#problem(
        found.name,
        `must be ${kind === 'integer' ? 'an integer' : 'a number'} from ${String(min)} to ${String(max)}`,
        found.value,
      )
      return fallback
    }
    return value
  }

  /** An integer setting within `[min, max]`. */
  int(
    names: string | readonly string[],
    fallback: number,
    min = 0,
    max = Number.MAX_SAFE_INTEGER,
  ): number {
    return this.#numeric(names, fallback, [min, max], 'integer')
  }

  /** A decimal number within `[min, max]`. */
  number(names: string | readonly string[], fallback: number, min: number, max: number): number {
    return this.#numeric(names, fallback, [min, max], 'number')
  }

  /** A TCP port (0..65535). */
  port(names: string | readonly string[], fallback: number): number {
    return this.int(names, fallback, 0, 65_535)
  }

  /**
   * A Go duration (`10s`, `1h`).
   *
   * @returns Milliseconds.
   */
  duration(names: string | readonly string[], fallback: string): number {
    this.#see(names, fallback)
    const found = this.raw(names)
    const text = found?.value ?? fallback
    const ms = parseGoDuration(text)
    if (ms === undefined || ms < 0) {
      this.#problem(
        found?.name ?? String(names),
        'must be a non-negative Go duration such as 10s, 1m30s or 150ms',
        text,
      )
      return parseGoDuration(fallback) ?? 0
    }
    return ms
  }

  /** One of a fixed set of values (compared case-insensitively, returned as listed). */
  oneOf<T extends string>(
    names: string | readonly string[],
    fallback: T,
    allowed: readonly T[],
  ): T {
    this.#see(names, fallback)
    const found = this.raw(names)
    if (found === undefined) return fallback
    const match = allowed.find((a) => a.toLowerCase() === found.value.toLowerCase())
    if (match === undefined) {
      this.#problem(found.name, `must be one of ${allowed.join(', ')}`, found.value)
      return fallback
    }
    return match
  }

  /** A `k1:v1,k2:v2` map (envconfig map syntax, as `EXTRA_TAGS`). */
  map(names: string | readonly string[]): Record<string, string> {
    this.#see(names, '')
    const found = this.raw(names)
    const out: Record<string, string> = {}
    if (found === undefined) return out
    for (const item of found.value.split(',')) {
      const at = item.indexOf(':')
      if (at <= 0) {
        this.#problem(
          found.name,
          'must be a list of key:value pairs separated by commas',
          found.value,
        )
        return {}
      }
      out[item.slice(0, at)] = item.slice(at + 1)
    }
    return out
  }

  /** Records a problem with a setting whose value was read elsewhere. */
  invalid(name: string, problem: string, value?: string): void {
    if (value === undefined) this.problems.push(`${name}: ${problem}`)
    else this.#problem(name, problem, value)
  }
}
