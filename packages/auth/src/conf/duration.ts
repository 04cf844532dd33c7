/**
 * Go durations (`time.ParseDuration`), from `@gatehouse/settings`: the one parser both servers
 * share. Kept here for the package's exports and the admin API's `ban_duration`.
 *
 * @module
 */
export { DurationError, parseGoDuration } from '@gatehouse/settings'
