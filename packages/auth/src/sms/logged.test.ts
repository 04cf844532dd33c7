import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { createLogger } from '../logger.js'
import { LoggedSmsProvider } from './logged.js'
import type { SmsProvider } from './sms-provider.js'

function recordingLogger(lines: Record<string, unknown>[]) {
  return createLogger(
    { level: 'info', file: '' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').trim().split('\n')) {
          lines.push(JSON.parse(line) as Record<string, unknown>)
        }
        done()
      },
    }),
  )
}

describe('LoggedSmsProvider', () => {
  it("passes the inner provider's code check through and logs its outcome, never the code or number", async () => {
    const lines: Record<string, unknown>[] = []
    const checked: string[] = []
    const verify: SmsProvider = {
      sendMessage: () => Promise.resolve('VE1'),
      checkOtp: (phone, code) => {
        checked.push(`${phone}:${code}`)
        return Promise.resolve(code === '123456')
      },
    }
    const logged = new LoggedSmsProvider(verify, 'twilio_verify', recordingLogger(lines))
    expect(await logged.checkOtp?.('15550001111', '123456')).toBe(true)
    expect(await logged.checkOtp?.('15550001111', '000000')).toBe(false)
    expect(checked).toEqual(['15550001111:123456', '15550001111:000000'])
    expect(lines.map((l) => [l.provider, l.approved, l.msg])).toEqual([
      ['twilio_verify', true, 'SMS code checked'],
      ['twilio_verify', false, 'SMS code checked'],
    ])
    expect(JSON.stringify(lines)).not.toMatch(/15550001111|123456/)
  })

  it('has no code check when the inner provider has none', () => {
    const plain: SmsProvider = { sendMessage: () => Promise.resolve('SM1') }
    expect(new LoggedSmsProvider(plain, 'twilio', recordingLogger([])).checkOtp).toBeUndefined()
  })
})
