/**
 * Time and randomness, injected wherever they are used so that tests control them. These are the
 * only places that read the system clock, the monotonic clock or `Math.random`; everything else
 * takes them from `AppDeps` (`buildRateLimitApp`), with these as the defaults.
 *
 * @module
 */

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

/**
 * A monotonic time source for durations and deadlines (response times, `grpc-timeout`, idle
 * connections): milliseconds from an arbitrary origin, never going back.
 */
export interface MonotonicClock {
  /** Milliseconds (fractional) since an arbitrary origin. */
  now(): number
}

/** The real monotonic clock (`performance.now()`). */
export const systemMonotonicClock: MonotonicClock = { now: () => performance.now() }

/** A source of uniformly distributed numbers in [0, 1). */
export type Random = () => number

/** The real random source (`Math.random`). */
export const systemRandom: Random = () => Math.random()

/**
 * Runs `task` every `intervalMs` milliseconds until the returned function is called. Injected
 * where something repeats on a timer (the memcache SRV refresh) so tests can run it on demand.
 */
export type Every = (intervalMs: number, task: () => void) => () => void

/** The real {@link Every}: `setInterval`, not keeping the process alive. */
export const systemEvery: Every = (intervalMs, task) => {
  const timer = setInterval(task, intervalMs)
  timer.unref()
  return () => {
    clearInterval(timer)
  }
}
