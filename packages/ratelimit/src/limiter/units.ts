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
 * `(now / divider) * divider`.
 */
export function windowStart(nowSeconds: number, unit: Unit): number {
  const divider = unitSeconds(unit)
  return Math.floor(nowSeconds / divider) * divider
}

/** Seconds until the window containing `nowSeconds` ends: `divider - now % divider` (1..divider). */
export function secondsUntilReset(nowSeconds: number, unit: Unit): number {
  const divider = unitSeconds(unit)
  return divider - (nowSeconds % divider)
}
