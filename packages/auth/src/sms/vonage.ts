/**
 * Vonage (Nexmo) SMS API: `POST /sms/json`, the key and secret as form fields.
 *
 * @see https://developer.vonage.com/en/api/sms#send-an-sms
 * @see https://github.com/supabase/auth/blob/master/internal/api/sms_provider/vonage.go
 * @module
 */
import type { Settings } from '../conf/settings.js'
import { jsonArray, jsonObject, jsonText, onOrigin, postForm } from '../form-post.js'
import { SMS_TIMEOUT_MS, type SmsHttpOptions, type SmsProvider } from './sms-provider.js'

/** Sends OTPs through Vonage's SMS API. */
export class VonageProvider implements SmsProvider {
  readonly #config: Settings['sms']['vonage']
  readonly #options: SmsHttpOptions

  /**
   * @param config `SMS_VONAGE_*`.
   * @param options Timeout (upstream's 10 s) and `fetch`.
   */
  constructor(config: Settings['sms']['vonage'], options: SmsHttpOptions = {}) {
    this.#config = config
    this.#options = options
  }

  /**
   * Sends: form `from`, `to=<phone>`, `text`, `api_key`, `api_secret`, plus `type=unicode` when
   * the text is not ASCII.
   *
   * @returns The first message's `message-id`.
   * @throws {Error} "vonage error: <error-text> (status: <status>) …" when the first message's
   *   status is not `"0"` or no message is listed; a timeout or transport error.
   */
  async sendMessage(phone: string, message: string): Promise<string> {
    const fields: Record<string, string> = {
      from: this.#config.from,
      to: phone,
      text: message,
      api_key: this.#config.apiKey,
      api_secret: this.#config.apiSecret,
    }
    // eslint-disable-next-line no-control-regex
    if (/[^\x00-\x7f]/.test(message)) fields.type = 'unicode'
    const reply = await postForm(
      {
        service: 'vonage',
        url: onOrigin(this.#config.apiUrl, '/sms/json'),
        fields,
        timeoutMs: this.#options.timeoutMs ?? SMS_TIMEOUT_MS,
      },
      this.#options.fetch,
    )
    const first = jsonArray(jsonObject(reply.json).messages)[0]
    if (first === undefined) {
      throw new Error(`vonage error: no message in the answer (HTTP ${String(reply.status)})`)
    }
    const sent = jsonObject(first)
    const id = jsonText(sent['message-id'])
    const status = jsonText(sent.status)
    if (status !== '0') {
      const text = `vonage error: ${jsonText(sent['error-text'])} (status: ${status})`
      throw new Error(id === '' ? text : `${text} for message ${id}`)
    }
    return id
  }
}
