import type { EmailSendRate } from '../conf/settings.js'

/**
 * The server-wide budget of emails sent (`RATE_LIMIT_EMAIL_SENT`, upstream's email limiter): every
 * flow mail takes one before it is sent. {@link InMemoryEmailSendLimiter} counts in this process;
 * the rate-limit issue backs it with the shared rate limit service.
 */
export interface EmailSendLimiter {
  /**
   * Takes one email from the budget.
   *
   * @param now Epoch milliseconds.
   * @returns `true` when the email may be sent, `false` to answer 429
   *   `over_email_send_rate_limit`.
   */
  take(now: number): Promise<boolean>
}

/**
 * An {@link EmailSendLimiter} counting in memory: at most `rate.events` emails per fixed window of
 * `rate.periodMs` milliseconds (windows start at multiples of the period since the epoch, as the
 * rate limit service counts). Fractional `events` round down; 0 refuses every email.
 */
export class InMemoryEmailSendLimiter implements EmailSendLimiter {
  readonly #rate: EmailSendRate
  #window = -1
  #count = 0

  constructor(rate: EmailSendRate) {
    this.#rate = rate
  }

  take(now: number): Promise<boolean> {
    const window = Math.floor(now / this.#rate.periodMs)
    if (window !== this.#window) {
      this.#window = window
      this.#count = 0
    }
    if (this.#count >= Math.floor(this.#rate.events)) return Promise.resolve(false)
    this.#count++
    return Promise.resolve(true)
  }
}
