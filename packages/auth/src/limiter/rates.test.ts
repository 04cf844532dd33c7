import { describe, expect, it } from 'vitest'
import { serviceBucket } from './rates.js'

const UNIT_SECONDS = { second: 1, minute: 60, hour: 3600, day: 86_400 }

describe('serviceBucket', () => {
  it('refills at the bucket’s rate in the smallest unit where the count is whole', () => {
    expect(serviceBucket({ perSecond: 2, burst: 30 })).toEqual({
      unit: 'second',
      requestsPerUnit: 2,
      burst: 30,
    })
    expect(serviceBucket({ perSecond: 150 / 300, burst: 30 })).toEqual({
      unit: 'minute',
      requestsPerUnit: 30,
      burst: 30,
    })
    // 7 per 5 minutes is 1.4 a minute (1.4000000000000001 in doubles), 84 an hour.
    expect(serviceBucket({ perSecond: 7 / 300, burst: 30 })).toEqual({
      unit: 'hour',
      requestsPerUnit: 84,
      burst: 30,
    })
    // 0.125 per 5 minutes is 1.5 an hour, 36 a day.
    expect(serviceBucket({ perSecond: 0.125 / 300, burst: 30 })).toEqual({
      unit: 'day',
      requestsPerUnit: 36,
      burst: 30,
    })
  })

  it('keeps the rate exactly for every setting per 5 minutes in steps of 1/288 (one a day)', () => {
    for (let perDay = 1; perDay <= 288 * 2000; perDay += 97) {
      const perSecond = perDay / 288 / 300
      const rule = serviceBucket({ perSecond, burst: 30 })
      expect(rule.requestsPerUnit / UNIT_SECONDS[rule.unit]).toBeCloseTo(perSecond, 12)
    }
  })

  it('rounds another rate down to whole requests a day', () => {
    // 0.01 per 5 minutes is 2.88 a day.
    expect(serviceBucket({ perSecond: 0.01 / 300, burst: 30 })).toEqual({
      unit: 'day',
      requestsPerUnit: 2,
      burst: 30,
    })
  })

  it('refills at least 1 a day, and refuses everything without a burst', () => {
    expect(serviceBucket({ perSecond: 0, burst: 30 })).toEqual({
      unit: 'day',
      requestsPerUnit: 1,
      burst: 30,
    })
    expect(serviceBucket({ perSecond: 1 / 300_000, burst: 30 })).toEqual({
      unit: 'day',
      requestsPerUnit: 1,
      burst: 30,
    })
    expect(serviceBucket({ perSecond: 1.5 / 86_400 + 1e-12, burst: 5 })).toEqual({
      unit: 'day',
      requestsPerUnit: 1,
      burst: 5,
    })
    expect(serviceBucket({ perSecond: 0, burst: 0 })).toEqual({
      unit: 'minute',
      requestsPerUnit: 0,
    })
  })
})
