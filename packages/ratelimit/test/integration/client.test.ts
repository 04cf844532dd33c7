import { getFreePort } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RateLimitClient } from '../../src/client.js'
import { startService, type Harness } from '../harness.js'

const CONFIG = `domain: client
descriptors:
  - key: op
    value: two_per_minute
    rate_limit: {unit: minute, requests_per_unit: 2}
`

describe('RateLimitClient (one channel, deadlines, hits_addend, duration_until_reset)', () => {
  let h: Harness
  let client: RateLimitClient

  beforeAll(async () => {
    h = await startService({
      files: { 'client.yaml': CONFIG },
      now: Date.UTC(2026, 0, 1, 0, 0, 20),
    })
    client = new RateLimitClient(h.grpcAddress, { timeoutMs: 2_000 })
  })
  afterAll(async () => {
    client.close()
    await h.close()
  })

  const request = (hitsAddend: number) => ({
    domain: 'client',
    descriptors: [{ entries: [{ key: 'op', value: 'two_per_minute' }] }],
    hitsAddend,
  })

  it('counts hits_addend and reads the seconds until the window resets', async () => {
    const first = await client.shouldRateLimit(request(2))
    expect(first.overallCode).toBe('OK')
    expect(first.statuses[0]).toMatchObject({ limitRemaining: 0, durationUntilReset: 40 })
    const second = await client.shouldRateLimit(request(1))
    expect(second.overallCode).toBe('OVER_LIMIT')
    expect(second.statuses[0]?.durationUntilReset).toBe(40)
  })

  it('fails with UNAVAILABLE when nothing listens, within its deadline', async () => {
    const port = await getFreePort()
    const down = new RateLimitClient(`127.0.0.1:${String(port)}`, { timeoutMs: 300 })
    try {
      await expect(down.shouldRateLimit(request(1))).rejects.toMatchObject({
        code: expect.any(Number) as number,
      })
    } finally {
      down.close()
    }
  })
})
