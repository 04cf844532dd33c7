import { describe, expect, it } from 'vitest'
import { newRateLimit, type RateLimit } from '../config/config.js'
import type { Descriptor, Unit } from '../protocol/types.js'
import { StatsManager } from '../stats/manager.js'
import { StatsStore } from '../stats/store.js'
import { generateCacheKey } from './cache-key.js'
import { secondsUntilReset, unitSeconds, windowStart } from './units.js'

const stats = new StatsManager(new StatsStore()).rateLimitStats('x')

function limit(unit: Unit, sharePatterns?: (string | undefined)[]): RateLimit {
  return newRateLimit('x', stats, { requestsPerUnit: 1, unit, sharePatterns })
}

function d(...pairs: [string, string][]): Descriptor {
  return { entries: pairs.map(([key, value]) => ({ key, value })) }
}

describe('cache keys (byte-compatible with upstream)', () => {
  it.each([
    ['', d(['key', 'value']), 'SECOND', 1234, 'domain_key_value_1234'],
    ['prefix:', d(['key', 'value']), 'SECOND', 1234, 'prefix:domain_key_value_1234'],
    [
      '',
      d(['key2', 'value2'], ['subkey2', 'subvalue2']),
      'MINUTE',
      1234,
      'domain_key2_value2_subkey2_subvalue2_1200',
    ],
    ['', d(['key3', 'value3']), 'HOUR', 1_000_000, 'domain_key3_value3_997200'],
    [
      '',
      d(['key3', 'value3'], ['subkey3', 'subvalue3']),
      'DAY',
      1_000_000,
      'domain_key3_value3_subkey3_subvalue3_950400',
    ],
    ['', d(['key', '']), 'SECOND', 5, 'domain_key__5'],
  ] as const)('prefix %j %j %s @%i → %s', (prefix, descriptor, unit, now, expected) => {
    expect(generateCacheKey(prefix, 'domain', descriptor, limit(unit), now)).toEqual({
      key: expected,
      perSecond: unit === 'SECOND',
    })
  })

  it('uses share_threshold patterns instead of values', () => {
    expect(
      generateCacheKey('', 'domain', d(['files', 'files/a']), limit('SECOND', ['files/*']), 1234)
        .key,
    ).toBe('domain_files_files/*_1234')
    expect(
      generateCacheKey(
        '',
        'domain',
        d(['parent', 'value1'], ['files', 'nested/x']),
        limit('SECOND', [undefined, 'nested/*']),
        1234,
      ).key,
    ).toBe('domain_parent_value1_files_nested/*_1234')
  })

  it('gives no key without a limit', () => {
    expect(generateCacheKey('p', 'domain', d(['a', 'b']), undefined, 1)).toEqual({
      key: '',
      perSecond: false,
    })
  })
})

describe('units', () => {
  it('has epoch-aligned window lengths from second to year', () => {
    expect(
      ['SECOND', 'MINUTE', 'HOUR', 'DAY', 'WEEK', 'MONTH', 'YEAR'].map((u) =>
        unitSeconds(u as Unit),
      ),
    ).toEqual([1, 60, 3600, 86_400, 604_800, 2_592_000, 31_536_000])
    expect(windowStart(1_000_000, 'WEEK')).toBe(604_800)
    expect(secondsUntilReset(2222, 'MINUTE')).toBe(58)
    expect(secondsUntilReset(2220, 'MINUTE')).toBe(60)
    expect(() => unitSeconds('UNKNOWN')).toThrow(RangeError)
  })
})

describe('windows of several units (unit_multiplier, issue 32)', () => {
  const windowed = (unit: Unit, unitMultiplier: number): RateLimit =>
    newRateLimit('x', stats, {
      requestsPerUnit: 1,
      unit,
      unitMultiplier,
      keySuffix: `_${String(unitSeconds(unit) * unitMultiplier)}s`,
    })

  it.each([
    ['SECOND', 30, 1_000_000_029, 'domain_key_value_1000000020_30s'],
    ['SECOND', 30, 1_000_000_050, 'domain_key_value_1000000050_30s'],
    ['MINUTE', 5, 1_000_000_000, 'domain_key_value_999999900_300s'],
    ['HOUR', 6, 1_000_000_000, 'domain_key_value_999993600_21600s'],
  ] as const)('%s × %i @%i → %s', (unit, multiplier, now, expected) => {
    expect(
      generateCacheKey('', 'domain', d(['key', 'value']), windowed(unit, multiplier), now),
    ).toEqual({ key: expected, perSecond: unit === 'SECOND' })
  })

  it('aligns windows to multiples of their length since the epoch and counts down to their end', () => {
    expect(windowStart(1_000_000_029, 'SECOND', 30)).toBe(1_000_000_020)
    expect(secondsUntilReset(1_000_000_029, 'SECOND', 30)).toBe(21)
    expect(secondsUntilReset(1_000_000_020, 'SECOND', 30)).toBe(30)
    expect(secondsUntilReset(999_993_600, 'HOUR', 6)).toBe(21_600)
  })
})
