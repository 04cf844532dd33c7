/**
 * A source of the current time, injected wherever window maths happen so tests can control it.
 * Structurally the same as `@gatehouse/testing`'s `FakeClock`.
 */
export interface Clock {
  /** Current time as epoch milliseconds. */
  now(): number
}

/** The real clock (`Date.now()`). */
export const systemClock: Clock = { now: () => Date.now() }
