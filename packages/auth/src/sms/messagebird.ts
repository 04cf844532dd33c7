/**
 * MessageBird (Bird) SMS API: `POST /messages`, `Authorization: AccessKey <key>`.
 *
 * @see https://developers.messagebird.com/api/sms-messaging/#send-outbound-sms
 * @see https://github.com/supabase/auth/blob/master/internal/api/sms_provider/messagebird.go
 * @module
 */
import type { Settings } from '../conf/settings.js'
import { jsonArray, jsonObject, jsonText, onOrigin, postForm } from '../form-post.js'
import { SMS_TIMEOUT_MS, type SmsHttpOptions, type SmsProvider } from './sms-provider.js'

/** The statuses MessageBird answers with an `errors` list (upstream reads them there). */
const ERROR_STATUSES: ReadonlySet<number> = new Set([400, 401, 403, 422])

/** Sends OTPs through MessageBird's Messages API. */
export class MessagebirdProvider implements SmsProvider {
  readonly #config: Settings['sms']['messagebird']
  readonly #options: SmsHttpOptions

  /**
   * @param config `SMS_MESSAGEBIRD_*`.
   * @param options Timeout (upstream's 10 s) and `fetch`.
   */
  constructor(config: Settings['sms']['messagebird'], options: SmsHttpOptions = {}) {
    this.#config = config
    this.#options = options
  }

  /**
   * Creates a message: form `originator`, `body`, `recipients=<phone>`, `type=sms`,
   * `datacoding=unicode`.
   *
   * @returns The message `id`.
   * @throws {Error} The first error's `description` on 400/401/403/422; "messagebird error: …"
   *   on another failing status or when no recipient was sent to; a timeout or transport error.
   */
  async sendMessage(phone: string, message: string): Promise<string> {
    const reply = await postForm(
      {
        service: 'messagebird',
        url: onOrigin(this.#config.apiUrl, '/messages'),
        fields: {
          originator: this.#config.originator,
          body: message,
          recipients: phone,
          type: 'sms',
          datacoding: 'unicode',
        },
        headers: { authorization: `AccessKey ${this.#config.accessKey}` },
        timeoutMs: this.#options.timeoutMs ?? SMS_TIMEOUT_MS,
      },
      this.#options.fetch,
    )
    const body = jsonObject(reply.json)
    if (ERROR_STATUSES.has(reply.status)) {
      const first = jsonObject(jsonArray(body.errors)[0])
      throw new Error(
        jsonText(first.description) || `messagebird error: HTTP ${String(reply.status)}`,
      )
    }
    if (reply.status < 200 || reply.status > 299) {
      throw new Error(`messagebird error: HTTP ${String(reply.status)}`)
    }
    const sent = Number(jsonObject(body.recipients).totalSentCount ?? 0)
    if (!(sent > 0)) throw new Error('messagebird error: total sent count is 0')
    return jsonText(body.id)
  }
}
