import type { Logger } from 'pino'
import type { SmsChannel, SmsProvider } from './sms-provider.js'

/**
 * An {@link SmsProvider} that logs each send: the provider's message id on success (to find the
 * message in the provider's console), the error on failure. Neither the phone number nor the
 * text (it holds the code) is logged.
 */
export class LoggedSmsProvider implements SmsProvider {
  readonly #inner: SmsProvider
  readonly #name: string
  readonly #logger: Logger

  /**
   * @param inner The provider that sends.
   * @param name Its `SMS_PROVIDER` name, logged as `provider`.
   * @param logger Where to log (`component: "sms"`).
   */
  constructor(inner: SmsProvider, name: string, logger: Logger) {
    this.#inner = inner
    this.#name = name
    this.#logger = logger
    const check = inner.checkOtp
    if (check) {
      this.checkOtp = async (phone, code) => {
        const approved = await check(phone, code)
        logger.info({ component: 'sms', provider: name, approved }, 'SMS code checked')
        return approved
      }
    }
  }

  /** The inner provider's code check, when it has one; logs whether the code was approved. */
  readonly checkOtp?: (phone: string, code: string) => Promise<boolean>

  /** Sends through the inner provider and logs the outcome. @throws {Error} As the inner one. */
  async sendMessage(
    phone: string,
    message: string,
    channel: SmsChannel,
    otp: string,
  ): Promise<string> {
    try {
      const id = await this.#inner.sendMessage(phone, message, channel, otp)
      this.#logger.info(
        { component: 'sms', provider: this.#name, channel, message_id: id },
        'SMS sent',
      )
      return id
    } catch (error) {
      this.#logger.warn(
        {
          component: 'sms',
          provider: this.#name,
          channel,
          reason: error instanceof Error ? error.message : String(error),
        },
        'SMS not sent',
      )
      throw error
    }
  }
}
