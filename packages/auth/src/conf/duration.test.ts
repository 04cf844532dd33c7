import { describe, expect, it } from 'vitest'
import { parseGoDuration } from './duration.js'

describe('parseGoDuration', () => {
  it.each([
    ['0', 0],
    ['300ms', 300],
    ['1.5h', 5_400_000],
    ['2h45m', 9_900_000],
    ['-1m', -60_000],
    ['10s', 10_000],
    ['1000000ns', 1],
    ['2000us', 2],
    ['2000µs', 2],
  ])('%s is %d ms', (text, ms) => {
    expect(parseGoDuration(text)).toBeCloseTo(ms, 9)
  })

  it.each([
    ['', 'time: invalid duration ""'],
    ['1', 'time: missing unit in duration "1"'],
    ['1d', 'time: unknown unit "d" in duration "1d"'],
    ['h', 'time: invalid duration "h"'],
    ['none', 'time: invalid duration "none"'],
  ])("%j fails with Go's message", (text, message) => {
    expect(() => parseGoDuration(text)).toThrow(message)
  })
})
