import { FakeClock } from '@gatehouse/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { loadSettings } from '../conf/settings.js'
import { tableNames, type Queryable } from '../storage/db.js'
import { CleanupJob } from './cleanup.js'

const settings = loadSettings({
  AUTHSVC_SITE_URL: 'https://app.example.com',
  AUTHSVC_API_EXTERNAL_URL: 'https://auth.example.com',
  AUTHSVC_JWT_SECRET: 'a-secret-of-thirty-two-bytes-or-more',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'pglite://memory',
})

/** A database that records the cut-off of each statement and deletes nothing. */
function recordingDb(): { db: Queryable; cutoffs: number[] } {
  const cutoffs: number[] = []
  const db: Queryable = {
    t: tableNames(''),
    query: (_text, params) => {
      cutoffs.push((params?.[0] as Date).getTime())
      return Promise.resolve({ rows: [], rowCount: 0 })
    },
    exec: () => Promise.resolve(),
  }
  return { db, cutoffs }
}

describe('CleanupJob', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('runs every interval with the injected clock, and not after close', async () => {
    vi.useFakeTimers()
    const clock = new FakeClock(1_000_000_000_000)
    const { db, cutoffs } = recordingDb()
    const job = new CleanupJob({ db, clock, settings, intervalMs: 60_000 })
    job.start()
    await vi.advanceTimersByTimeAsync(120_000)
    // Two runs, one statement per table each (nothing to delete): flow states after the link's
    // and the flow's lifetimes, challenges after theirs, WebAuthn challenges once expired, OAuth
    // authorization requests a day after they expired.
    const flow = 1_000_000_000_000 - settings.mailer.otpExpMs - settings.external.flowStateExpiryMs
    const challenge = 1_000_000_000_000 - settings.mfa.challengeExpiryMs
    expect(challenge).toBe(1_000_000_000_000 - 300_000)
    const now = 1_000_000_000_000
    const authorization = now - 24 * 3_600_000
    expect(cutoffs).toEqual([
      flow,
      challenge,
      now,
      authorization,
      flow,
      challenge,
      now,
      authorization,
    ])
    await job.close()
    await vi.advanceTimersByTimeAsync(600_000)
    expect(cutoffs).toHaveLength(8)
  })
})
