/** Channel of an OTP message. */
export type SmsChannel = 'sms' | 'whatsapp'

/**
 * Sends OTP messages by SMS (twilio, messagebird, textlocal, vonage in the phone issue).
 */
export interface SmsProvider {
  /**
   * Sends `message` to `phone` (E.164 digits without `+`).
   *
   * @returns The provider's message id (`''` when it gives none).
   * @throws {Error} When the provider rejects the message.
   */
  sendMessage(phone: string, message: string, channel: SmsChannel, otp: string): Promise<string>
}

/** An {@link SmsProvider} that refuses to send: no `SMS_PROVIDER` is configured. */
export class NoSmsProvider implements SmsProvider {
  sendMessage(): Promise<string> {
    return Promise.reject(new Error('no SMS provider is configured'))
  }
}
