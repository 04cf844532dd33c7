/**
 * Twilio Programmable Messaging: `POST /2010-04-01/Accounts/{AccountSid}/Messages.json`, HTTP
 * basic authentication with the account SID and auth token.
 *
 * @see https://www.twilio.com/docs/messaging/api/message-resource#create-a-message-resource
 * @see https://github.com/supabase/auth/blob/master/internal/api/sms_provider/twilio.go
 * @module
 */
import { jsonObject, jsonText, onOrigin, postForm } from '../form-post.js'
import type { Settings } from '../conf/settings.js'
import {
  SMS_TIMEOUT_MS,
  type SmsChannel,
  type SmsHttpOptions,
  type SmsProvider,
} from './sms-provider.js'

/** A sender that is a phone number (not a messaging service SID). */
const PHONE_NUMBER = /^\+?\d{1,15}$/

/**
 * The error of a non-2xx answer of a Twilio API (`{code, message, more_info, status}`), worded as
 * upstream's `twilioErrResponse`: "<message> More information: <more_info>".
 *
 * @param status The HTTP status, named when the body has no message.
 * @param body The parsed answer.
 */
export function twilioError(status: number, body: Readonly<Record<string, unknown>>): Error {
  const text = jsonText(body.message) || `HTTP ${String(status)}`
  const moreInfo = jsonText(body.more_info)
  return new Error(moreInfo === '' ? text : `${text} More information: ${moreInfo}`)
}

/** Sends OTPs through Twilio's Messages API, by SMS or (channel `whatsapp`) WhatsApp. */
export class TwilioProvider implements SmsProvider {
  readonly #config: Settings['sms']['twilio']
  readonly #options: SmsHttpOptions

  /**
   * @param config `SMS_TWILIO_*`.
   * @param options Timeout (upstream's 10 s) and `fetch`.
   */
  constructor(config: Settings['sms']['twilio'], options: SmsHttpOptions = {}) {
    this.#config = config
    this.#options = options
  }

  /**
   * Creates a message: form `To=+<phone>`, `Channel`, `From=SMS_TWILIO_MESSAGE_SERVICE_SID`,
   * `Body`; for WhatsApp the numbers get the `whatsapp:` prefix and, with
   * `SMS_TWILIO_CONTENT_SID`, `ContentSid` and `ContentVariables={"1":"<otp>"}` replace `Body`.
   *
   * @returns The message `sid`.
   * @throws {Error} Twilio's `message` and `more_info` on a non-2xx answer; "twilio error: …" when
   *   the message is `failed` or `undelivered`; a timeout or transport error.
   */
  async sendMessage(
    phone: string,
    message: string,
    channel: SmsChannel,
    otp: string,
  ): Promise<string> {
    const config = this.#config
    let to = `+${phone}`
    let from = config.messageServiceSid
    const fields: Record<string, string> = { To: to, Channel: channel, From: from }
    if (channel === 'whatsapp') {
      to = `whatsapp:${to}`
      if (PHONE_NUMBER.test(from)) from = `whatsapp:${from.startsWith('+') ? from : `+${from}`}`
      Object.assign(fields, { To: to, From: from })
      if (config.contentSid !== '') {
        fields.ContentSid = config.contentSid
        fields.ContentVariables = JSON.stringify({ 1: otp })
      } else {
        fields.Body = message
      }
    } else {
      fields.Body = message
    }
    const path = `/2010-04-01/Accounts/${encodeURIComponent(config.accountSid)}/Messages.json`
    const credentials = Buffer.from(`${config.accountSid}:${config.authToken}`).toString('base64')
    const reply = await postForm(
      {
        service: 'twilio',
        url: onOrigin(config.apiUrl, path),
        fields,
        headers: { authorization: `Basic ${credentials}` },
        timeoutMs: this.#options.timeoutMs ?? SMS_TIMEOUT_MS,
      },
      this.#options.fetch,
    )
    const body = jsonObject(reply.json)
    if (reply.status < 200 || reply.status > 299) throw twilioError(reply.status, body)
    const sid = jsonText(body.sid)
    const status = jsonText(body.status)
    if (status === 'failed' || status === 'undelivered') {
      throw new Error(
        `twilio error: ${jsonText(body.error_message)} ${jsonText(body.error_code)} for message ${sid}`,
      )
    }
    return sid
  }
}
