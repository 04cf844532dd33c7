import { randomInt } from 'node:crypto'
import { startFakeApi, type FakeApi, type SeenRequest } from './fake-form-api.js'

/** The credentials and service the fake Twilio Verify accepts. */
export const TWILIO_VERIFY = {
  accountSid: 'AC0123',
  authToken: 'verify-token',
  serviceSid: 'VA0789',
} as const

/** A running fake of Twilio Verify, see {@link startFakeTwilioVerify}. */
export interface FakeTwilioVerify extends FakeApi {
  /** The code Twilio sent to `+<phone>` in its pending verification, if any. */
  codeFor(phone: string): string | undefined
}

const notFound = (path: string) =>
  [
    404,
    {
      code: 20404,
      message: `The requested resource ${path} was not found`,
      more_info: 'https://www.twilio.com/docs/errors/20404',
      status: 404,
    },
  ] as const

/**
 * Starts a local server speaking Twilio Verify's `Verifications` and `VerificationCheck`
 * endpoints (form fields, basic authentication, answer bodies as Twilio's): a verification draws
 * a 6-digit code per number (kept until approved), a check of the right code answers `approved`,
 * of a wrong one `pending`, and without a pending verification 404 (error 20404).
 *
 * @see https://www.twilio.com/docs/verify/api/verification
 */
export async function startFakeTwilioVerify(): Promise<FakeTwilioVerify> {
  const { accountSid, authToken, serviceSid } = TWILIO_VERIFY
  const pending = new Map<string, { sid: string; code: string }>()
  const authorized = (r: SeenRequest): boolean =>
    r.headers.authorization ===
    `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`
  const unauthorized = [
    401,
    {
      code: 20003,
      message: 'Authenticate',
      more_info: 'https://www.twilio.com/docs/errors/20003',
      status: 401,
    },
  ] as const
  const failure = [
    400,
    {
      code: 60200,
      message: 'Invalid parameter `To`: +1555',
      more_info: 'https://www.twilio.com/docs/errors/60200',
      status: 400,
    },
  ] as const
  let counter = 0
  const fake = await startFakeApi([
    {
      path: `/v2/Services/${serviceSid}/Verifications`,
      authorized,
      unauthorized,
      failure,
      success: (r) => {
        const to = r.form.To ?? ''
        const sid = `VE${String(++counter).padStart(32, '0')}`
        pending.set(to, { sid, code: String(randomInt(0, 1_000_000)).padStart(6, '0') })
        return [
          201,
          {
            sid,
            service_sid: serviceSid,
            account_sid: accountSid,
            to,
            channel: r.form.Channel,
            status: 'pending',
            valid: false,
          },
        ]
      },
    },
    {
      path: `/v2/Services/${serviceSid}/VerificationCheck`,
      authorized,
      unauthorized,
      failure,
      success: (r) => {
        const to = r.form.To ?? ''
        const verification = pending.get(to)
        if (!verification) return notFound(`/v2/Services/${serviceSid}/VerificationCheck`)
        const approved = verification.code === r.form.Code
        if (approved) pending.delete(to)
        return [
          200,
          {
            sid: verification.sid,
            service_sid: serviceSid,
            account_sid: accountSid,
            to,
            channel: 'sms',
            status: approved ? 'approved' : 'pending',
            valid: approved,
          },
        ]
      },
    },
  ])
  return Object.assign(fake, { codeFor: (phone: string) => pending.get(`+${phone}`)?.code })
}
