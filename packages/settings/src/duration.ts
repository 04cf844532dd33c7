/**
 * Go durations, parsed as Go's `time.ParseDuration` parses them (same grammar, same limits, same
 * messages).
 *
 * @module
 */
import { DurationError } from './errors.js'

/** Nanoseconds per unit; `µs` is U+00B5 (micro sign), `μs` U+03BC (Greek mu), as in Go. */
const UNIT_NS: ReadonlyMap<string, bigint> = new Map([
  ['ns', 1n],
  ['us', 1_000n],
  ['\u00b5s', 1_000n],
  ['\u03bcs', 1_000n],
  ['ms', 1_000_000n],
  ['s', 1_000_000_000n],
  ['m', 60_000_000_000n],
  ['h', 3_600_000_000_000n],
])

/** 2^63: Go's durations are int64 nanoseconds. */
const LIMIT = 1n << 63n

/** Go's `time.quote`: ASCII printable as is (`"` and `\` escaped), anything else as `\xNN` bytes. */
function goQuote(text: string): string {
  let out = '"'
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0
    if (code < 0x20 || code >= 0x80) {
      for (const byte of new TextEncoder().encode(char)) {
        out += `\\x${byte.toString(16).padStart(2, '0')}`
      }
    } else {
      out += char === '"' || char === '\\' ? `\\${char}` : char
    }
  }
  return `${out}"`
}

const isDigit = (char: string | undefined): boolean =>
  char !== undefined && char >= '0' && char <= '9'

/**
 * Parses a Go duration: an optional sign, then one or more decimal numbers, each with an optional
 * fraction and a unit (`ns`, `us` or `µs`, `ms`, `s`, `m`, `h`), such as `300ms`, `-1.5h` or
 * `2h45m`; a unit is required except for `0`.
 *
 * @param text The duration, for example `1h30m`.
 * @returns The duration in milliseconds: fractional below a millisecond (`2us` is `0.002`),
 *   negative for a negative duration.
 * @throws {@link DurationError} With Go's message: `time: invalid duration "…"`, `time: missing
 *   unit in duration "1"` or `time: unknown unit "d" in duration "1d"`; also beyond Go's range
 *   (about 292 years).
 * @see https://pkg.go.dev/time#ParseDuration
 */
export function parseGoDuration(text: string): number {
  return Number(parseGoDurationNs(text)) / 1e6
}

function parseGoDurationNs(text: string): bigint {
  const quoted = goQuote(text)
  const invalid = (): DurationError => new DurationError(`time: invalid duration ${quoted}`)
  let rest = text
  let negative = false
  if (rest.startsWith('-') || rest.startsWith('+')) {
    negative = rest.startsWith('-')
    rest = rest.slice(1)
  }
  if (rest === '0') return 0n
  if (rest === '') throw invalid()
  let total = 0n
  while (rest !== '') {
    if (!(rest.startsWith('.') || isDigit(rest[0]))) throw invalid()
    // The whole part: an overflow is an error.
    let i = 0
    let whole = 0n
    for (; isDigit(rest[i]); i++) {
      whole = whole * 10n + BigInt(rest.charCodeAt(i) - 48)
      if (whole > LIMIT) throw invalid()
    }
    let digits = i
    // The fraction: digits beyond int64 precision are read and ignored, as Go does.
    let fraction = 0n
    let scale = 1
    if (rest[i] === '.') {
      i++
      let overflow = false
      for (; isDigit(rest[i]); i++, digits++) {
        if (overflow) continue
        const next = fraction * 10n + BigInt(rest.charCodeAt(i) - 48)
        if (next > LIMIT) {
          overflow = true
          continue
        }
        fraction = next
        scale *= 10
      }
    }
    if (digits === 0) throw invalid() // "." or ".s"
    rest = rest.slice(i)
    let unitEnd = 0
    while (unitEnd < rest.length && !(rest[unitEnd] === '.' || isDigit(rest[unitEnd]))) unitEnd++
    if (unitEnd === 0) throw new DurationError(`time: missing unit in duration ${quoted}`)
    const unitName = rest.slice(0, unitEnd)
    rest = rest.slice(unitEnd)
    const unit = UNIT_NS.get(unitName)
    if (unit === undefined) {
      throw new DurationError(`time: unknown unit ${goQuote(unitName)} in duration ${quoted}`)
    }
    if (whole > LIMIT / unit) throw invalid()
    let value = whole * unit
    if (fraction > 0n) {
      // Go computes the fraction in float64 (nanosecond-exact for fractions of an hour).
      value += BigInt(Math.trunc(Number(fraction) * (Number(unit) / scale)))
      if (value > LIMIT) throw invalid()
    }
    total += value
    if (total > LIMIT) throw invalid()
  }
  if (negative) return -total
  if (total > LIMIT - 1n) throw invalid()
  return total
}
