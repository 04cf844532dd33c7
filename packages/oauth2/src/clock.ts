/** A source of the current time as epoch milliseconds (inject a fake one in tests). */
export interface Clock {
  /** The current time, epoch milliseconds. */
  now(): number
}

/**
 * The system clock (`Date.now()`): the default of the `clock` option, and the package's only
 * read of the current time. Everything else reads the injected {@link Clock}.
 *
 * @internal
 */
export const systemClock: Clock = { now: () => Date.now() }
