import type { Unit } from '../protocol/types.js'

/**
 * Length of each unit's window in seconds (upstream `UnitToDivider`): windows are epoch-aligned,
 * not calendar-aligned, so a MONTH is 30 days and a YEAR 365 days.
 */
export const UNIT_SECONDS: Readonly<Record<Exclude<Unit, 'UNKNOWN'>, number>> = {
  SECOND: 1,
  MINUTE: 60,
  HOUR: 3600,
  DAY: 86_400,
  WEEK: 604_800,
  MONTH: 2_592_000,
  YEAR: 31_536_000,
}

/**
 * Window length of a unit in seconds.
 *
 * @throws {RangeError} For `UNKNOWN` (the configuration loader and the service reject that unit
 *   before it gets here; upstream crashes instead).
 */
export function unitSeconds(unit: Unit): number {
  if (unit === 'UNKNOWN') throw new RangeError('rate limit unit UNKNOWN has no window length')
  return UNIT_SECONDS[unit]
}

/**
 * Start of the window containing `nowSeconds` (epoch seconds), as upstream computes it:
 * `(now / divider) * divider`, the divider being `unitMultiplier` units.
 */
export function windowStart(nowSeconds: number, unit: Unit, unitMultiplier = 1): number {
  const divider = unitSeconds(unit) * unitMultiplier
  return Math.floor(nowSeconds / divider) * divider
}

/**
 * Seconds until the window of `unitMultiplier` units containing `nowSeconds` ends:
 * `divider - now % divider` (1..divider).
 */
export function secondsUntilReset(nowSeconds: number, unit: Unit, unitMultiplier = 1): number {
  const divider = unitSeconds(unit) * unitMultiplier
  return divider - (nowSeconds % divider)
}

/**
 * The largest `unit_multiplier` a rule may have (a Gatehouse addition, issue 32; Envoy PR #47307
 * proposes the field without a bound).
 */
export const MAX_UNIT_MULTIPLIER = 1_000_000

/**
 * The longest window a rule may have, in seconds: ten 365-day years. Windows stay far below
 * 2^53 milliseconds, and a counter's lifetime stays a plain integer on every store.
 */
export const MAX_WINDOW_SECONDS = 10 * 31_536_000

/**
 * Length in seconds of a window of `unitMultiplier` units (`unit_multiplier`, issue 32): windows
 * of N units are aligned to the epoch like one-unit windows, at multiples of their own length.
 *
 * @throws {RangeError} For `UNKNOWN`.
 */
export function windowSeconds(limit: {
  readonly unit: Unit
  readonly unitMultiplier?: number
}): number {
  return unitSeconds(limit.unit) * (limit.unitMultiplier ?? 1)
}
