import type { Fetch } from '../form-post.js'

/** The SMS providers of `SMS_PROVIDER` (upstream's names). */
export const SMS_PROVIDERS = [
  'twilio',
  'twilio_verify',
  'messagebird',
  'textlocal',
  'vonage',
] as const

/** One of {@link SMS_PROVIDERS}. */
export type SmsProviderName = (typeof SMS_PROVIDERS)[number]

/** Channel of an OTP message. */
export type SmsChannel = 'sms' | 'whatsapp'

/**
 * Sends OTP messages by SMS: {@link TwilioProvider}, {@link TwilioVerifyProvider},
 * {@link MessagebirdProvider}, {@link TextlocalProvider} or {@link VonageProvider}, chosen by `SMS_PROVIDER` in `app.ts`.
 */
export interface SmsProvider {
  /**
   * Sends `message` to `phone` (E.164 digits without `+`).
   *
   * @param otp The code inside `message` (Twilio's WhatsApp content templates take it alone).
   * @returns The provider's message id (`''` when it gives none).
   * @throws {Error} When the provider rejects the message or cannot be reached; the message is
   *   the provider's own text, shown to the client after "Error sending … OTP to provider: ".
   */
  sendMessage(phone: string, message: string, channel: SmsChannel, otp: string): Promise<string>
  /**
   * Present on providers that draw and check the codes themselves (Twilio Verify): the code a
   * user typed is checked by the provider, not against a stored hash (upstream
   * `TwilioVerifyProvider.VerifyOTP`).
   *
   * @param phone E.164 digits without `+`.
   * @param code The code the user typed.
   * @returns Whether the provider approved the code.
   * @throws {Error} When the provider cannot be reached or refuses the request; the caller
   *   answers as for a wrong code.
   */
  readonly checkOtp?: (phone: string, code: string) => Promise<boolean>
}

/** Upstream's timeout of every SMS provider call (`sms_provider.defaultTimeout`), milliseconds. */
export const SMS_TIMEOUT_MS = 10_000

/** Transport options shared by the HTTP SMS providers. */
export interface SmsHttpOptions {
  /** Milliseconds a call may take. @default {@link SMS_TIMEOUT_MS} */
  readonly timeoutMs?: number
  /** @default the global `fetch` */
  readonly fetch?: Fetch
}

/** An {@link SmsProvider} that refuses to send: no `SMS_PROVIDER` is configured. */
export class NoSmsProvider implements SmsProvider {
  sendMessage(): Promise<string> {
    return Promise.reject(new Error('no SMS provider is configured'))
  }
}
