import { FakeClock } from '@gatehouse/testing'

/**
 * A {@link FakeClock} that can also wait: `sleep(ms)` records `ms`, moves the time forward by it
 * and resolves at once (after `onSleep`, which a test may use to act "while the client waits").
 * Rejects with `signal.reason` when the signal has aborted, as a real timer would.
 */
export class SteppingClock extends FakeClock {
  /** Every wait asked for, milliseconds, in order. */
  readonly sleeps: number[] = []
  /** Runs during each wait, before the time moves; its index is the wait's (0-based). */
  onSleep: ((index: number) => void | Promise<void>) | undefined

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted()
    this.sleeps.push(ms)
    await this.onSleep?.(this.sleeps.length - 1)
    signal?.throwIfAborted()
    this.advance(ms)
  }
}
