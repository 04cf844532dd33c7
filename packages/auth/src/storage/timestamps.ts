/**
 * PostgreSQL's `infinity` and `-infinity` timestamps as the latest and earliest `Date`.
 *
 * Both drivers read such a value as the number `Infinity`, which the code that expects a `Date`
 * (or `null`) cannot handle: a user an operator banned with `banned_until = 'infinity'` would have
 * failed every request that reads their ban with a 500. Both drivers are opened with the parsers
 * here, and the `json` reads (`models/json.ts`) map the same texts the same way.
 *
 * @module
 */

/** The latest instant a `Date` can hold, in epoch milliseconds (ECMA-262 §21.4.1.22). */
export const LATEST_DATE_MS = 8.64e15

/**
 * `parse`, but `infinity` gives the latest `Date` and `-infinity` the earliest.
 *
 * @param parse The driver's own parser of a timestamp's text.
 */
export function boundedTimestamp<T>(parse: (text: string) => T): (text: string) => T | Date {
  return (text) => {
    if (text === 'infinity') return new Date(LATEST_DATE_MS)
    if (text === '-infinity') return new Date(-LATEST_DATE_MS)
    return parse(text)
  }
}
