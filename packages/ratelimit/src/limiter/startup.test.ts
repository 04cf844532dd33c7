import { FakeClock } from '@gatehouse/testing'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { BackendUnavailableError, waitForBackend, type StartupTarget } from './startup.js'

/** A logger that keeps every line it is given. */
function recordingLogger() {
  const lines: { level: number; msg: string }[] = []
  const logger = pino(
    { level: 'debug' },
    { write: (line: string) => lines.push(JSON.parse(line) as { level: number; msg: string }) },
  )
  return { logger, lines }
}

/** A target failing `failures` times (with `error`), then answering; pauses move the clock. */
function target(clock: FakeClock, failures: number, error = new Error('connect ECONNREFUSED')) {
  let attempts = 0
  const pauses: number[] = []
  const t: StartupTarget = {
    what: 'the main redis',
    address: '127.0.0.1:6390',
    setting: 'REDIS_URL',
    attempt: () => (++attempts <= failures ? Promise.reject(error) : Promise.resolve()),
    pause: (ms) => {
      pauses.push(ms)
      clock.advance(ms)
      return Promise.resolve()
    },
    closed: () => false,
  }
  return { t, pauses, attempts: () => attempts }
}

const policy = {
  initialIntervalMs: 1000,
  maxIntervalMs: 4000,
  timeoutMs: 10_000,
  timeoutSetting: 'BACKEND_STARTUP_TIMEOUT_SECONDS',
}

describe('waitForBackend', () => {
  it('warns after each failed attempt and doubles the wait up to the maximum', async () => {
    const clock = new FakeClock(0)
    const { logger, lines } = recordingLogger()
    const { t, pauses, attempts } = target(clock, 4)
    await waitForBackend(t, policy, { logger, clock, random: () => 0.5 })
    expect(attempts()).toBe(5)
    expect(pauses).toEqual([1000, 2000, 4000, 3000])
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [
        40,
        'cannot reach the main redis at 127.0.0.1:6390 (REDIS_URL): connect ECONNREFUSED; retrying in 1.0 s, giving up 10 s from now (BACKEND_STARTUP_TIMEOUT_SECONDS)',
      ],
      [
        40,
        'cannot reach the main redis at 127.0.0.1:6390 (REDIS_URL): connect ECONNREFUSED; retrying in 2.0 s, giving up 9.0 s from now (BACKEND_STARTUP_TIMEOUT_SECONDS)',
      ],
      [
        40,
        'cannot reach the main redis at 127.0.0.1:6390 (REDIS_URL): connect ECONNREFUSED; retrying in 4.0 s, giving up 7.0 s from now (BACKEND_STARTUP_TIMEOUT_SECONDS)',
      ],
      [
        40,
        'cannot reach the main redis at 127.0.0.1:6390 (REDIS_URL): connect ECONNREFUSED; retrying in 3.0 s, giving up 3.0 s from now (BACKEND_STARTUP_TIMEOUT_SECONDS)',
      ],
    ])
  })

  it('gives up at the deadline naming the setting, the address, the timeout and the error', async () => {
    const clock = new FakeClock(0)
    const { logger } = recordingLogger()
    const { t } = target(clock, Infinity)
    const error = await waitForBackend(t, policy, { logger, clock, random: () => 0.5 }).catch(
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(BackendUnavailableError)
    expect(error).toMatchObject({
      code: 'ERR_BACKEND',
      setting: 'REDIS_URL',
      address: '127.0.0.1:6390',
      message:
        'REDIS_URL: the main redis at 127.0.0.1:6390 did not answer within 10 s (BACKEND_STARTUP_TIMEOUT_SECONDS): connect ECONNREFUSED',
    })
  })

  it('waits forever with a timeout of 0, and stops at once on a fatal error', async () => {
    const clock = new FakeClock(0)
    const { logger, lines } = recordingLogger()
    const forever = target(clock, 30)
    await waitForBackend(forever.t, { ...policy, timeoutMs: 0 }, { logger, clock })
    expect(forever.attempts()).toBe(31)
    expect(lines.at(-1)?.msg).toMatch(/; retrying in \d+\.\d s$/)

    const fatal = target(clock, 1, new Error('Unable to fetch servers from SRV _m._tcp.x'))
    const error = await waitForBackend(
      { ...fatal.t, setting: 'MEMCACHE_SRV', isFatal: () => true },
      policy,
      { logger, clock },
    ).catch((e: unknown) => e)
    expect((error as Error).message).toBe(
      'MEMCACHE_SRV: Unable to fetch servers from SRV _m._tcp.x',
    )
    expect(fatal.pauses).toEqual([])
  })
})
