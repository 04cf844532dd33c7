/**
 * Go-style durations (`time.ParseDuration`): a sequence of decimal numbers, each with an optional
 * fraction and a unit suffix, such as `300ms`, `1.5h` or `2h45m`. Valid units are `ns`, `us` (or
 * `µs`), `ms`, `s`, `m` and `h`.
 */

const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
}

/** Thrown by {@link parseGoDuration}; the message follows Go's `time.ParseDuration` wording. */
export class DurationError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'DurationError'
  }
}

/**
 * Parses a Go-style duration.
 *
 * @param text The duration, for example `24h` or `-1.5m`.
 * @returns The duration in milliseconds (may be fractional for `ns`/`us`; may be negative).
 * @throws {@link DurationError} With Go's message, for example `time: unknown unit "d" in
 *   duration "1d"`.
 * @see https://pkg.go.dev/time#ParseDuration
 */
export function parseGoDuration(text: string): number {
  const quoted = JSON.stringify(text)
  let rest = text
  let sign = 1
  if (rest.startsWith('-') || rest.startsWith('+')) {
    if (rest.startsWith('-')) sign = -1
    rest = rest.slice(1)
  }
  if (rest === '0') return 0
  if (rest === '') throw new DurationError(`time: invalid duration ${quoted}`)
  let total = 0
  while (rest !== '') {
    const number = /^(\d*)(?:\.(\d*))?/.exec(rest)
    const whole = number?.[1] ?? ''
    const fraction = number?.[2]
    if (whole === '' && (fraction === undefined || fraction === '')) {
      throw new DurationError(`time: invalid duration ${quoted}`)
    }
    rest = rest.slice(number?.[0].length ?? 0)
    const unit = /^[^\d.]*/.exec(rest)?.[0] ?? ''
    if (unit === '') throw new DurationError(`time: missing unit in duration ${quoted}`)
    const factor = UNIT_MS[unit]
    if (factor === undefined) {
      throw new DurationError(`time: unknown unit ${JSON.stringify(unit)} in duration ${quoted}`)
    }
    rest = rest.slice(unit.length)
    total += Number(`${whole === '' ? '0' : whole}.${fraction ?? '0'}`) * factor
  }
  if (!Number.isFinite(total)) throw new DurationError(`time: invalid duration ${quoted}`)
  return sign * total
}
