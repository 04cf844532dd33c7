import { Writable } from 'node:stream'
import { FakeClock } from '@gatehouse/testing'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { loadSettings, type SmsProviderName } from '@gatehouse/auth'
import { createLogger } from '#internal/logger.js'
import { smsProviderFor } from '#internal/app.js'
import {
  startFakeApi,
  type ApiDescription,
  type FakeApi,
  type SeenRequest,
} from '../support/fake-form-api.js'
import { startTestServer, testEnv, type TestServer } from '../helpers.js'

const PASSWORD = 'password123'

/** One SMS provider: its settings, its API as the fake speaks it, and what the test expects. */
interface ProviderCase {
  readonly name: SmsProviderName
  readonly env: Record<string, string>
  readonly api: ApiDescription
  /** The form the provider must receive for `phone` and `text`. */
  expectedForm(phone: string, text: string): Record<string, string>
  /** The message id the success answer carries. */
  readonly messageId: string
  /** What the client sees after "Error sending confirmation OTP to provider: ". */
  readonly failureText: string
  /** Settings with a wrong secret, and the provider's text refusing them. */
  readonly wrongCredentials: Record<string, string>
  readonly unauthorizedText: string
}

const basic = (user: string, pass: string): string =>
  `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`

const CASES: readonly ProviderCase[] = [
  {
    name: 'twilio',
    env: {
      AUTHSVC_SMS_TWILIO_ACCOUNT_SID: 'AC0123',
      AUTHSVC_SMS_TWILIO_AUTH_TOKEN: 'twilio-token',
      AUTHSVC_SMS_TWILIO_MESSAGE_SERVICE_SID: 'MG0456',
    },
    api: {
      path: '/2010-04-01/Accounts/AC0123/Messages.json',
      authorized: (r) => r.headers.authorization === basic('AC0123', 'twilio-token'),
      unauthorized: [401, { code: 20003, message: 'Authenticate', more_info: '', status: 401 }],
      success: (r) => [201, { sid: 'SM7a1b', status: 'queued', to: r.form.To, error_code: null }],
      failure: [
        400,
        {
          code: 21211,
          message: "The 'To' number +15550000000 is not a valid phone number.",
          more_info: 'https://www.twilio.com/docs/errors/21211',
          status: 400,
        },
      ],
    },
    expectedForm: (phone, text) => ({
      To: `+${phone}`,
      Channel: 'sms',
      From: 'MG0456',
      Body: text,
    }),
    messageId: 'SM7a1b',
    wrongCredentials: { AUTHSVC_SMS_TWILIO_AUTH_TOKEN: 'wrong' },
    unauthorizedText: 'Authenticate',
    failureText:
      "The 'To' number +15550000000 is not a valid phone number. More information: https://www.twilio.com/docs/errors/21211",
  },
  {
    name: 'messagebird',
    env: {
      AUTHSVC_SMS_MESSAGEBIRD_ACCESS_KEY: 'live_mbkey',
      AUTHSVC_SMS_MESSAGEBIRD_ORIGINATOR: 'Gatehouse',
    },
    api: {
      path: '/messages',
      authorized: (r) => r.headers.authorization === 'AccessKey live_mbkey',
      unauthorized: [
        401,
        { errors: [{ code: 2, description: 'Request not allowed', parameter: null }] },
      ],
      success: () => [
        201,
        {
          id: 'e8077d803532c0b5937c639b60216938',
          recipients: { totalCount: 1, totalSentCount: 1 },
        },
      ],
      failure: [
        422,
        {
          errors: [
            { code: 9, description: 'no (correct) recipients found', parameter: 'recipients' },
          ],
        },
      ],
    },
    expectedForm: (phone, text) => ({
      originator: 'Gatehouse',
      body: text,
      recipients: phone,
      type: 'sms',
      datacoding: 'unicode',
    }),
    messageId: 'e8077d803532c0b5937c639b60216938',
    wrongCredentials: { AUTHSVC_SMS_MESSAGEBIRD_ACCESS_KEY: 'wrong' },
    unauthorizedText: 'Request not allowed',
    failureText: 'no (correct) recipients found',
  },
  {
    name: 'textlocal',
    env: { AUTHSVC_SMS_TEXTLOCAL_API_KEY: 'tl-key', AUTHSVC_SMS_TEXTLOCAL_SENDER: 'GATEHS' },
    api: {
      path: '/send',
      authorized: (r) => r.form.apikey === 'tl-key',
      unauthorized: [
        200,
        { errors: [{ code: 3, message: 'Invalid login details' }], status: 'failure' },
      ],
      success: (r) => [
        200,
        {
          balance: 1162,
          batch_id: 123456789,
          messages: [{ id: '1151346216', recipient: Number(r.form.numbers) }],
          status: 'success',
        },
      ],
      failure: [
        200,
        { errors: [{ code: 51, message: 'No valid numbers specified' }], status: 'failure' },
      ],
    },
    expectedForm: (phone, text) => ({
      sender: 'GATEHS',
      apikey: 'tl-key',
      message: text,
      numbers: phone,
    }),
    messageId: '1151346216',
    wrongCredentials: { AUTHSVC_SMS_TEXTLOCAL_API_KEY: 'wrong' },
    unauthorizedText: 'textlocal error: Invalid login details (code: 3)',
    failureText: 'textlocal error: No valid numbers specified (code: 51)',
  },
  {
    name: 'vonage',
    env: {
      AUTHSVC_SMS_VONAGE_API_KEY: 'vkey',
      AUTHSVC_SMS_VONAGE_API_SECRET: 'vsecret',
      AUTHSVC_SMS_VONAGE_FROM: 'Gatehouse',
    },
    api: {
      path: '/sms/json',
      authorized: (r) => r.form.api_key === 'vkey' && r.form.api_secret === 'vsecret',
      unauthorized: [
        200,
        { 'message-count': '1', messages: [{ status: '4', 'error-text': 'Bad Credentials' }] },
      ],
      success: (r) => [
        200,
        {
          'message-count': '1',
          messages: [{ to: r.form.to, 'message-id': '0A0000000123ABCD1', status: '0' }],
        },
      ],
      failure: [
        200,
        {
          'message-count': '1',
          messages: [{ status: '29', 'error-text': 'Non-Whitelisted Destination' }],
        },
      ],
    },
    expectedForm: (phone, text) => ({
      from: 'Gatehouse',
      to: phone,
      text,
      api_key: 'vkey',
      api_secret: 'vsecret',
    }),
    messageId: '0A0000000123ABCD1',
    wrongCredentials: { AUTHSVC_SMS_VONAGE_API_SECRET: 'wrong' },
    unauthorizedText: 'vonage error: Bad Credentials (status: 4)',
    failureText: 'vonage error: Non-Whitelisted Destination (status: 29)',
  },
]

