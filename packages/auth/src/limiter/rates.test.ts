import { describe, expect, it } from 'vitest'
import { serviceBucket, type ServiceRule } from './rates.js'
import type { BucketRate } from './token-bucket.js'

const UNIT_SECONDS = { second: 1, minute: 60, hour: 3600, day: 86_400 }

describe('serviceBucket', () => {
  it.each<[string, BucketRate, ServiceRule]>([
    ['2 a second', { perSecond: 2, burst: 30 }, { unit: 'second', requestsPerUnit: 2, burst: 30 }],
    [
      '150 per 5 minutes: 30 a minute',
      { perSecond: 150 / 300, burst: 30 },
      { unit: 'minute', requestsPerUnit: 30, burst: 30 },
    ],
    [
      '7 per 5 minutes: 1.4000000000000001 a minute in doubles, 84 an hour',
      { perSecond: 7 / 300, burst: 30 },
      { unit: 'hour', requestsPerUnit: 84, burst: 30 },
    ],
    [
      '0.125 per 5 minutes: 1.5 an hour, 36 a day',
      { perSecond: 0.125 / 300, burst: 30 },
      { unit: 'day', requestsPerUnit: 36, burst: 30 },
    ],
    [
      '0.01 per 5 minutes: 2.88 a day, rounded down',
      { perSecond: 0.01 / 300, burst: 30 },
      { unit: 'day', requestsPerUnit: 2, burst: 30 },
    ],
    [
      'a rate of 0: refills 1 a day',
      { perSecond: 0, burst: 30 },
      { unit: 'day', requestsPerUnit: 1, burst: 30 },
    ],
    [
      'below 1 a day: refills 1 a day',
      { perSecond: 1 / 300_000, burst: 5 },
      { unit: 'day', requestsPerUnit: 1, burst: 5 },
    ],
    [
      'no burst: a window of 0, which refuses everything',
      { perSecond: 0, burst: 0 },
      { unit: 'minute', requestsPerUnit: 0 },
    ],
  ])('%s', (_, rate, rule) => {
    expect(serviceBucket(rate)).toEqual(rule)
  })

  it('keeps the rate exactly for every setting per 5 minutes in steps of 1/288 (one a day)', () => {
    for (let perDay = 1; perDay <= 288 * 2000; perDay += 97) {
      const perSecond = perDay / 288 / 300
      const rule = serviceBucket({ perSecond, burst: 30 })
      expect(rule.requestsPerUnit / UNIT_SECONDS[rule.unit]).toBeCloseTo(perSecond, 12)
    }
  })
})
