/**
 * A source of the current time, injected wherever code needs "now" (window maths, token expiry,
 * OTP lifetimes) so tests can control it.
 */
export interface Clock {
  /** Current time as epoch milliseconds. */
  now(): number
}

/**
 * A {@link Clock} that only moves when told to. Structurally compatible with every package's own
 * `Clock` interface (`now(): number`, epoch milliseconds).
 *
 * @example
 * ```ts
 * const clock = new FakeClock(Date.UTC(2026, 0, 1))
 * clock.advance(60_000) // one minute later
 * ```
 */
export class FakeClock implements Clock {
  #now: number

  /** @param start Initial time as epoch milliseconds. @default Date.UTC(2026, 0, 1) */
  constructor(start: number = Date.UTC(2026, 0, 1)) {
    this.#now = start
  }

  /** Current fake time as epoch milliseconds. */
  now(): number {
    return this.#now
  }

  /** Current fake time as whole epoch seconds (rounded down). */
  nowSeconds(): number {
    return Math.floor(this.#now / 1000)
  }

  /**
   * Moves the clock forward.
   *
   * @param ms Duration in milliseconds; must be finite and not negative.
   * @throws {RangeError} When `ms` is negative or not finite.
   */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new RangeError(`"ms" must be a finite, non-negative number (got ${String(ms)})`)
    }
    this.#now += ms
  }

  /**
   * Sets the clock to an absolute time.
   *
   * @param epochMs Epoch milliseconds.
   */
  set(epochMs: number): void {
    this.#now = epochMs
  }
}
