/**
 * Textlocal: `POST /send`, the API key as the form field `apikey`.
 *
 * @see https://api.textlocal.in/docs/sendsms
 * @see https://github.com/supabase/auth/blob/master/internal/api/sms_provider/textlocal.go
 * @module
 */
import type { Settings } from '../conf/settings.js'
import { jsonArray, jsonObject, jsonText, onOrigin, postForm } from '../form-post.js'
import { SMS_TIMEOUT_MS, type SmsHttpOptions, type SmsProvider } from './sms-provider.js'

/** Textlocal's error code for a message that matches no approved template (India's DLT rules). */
const TEMPLATE_ERROR_CODE = '80'

/** Sends OTPs through Textlocal's send API. */
export class TextlocalProvider implements SmsProvider {
  readonly #config: Settings['sms']['textlocal']
  readonly #options: SmsHttpOptions

  /**
   * @param config `SMS_TEXTLOCAL_*`.
   * @param options Timeout (upstream's 10 s) and `fetch`.
   */
  constructor(config: Settings['sms']['textlocal'], options: SmsHttpOptions = {}) {
    this.#config = config
    this.#options = options
  }

  /**
   * Sends: form `sender`, `apikey`, `message`, `numbers=<phone>`.
   *
   * @returns The first message's `id` (`''` when none is listed).
   * @throws {Error} "textlocal error: <message> (code: <code>)" for the first listed error (with
   *   the message text for code 80, the template error), or when `status` is not `success`; a
   *   timeout or transport error.
   */
  async sendMessage(phone: string, message: string): Promise<string> {
    const reply = await postForm(
      {
        service: 'textlocal',
        url: onOrigin(this.#config.apiUrl, '/send'),
        fields: {
          sender: this.#config.sender,
          apikey: this.#config.apiKey,
          message,
          numbers: phone,
        },
        timeoutMs: this.#options.timeoutMs ?? SMS_TIMEOUT_MS,
      },
      this.#options.fetch,
    )
    const body = jsonObject(reply.json)
    const error = jsonObject(jsonArray(body.errors)[0])
    if (Object.keys(error).length > 0) {
      const code = jsonText(error.code)
      const text = `textlocal error: ${jsonText(error.message)} (code: ${code})`
      throw new Error(code === TEMPLATE_ERROR_CODE ? `${text} template message: ${message}` : text)
    }
    if (body.status !== 'success') {
      throw new Error(
        `textlocal error: status ${jsonText(body.status) || `HTTP ${String(reply.status)}`}`,
      )
    }
    return jsonText(jsonObject(jsonArray(body.messages)[0]).id)
  }
}
