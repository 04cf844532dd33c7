/**
 * The server-wide send caps (`RATE_LIMIT_EMAIL_SENT`, `RATE_LIMIT_SMS_SENT`) and refused
 * descriptors under `RATE_LIMIT_BACKEND=ratelimit`, against a real `gatehouse-ratelimit` on a
 * Redis of this file's own, which the test kills.
 *
 * @see issue 24, item 6
 */
import { getFreePort, startRedisServer, type TestRedisServer } from '@gatehouse/testing'
import { type SmsProvider } from '@gatehouse/auth'
import { rateLimitServiceConfig } from '#internal/limiter/service-config.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RecordingMailer, startTestServer, type TestServer } from '../helpers.js'
import { startRateLimitService, type RateLimitService } from '../support/ratelimit-service.js'

describe('send caps and refusals of the rate limit service', () => {
  const mailer = new RecordingMailer()
  const sms: string[] = []
  const provider: SmsProvider = {
    sendMessage(phone) {
      sms.push(phone)
      return Promise.resolve(`SM${String(sms.length)}`)
    },
  }
  let redis: TestRedisServer
  let service: RateLimitService | undefined
  let server: TestServer
  /** Its requests are limited per client (`RATE_LIMIT_HEADER`). */
  let keyed: TestServer

  beforeAll(async () => {
    redis = await startRedisServer()
    const grpcPort = await getFreePort()
    const env = {
      AUTHSVC_RATE_LIMIT_BACKEND: 'ratelimit',
      AUTHSVC_RATE_LIMIT_SERVICE_ADDRESS: `127.0.0.1:${String(grpcPort)}`,
      AUTHSVC_RATE_LIMIT_SERVICE_TIMEOUT: '3s',
      // A day's window: the test cannot straddle two of them in practice.
      AUTHSVC_RATE_LIMIT_EMAIL_SENT: '2/24h',
      AUTHSVC_RATE_LIMIT_SMS_SENT: '2/24h',
      AUTHSVC_MAILER_AUTOCONFIRM: 'false',
      AUTHSVC_EXTERNAL_PHONE_ENABLED: 'true',
    }
    ;[server, keyed] = await Promise.all([
      startTestServer('caps', env, undefined, { deps: { mailer, sms: provider } }),
      startTestServer('caps_keyed', {
        ...env,
        AUTHSVC_RATE_LIMIT_HEADER: 'X-Real-IP',
        AUTHSVC_RATE_LIMIT_DOMAIN: 'gatehouse-auth-keyed',
      }),
    ])
    service = await startRateLimitService(
      redis,
      {
        'auth.yaml': rateLimitServiceConfig(server.settings),
        'auth-keyed.yaml': rateLimitServiceConfig(keyed.settings),
      },
      // Entry values up to 16 bytes: every operation name fits, a client descriptor does not.
      { grpcPort, env: { MAX_DESCRIPTOR_ENTRY_BYTES: '16' } },
    )
  }, 120_000)
  afterAll(async () => {
    await service?.close()
    await Promise.all([server.close(), keyed.close()])
    await redis.stop()
  })

  const mailSignUp = async (n: number) =>
    (
      await server.request('POST', '/signup', {
        body: { email: `cap${String(n)}@example.com`, password: 'password123' },
      })
    ).statusCode
  const smsSignUp = async (n: number) =>
    (
      await server.request('POST', '/signup', {
        body: { phone: `1555010${String(1000 + n)}`, password: 'password123' },
      })
    ).statusCode

  it('refuses a request whose descriptor the service refuses, instead of allowing it', async () => {
    const refresh = await keyed.request('POST', '/token?grant_type=refresh_token', {
      body: { refresh_token: 'not-a-token' },
      headers: { 'x-real-ip': '203.0.113.50' },
    })
    expect(refresh.statusCode).toBe(503)
    expect(keyed.app.rateLimitStats).toMatchObject({ refused: 1, failedOpen: 0 })
  })

  // Last: it kills the service.
  it('holds both caps with the service up, and after it is killed (no fail-open)', async () => {
    expect([await mailSignUp(1), await mailSignUp(2), await mailSignUp(3)]).toEqual([200, 200, 429])
    expect([await smsSignUp(1), await smsSignUp(2), await smsSignUp(3)]).toEqual([200, 200, 429])
    expect(mailer.messages).toHaveLength(2)
    expect(sms).toHaveLength(2)

    await service?.stop('SIGKILL')
    const mails = []
    for (let n = 10; n < 15; n++) mails.push(await mailSignUp(n))
    const texts = []
    for (let n = 10; n < 18; n++) texts.push(await smsSignUp(n))
    // Five mails and eight SMS against caps of 2 that this instance already used up.
    expect(mails).toEqual(Array<number>(5).fill(429))
    expect(texts).toEqual(Array<number>(8).fill(429))
    expect(mailer.messages).toHaveLength(2)
    expect(sms).toHaveLength(2)
    expect(server.app.rateLimitStats).toMatchObject({ sendFallbacks: 13, failedOpen: 0 })
  })
})
