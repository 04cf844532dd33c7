/** Options of {@link PasswordBackoff}. */
export interface PasswordBackoffOptions {
  /** Failed passwords allowed before the back-off starts (`RATE_LIMIT_PASSWORD_FAILURES`); 0: off. */
  readonly freeFailures: number
  /** The first delay, in milliseconds; each further failure doubles it. @default 1000 */
  readonly baseDelayMs?: number
  /** The longest delay, in milliseconds. @default 900000 (15 minutes) */
  readonly maxDelayMs?: number
  /** Accounts tracked at most; past that the least recently failed is forgotten. @default 10000 */
  readonly maxEntries?: number
  /** A record with no failure for this long (milliseconds) starts afresh. @default 3600000 */
  readonly forgetAfterMs?: number
}

/**
 * Longest identifier tracked (an email is at most 320 characters); longer ones cannot belong to
 * an account and are not kept, so that the state stays small.
 */
const MAX_IDENTIFIER_LENGTH = 1024

interface Failures {
  count: number
  /** Epoch milliseconds of the last failure. */
  last: number
  /** Epoch milliseconds before which sign-ins are refused. */
  until: number
}

/**
 * Per-account back-off of password sign-ins (beyond upstream, independent of client addresses):
 * after `freeFailures` failed passwords for one email or phone, each further failure refuses
 * sign-ins for that identifier for a delay that starts at `baseDelayMs` and doubles up to
 * `maxDelayMs`; a successful sign-in clears it. It is keyed by the identifier as typed
 * (normalised), before any lookup, so an unknown account is treated exactly as a known one: the
 * same answers at the same moments. State is bounded (`maxEntries`, `forgetAfterMs`) and kept in
 * each instance's memory.
 */
export class PasswordBackoff {
  readonly #free: number
  readonly #base: number
  readonly #max: number
  readonly #maxEntries: number
  readonly #forget: number
  readonly #entries = new Map<string, Failures>()

  constructor(options: PasswordBackoffOptions) {
    this.#free = options.freeFailures
    this.#base = options.baseDelayMs ?? 1_000
    this.#max = options.maxDelayMs ?? 900_000
    this.#maxEntries = options.maxEntries ?? 10_000
    this.#forget = options.forgetAfterMs ?? 3_600_000
  }

  /** Accounts currently tracked. */
  get size(): number {
    return this.#entries.size
  }

  /**
   * Milliseconds `identifier` must still wait before its next sign-in, 0 when it may try now.
   *
   * @param now Epoch milliseconds.
   */
  wait(identifier: string, now: number): number {
    const entry = this.#current(identifier, now)
    return entry ? Math.max(0, entry.until - now) : 0
  }

  /** Records a failed password for `identifier` at `now` (epoch milliseconds). */
  failed(identifier: string, now: number): void {
    if (this.#free <= 0 || identifier.length > MAX_IDENTIFIER_LENGTH) return
    const entry = this.#current(identifier, now) ?? { count: 0, last: now, until: 0 }
    entry.count++
    entry.last = now
    const over = entry.count - this.#free
    if (over > 0) {
      // 2 ** over stays finite: over is capped before the delay can pass the maximum.
      const delay = Math.min(this.#max, this.#base * 2 ** Math.min(over - 1, 40))
      entry.until = now + delay
    }
    this.#entries.delete(identifier)
    if (this.#entries.size >= this.#maxEntries) {
      const oldest = this.#entries.keys().next()
      if (oldest.done !== true) this.#entries.delete(oldest.value)
    }
    this.#entries.set(identifier, entry)
  }

  /** Forgets the failures of `identifier` (a successful sign-in). */
  succeeded(identifier: string): void {
    this.#entries.delete(identifier)
  }

  #current(identifier: string, now: number): Failures | undefined {
    const entry = this.#entries.get(identifier)
    if (entry && now - Math.max(entry.last, entry.until) >= this.#forget) {
      this.#entries.delete(identifier)
      return undefined
    }
    return entry
  }
}
