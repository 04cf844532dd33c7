import { describe, expect, it } from 'vitest'
import type { MailMessage } from '../mailer/mailer.js'
import { noAuthMetrics, type AuthMetrics } from './auth-metrics.js'
import { CountedMailer, CountedSmsProvider } from './counted.js'
import { operationOf } from './traced-db.js'

function recording(): { metrics: AuthMetrics; calls: string[] } {
  const calls: string[] = []
  return {
    calls,
    metrics: {
      ...noAuthMetrics,
      mailSent: (kind) => calls.push(`mail ${kind}`),
      smsSent: (channel) => calls.push(`sms ${channel}`),
    },
  }
}

describe('CountedMailer and CountedSmsProvider', () => {
  it('count what the inner backend delivered, and nothing it failed to deliver', async () => {
    const { metrics, calls } = recording()
    let fail = false
    const mailer = new CountedMailer(
      {
        send: () => (fail ? Promise.reject(new Error('smtp down')) : Promise.resolve()),
      },
      metrics,
    )
    const message = { kind: 'recovery', to: 'a@example.com' } as MailMessage
    await mailer.send(message)
    fail = true
    await expect(mailer.send(message)).rejects.toThrow('smtp down')
    const sms = new CountedSmsProvider(
      { sendMessage: () => (fail ? Promise.reject(new Error('x')) : Promise.resolve('id-1')) },
      metrics,
    )
    await expect(sms.sendMessage('15550001', 'code', 'sms', '123456')).rejects.toThrow('x')
    fail = false
    expect(await sms.sendMessage('15550001', 'code', 'whatsapp', '123456')).toBe('id-1')
    expect(calls).toEqual(['mail recovery', 'sms whatsapp'])
  })
  it("keep the inner provider's code check (Twilio Verify), and have none when it has none", async () => {
    const { metrics } = recording()
    const verify = new CountedSmsProvider(
      {
        sendMessage: () => Promise.resolve('VE1'),
        checkOtp: (_phone, code) => Promise.resolve(code === '123456'),
      },
      metrics,
    )
    expect(await verify.checkOtp?.('15550001', '123456')).toBe(true)
    expect(await verify.checkOtp?.('15550001', '000000')).toBe(false)
    const plain = new CountedSmsProvider({ sendMessage: () => Promise.resolve('SM1') }, metrics)
    expect(plain.checkOtp).toBeUndefined()
  })
})

describe('operationOf', () => {
  it('names a statement by its first keyword', () => {
    expect(operationOf('SELECT 1')).toBe('SELECT')
    expect(operationOf('\n  with x as (select 1) select * from x')).toBe('WITH')
    expect(operationOf('  ')).toBe('SQL')
  })
})
