import { startHttpServer } from '@gatehouse/testing'
import { describe, expect, it } from 'vitest'
import { loadSettings } from '../conf/settings.js'
import { cryptoRandom } from '../random.js'
import type { Db } from '../storage/db.js'
import { Hooks } from './hooks.js'

const SECRET = 'v1,whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'

describe('Hooks', () => {
  it('sends metadata with the input and logs each run without query or secrets', async () => {
    const bodies: unknown[] = []
    let answer = 200
    const server = await startHttpServer((req, res) => {
      let body = ''
      req.on('data', (chunk: Buffer) => (body += chunk.toString()))
      req.on('end', () => {
        bodies.push(JSON.parse(body))
        res.writeHead(answer, { 'content-type': 'application/json' }).end('{"ok":true}')
      })
    })
    try {
      const settings = loadSettings({
        AUTHSVC_SITE_URL: 'http://localhost:3000',
        AUTHSVC_API_EXTERNAL_URL: 'http://localhost:9999',
        AUTHSVC_JWT_SECRET: 'a-secret-of-thirty-two-bytes-or-more',
        AUTHSVC_DB_DRIVER: 'postgres',
        DATABASE_URL: 'postgres://localhost/db',
        AUTHSVC_HOOK_SEND_SMS_ENABLED: 'true',
        AUTHSVC_HOOK_SEND_SMS_URI: `${server.url}/sms?token=private`,
        AUTHSVC_HOOK_SEND_SMS_SECRETS: SECRET,
      })
      const lines: { level: string; fields: Record<string, unknown>; message: string }[] = []
      const hooks = new Hooks(settings.hook, {
        db: {} as Db,
        clock: { now: () => Date.UTC(2026, 10, 28, 12) },
        random: { ...cryptoRandom, uuid: () => '00000000-0000-4000-8000-000000000001' },
        userJson: () => ({}),
        log: {
          info: (fields, message) => lines.push({ level: 'info', fields, message }),
          warn: (fields, message) => lines.push({ level: 'warn', fields, message }),
        },
      })
      expect(hooks.enabled('sendSms')).toBe(true)
      expect(hooks.enabled('sendEmail')).toBe(false)
      await expect(
        hooks.invoke('sendSms', { sms: { otp: '123456' } }, { ip: '203.0.113.9' }),
      ).resolves.toEqual({ ok: true })
      expect(bodies[0]).toEqual({
        metadata: {
          uuid: '00000000-0000-4000-8000-000000000001',
          time: '2026-11-28T12:00:00.000Z',
          name: 'send-sms',
          ip_address: '203.0.113.9',
        },
        sms: { otp: '123456' },
      })
      answer = 418
      await expect(hooks.invoke('sendSms', {}, { ip: '' })).rejects.toMatchObject({
        code: 'unexpected_failure',
      })
      expect(lines.map((l) => [l.level, l.message, l.fields.hook, l.fields.success])).toEqual([
        ['info', 'Hook ran successfully', `${server.url}/sms`, true],
        ['warn', 'Hook errored out', `${server.url}/sms`, false],
      ])
      expect(JSON.stringify(lines)).not.toMatch(/private|whsec|123456/)
    } finally {
      await server.close()
    }
  })
})
