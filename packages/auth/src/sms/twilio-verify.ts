/**
 * Twilio Verify: Twilio draws, sends and checks the code. `POST
 * /v2/Services/{ServiceSid}/Verifications` starts a verification, `POST
 * /v2/Services/{ServiceSid}/VerificationCheck` checks a code; HTTP basic authentication with the
 * account SID and auth token, as upstream's `twilio_verify` provider.
 *
 * @see https://www.twilio.com/docs/verify/api/verification
 * @see https://www.twilio.com/docs/verify/api/verification-check
 * @see https://github.com/supabase/auth/blob/master/internal/api/sms_provider/twilio_verify.go
 * @module
 */
import { jsonObject, jsonText, onOrigin, postForm, type FormReply } from '../form-post.js'
import type { Settings } from '../conf/settings.js'
import {
  SMS_TIMEOUT_MS,
  type SmsChannel,
  type SmsHttpOptions,
  type SmsProvider,
} from './sms-provider.js'
import { twilioError } from './twilio.js'

/** Sends and checks OTPs through Twilio Verify, by SMS or WhatsApp. */
export class TwilioVerifyProvider implements SmsProvider {
  readonly #config: Settings['sms']['twilioVerify']
  readonly #options: SmsHttpOptions

  /**
   * @param config `SMS_TWILIO_VERIFY_*`.
   * @param options Timeout (upstream's 10 s) and `fetch`.
   */
  constructor(config: Settings['sms']['twilioVerify'], options: SmsHttpOptions = {}) {
    this.#config = config
    this.#options = options
  }

  async #post(endpoint: string, fields: Record<string, string>): Promise<FormReply> {
    const config = this.#config
    const path = `/v2/Services/${encodeURIComponent(config.messageServiceSid)}/${endpoint}`
    const credentials = Buffer.from(`${config.accountSid}:${config.authToken}`).toString('base64')
    return postForm(
      {
        service: 'twilio_verify',
        url: onOrigin(config.apiUrl, path),
        fields,
        headers: { authorization: `Basic ${credentials}` },
        timeoutMs: this.#options.timeoutMs ?? SMS_TIMEOUT_MS,
      },
      this.#options.fetch,
    )
  }

  /**
   * Starts a verification: form `To=+<phone>`, `Channel` (`sms` or `whatsapp`, without the
   * `whatsapp:` prefix Programmable Messaging needs). Twilio draws and sends its own code, in
   * the Verify service's template: `message` and `otp` are not sent.
   *
   * @returns The verification `sid`.
   * @throws {Error} Twilio's `message` and `more_info` on a non-2xx answer; a timeout or
   *   transport error.
   */
  async sendMessage(phone: string, _message: string, channel: SmsChannel): Promise<string> {
    const reply = await this.#post('Verifications', { To: `+${phone}`, Channel: channel })
    const body = jsonObject(reply.json)
    if (reply.status < 200 || reply.status > 299) throw twilioError(reply.status, body)
    return jsonText(body.sid)
  }

  /**
   * Checks a code: form `To=+<phone>`, `Code`. Approved when Twilio answers `status`
   * `approved` and `valid` true (`pending` means a wrong code).
   *
   * @returns Whether Twilio approved the code.
   * @throws {Error} Twilio's `message` on a non-2xx answer (404 once the verification expired,
   *   was approved or had too many attempts); a timeout or transport error.
   */
  readonly checkOtp = async (phone: string, code: string): Promise<boolean> => {
    const reply = await this.#post('VerificationCheck', { To: `+${phone}`, Code: code })
    const body = jsonObject(reply.json)
    if (reply.status < 200 || reply.status > 299) throw twilioError(reply.status, body)
    return body.status === 'approved' && body.valid === true
  }
}
