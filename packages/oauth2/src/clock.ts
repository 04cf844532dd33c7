/**
 * A source of the current time as epoch milliseconds, and optionally of waiting (inject a fake one
 * in tests).
 */
export interface Clock {
  /** The current time, epoch milliseconds. */
  now(): number
  /**
   * Resolves after `ms` milliseconds, or rejects with `signal.reason` as soon as `signal` aborts.
   * Used by the device authorization grant between polls. A clock without `sleep` waits with real
   * timers ({@link sleepFor}), so a test that fakes `now()` should fake `sleep` too (moving its
   * time forward by `ms`).
   */
  sleep?(ms: number, signal?: AbortSignal): Promise<void>
}

/**
 * Waits `ms` milliseconds with `setTimeout` (any runtime); rejects with `signal.reason` when
 * `signal` aborts, at once if it already has.
 *
 * @internal
 */
export function realSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(signal.reason as Error)
      return
    }
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal?.reason as Error)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/**
 * The system clock (`Date.now()`, `setTimeout`): the default of the `clock` option, and the
 * package's only read of the current time. Everything else reads the injected {@link Clock}.
 *
 * @internal
 */
export const systemClock: Clock = { now: () => Date.now(), sleep: realSleep }

/**
 * Waits on `clock`: its own `sleep` when it has one, else real timers.
 *
 * @internal
 */
export function sleepFor(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return clock.sleep === undefined ? realSleep(ms, signal) : clock.sleep(ms, signal)
}
