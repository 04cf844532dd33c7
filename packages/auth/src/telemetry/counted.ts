/**
 * Decorators that count what the mailer and the SMS provider deliver ({@link AuthMetrics}), so
 * that neither the services nor the backends know about metrics.
 *
 * @module
 */
import type { Mailer, MailMessage } from '../mailer/mailer.js'
import type { SmsChannel, SmsProvider } from '../sms/sms-provider.js'
import type { AuthMetrics } from './auth-metrics.js'

/** A {@link Mailer} that counts each mail its inner mailer sent (`auth.mails_sent`). */
export class CountedMailer implements Mailer {
  readonly #inner: Mailer
  readonly #metrics: AuthMetrics

  /**
   * @param inner The mailer that sends.
   * @param metrics Where each sent mail is counted (by kind).
   */
  constructor(inner: Mailer, metrics: AuthMetrics) {
    this.#inner = inner
    this.#metrics = metrics
  }

  /** Sends through the inner mailer, then counts. @throws {Error} As the inner mailer. */
  async send(message: MailMessage): Promise<void> {
    await this.#inner.send(message)
    this.#metrics.mailSent(message.kind)
  }
}

/**
 * An {@link SmsProvider} that counts each message its inner provider accepted (`auth.sms_sent`).
 */
export class CountedSmsProvider implements SmsProvider {
  readonly #inner: SmsProvider
  readonly #metrics: AuthMetrics

  /**
   * @param inner The provider that sends.
   * @param metrics Where each accepted message is counted (by channel).
   */
  constructor(inner: SmsProvider, metrics: AuthMetrics) {
    this.#inner = inner
    this.#metrics = metrics
    // Twilio Verify checks its own codes: the check must survive the wrapping.
    if (inner.checkOtp) this.checkOtp = inner.checkOtp.bind(inner)
  }

  /** The inner provider's code check, when it has one (Twilio Verify). */
  readonly checkOtp?: (phone: string, code: string) => Promise<boolean>

  /** Sends through the inner provider, then counts. @throws {Error} As the inner provider. */
  async sendMessage(
    phone: string,
    message: string,
    channel: SmsChannel,
    otp: string,
  ): Promise<string> {
    const id = await this.#inner.sendMessage(phone, message, channel, otp)
    this.#metrics.smsSent(channel)
    return id
  }
}