const URL_SETTING: Readonly<Record<SmsProviderName, string>> = {
  twilio: 'AUTHSVC_SMS_TWILIO_API_URL',
  twilio_verify: 'AUTHSVC_SMS_TWILIO_VERIFY_API_URL',
  messagebird: 'AUTHSVC_SMS_MESSAGEBIRD_API_URL',
  textlocal: 'AUTHSVC_SMS_TEXTLOCAL_API_URL',
  vonage: 'AUTHSVC_SMS_VONAGE_API_URL',
}

describe.each(CASES)('SMS provider $name against a local fake of its API', (provider) => {
  let fake: FakeApi
  let server: TestServer
  const logLines: string[] = []
  const clock = new FakeClock(Date.now())
  let phoneCounter = 0
  const nextPhone = (): string => `1555${String(1000000 + ++phoneCounter)}`

  beforeAll(async () => {
    fake = await startFakeApi(provider.api)
    const env = {
      AUTHSVC_EXTERNAL_PHONE_ENABLED: 'true',
      AUTHSVC_SMS_PROVIDER: provider.name,
      // The base URL keeps the provider's path; a path given here is ignored.
      [URL_SETTING[provider.name]]: `${fake.url}/ignored/path`,
      AUTHSVC_SMS_TEMPLATE: 'Gatehouse code: {{ .Code }} (ünïcode)',
      AUTHSVC_SMS_OTP_LENGTH: '8',
      AUTHSVC_SMS_TEST_OTP: '15559990000:424242',
      ...provider.env,
    }
    const logger = createLogger(
      { level: 'info', file: '' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          logLines.push(...chunk.toString('utf8').trim().split('\n'))
          done()
        },
      }),
    )
    // The provider as the app builds it from the settings, with a short timeout for the test.
    const sms = smsProviderFor(loadSettings(testEnv('postgres://unused', env)), logger, {
      timeoutMs: 500,
    })
    server = await startTestServer(`sms_${provider.name}`, env, clock, { deps: { sms } })
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
  })
  beforeEach(() => {
    fake.mode = 'success'
    fake.requests.length = 0
  })

  async function usersWithPhone(phone: string): Promise<number> {
    const { users } = server.app.db.t
    const rows = await server.app.db.query<{ n: string }>(
      `select count(*) as n from ${users} where phone = $1`,
      [phone],
    )
    return Number(rows.rows[0]?.n)
  }

  it('sends the templated code with the exact fields and credentials, and verifies it', async () => {
    const phone = nextPhone()
    const res = await server.request('POST', '/signup', {
      body: { phone: `+${phone}`, password: PASSWORD },
    })
    expect(res.statusCode).toBe(200)
    expect(fake.requests).toHaveLength(1)
    const seen: SeenRequest = fake.requests[0]!
    expect(seen.path).toBe(provider.api.path)
    expect(seen.headers['content-type']).toBe('application/x-www-form-urlencoded')
    const text =
      seen.form[
        Object.keys(provider.expectedForm('', '')).find((k) =>
          ['Body', 'body', 'message', 'text'].includes(k),
        )!
      ]!
    const otp = /^Gatehouse code: (\d{8}) \(ünïcode\)$/.exec(text)?.[1]
    expect(otp).toMatch(/^\d{8}$/)
    const expected = provider.expectedForm(phone, text)
    expect(seen.form).toEqual(
      provider.name === 'vonage' ? { ...expected, type: 'unicode' } : expected,
    )
    const logged = logLines.map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(logged).toContainEqual(
      expect.objectContaining({
        component: 'sms',
        provider: provider.name,
        message_id: provider.messageId,
      }),
    )
    expect(logLines.join('\n')).not.toContain(otp)
    expect(logLines.join('\n')).not.toContain(phone)

    const verified = await server.request('POST', '/verify', {
      body: { type: 'sms', phone, token: otp },
    })
    expect(verified.statusCode).toBe(200)
    expect(verified.json().user.phone_confirmed_at).toEqual(expect.any(String))
  })

  it("answers 422 sms_send_failed with the provider's message and writes nothing", async () => {
    fake.mode = 'failure'
    const phone = nextPhone()
    const res = await server.request('POST', '/signup', {
      body: { phone: `+${phone}`, password: PASSWORD },
    })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toMatchObject({
      code: 422,
      error_code: 'sms_send_failed',
      msg: `Error sending confirmation OTP to provider: ${provider.failureText}`,
    })
    expect(await usersWithPhone(phone)).toBe(0)
    // The request can be retried once the provider is back.
    fake.mode = 'success'
    const retry = await server.request('POST', '/signup', {
      body: { phone: `+${phone}`, password: PASSWORD },
    })
    expect(retry.statusCode).toBe(200)
    expect(await usersWithPhone(phone)).toBe(1)
  })

  it('gives up on a provider that does not answer within the timeout', async () => {
    fake.mode = 'hang'
    const phone = nextPhone()
    const res = await server.request('POST', '/signup', {
      body: { phone: `+${phone}`, password: PASSWORD },
    })
    expect(res.statusCode).toBe(422)
    expect(res.json().msg).toBe(
      `Error sending confirmation OTP to provider: ${provider.name} did not answer within 0.5 seconds`,
    )
    expect(await usersWithPhone(phone)).toBe(0)
  })

  it('expires codes after SMS_OTP_EXP, refuses a new one within SMS_MAX_FREQUENCY and sends none to SMS_TEST_OTP numbers', async () => {
    const phone = nextPhone()
    expect(
      (await server.request('POST', '/signup', { body: { phone, password: PASSWORD } })).statusCode,
    ).toBe(200)
    const first = /Gatehouse code: (\d{8})/.exec(
      Object.values(fake.requests[0]!.form).join('\n'),
    )?.[1]
    expect(first).toMatch(/^\d{8}$/)
    const again = await server.request('POST', '/resend', { body: { type: 'sms', phone } })
    expect(again.statusCode).toBe(429)
    expect(again.json()).toMatchObject({
      error_code: 'over_sms_send_rate_limit',
      msg: 'For security purposes, you can only request this after 60 seconds.',
    })
    clock.advance(61_000)
    const expired = await server.request('POST', '/verify', {
      body: { type: 'sms', phone, token: first },
    })
    expect(expired.statusCode).toBe(403)
    expect(expired.json().error_code).toBe('otp_expired')
    expect(
      (await server.request('POST', '/resend', { body: { type: 'sms', phone } })).statusCode,
    ).toBe(200)
    expect(fake.requests).toHaveLength(2)

    fake.requests.length = 0
    const test = await server.request('POST', '/signup', {
      body: { phone: '+15559990000', password: PASSWORD },
    })
    expect(test.statusCode).toBe(200)
    expect(fake.requests).toHaveLength(0)
    const verified = await server.request('POST', '/verify', {
      body: { type: 'sms', phone: '15559990000', token: '424242' },
    })
    expect(verified.statusCode).toBe(200)
  })

  it("refuses wrong credentials with the provider's own answer", async () => {
    const settings = loadSettings(
      testEnv('postgres://unused', {
        AUTHSVC_SMS_PROVIDER: provider.name,
        [URL_SETTING[provider.name]]: fake.url,
        ...provider.env,
        ...provider.wrongCredentials,
      }),
    )
    await expect(
      smsProviderFor(settings).sendMessage('15550001111', 'hi', 'sms', '1'),
    ).rejects.toThrow(provider.unauthorizedText)
  })
})

describe('Twilio over WhatsApp', () => {
  let fake: FakeApi
  beforeAll(async () => {
    fake = await startFakeApi(CASES[0]!.api)
  })
  afterAll(async () => {
    await fake.close()
  })

  function twilio(extra: Record<string, string>) {
    return smsProviderFor(
      loadSettings(
        testEnv('postgres://unused', {
          AUTHSVC_SMS_PROVIDER: 'twilio',
          AUTHSVC_SMS_TWILIO_API_URL: fake.url,
          ...CASES[0]!.env,
          ...extra,
        }),
      ),
    )
  }

  it('prefixes the numbers with whatsapp: and sends the content template with the code', async () => {
    const id = await twilio({
      AUTHSVC_SMS_TWILIO_MESSAGE_SERVICE_SID: '+15550009999',
      AUTHSVC_SMS_TWILIO_CONTENT_SID: 'HX123',
    }).sendMessage('15550001111', 'Your code is 123456', 'whatsapp', '123456')
    expect(id).toBe('SM7a1b')
    expect(fake.requests.at(-1)?.form).toEqual({
      To: 'whatsapp:+15550001111',
      Channel: 'whatsapp',
      From: 'whatsapp:+15550009999',
      ContentSid: 'HX123',
      ContentVariables: '{"1":"123456"}',
    })
    await twilio({}).sendMessage('15550001111', 'Your code is 123456', 'whatsapp', '123456')
    expect(fake.requests.at(-1)?.form).toEqual({
      To: 'whatsapp:+15550001111',
      Channel: 'whatsapp',
      From: 'MG0456',
      Body: 'Your code is 123456',
    })
  })
})
