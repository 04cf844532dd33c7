import { describe, expect, it } from 'vitest'
import { parseGoDuration } from './duration.js'
import { DurationError, ValueError } from './errors.js'

describe('parseGoDuration', () => {
  it.each([
    ['0', 0],
    ['+0', 0],
    ['-0', 0],
    ['10s', 10_000],
    ['300ms', 300],
    ['1h30m', 5_400_000],
    ['2h45m', 9_900_000],
    ['1.5h', 5_400_000],
    ['-1s', -1000],
    ['-1.5m', -90_000],
    ['+5s', 5000],
    ['2us', 0.002],
    ['2\u00b5s', 0.002], // micro sign
    ['2\u03bcs', 0.002], // Greek mu
    ['150us', 0.15],
    ['1000000ns', 1],
    ['5.s', 5000],
    ['.5s', 500],
    ['1.5s', 1500],
    ['1.004s', 1004],
    ['2m0.5s', 120_500],
    ['10.5s4m', 250_500],
    ['-2m3.4s', -123_400],
    ['1h2m3s4ms5us6ns', 3_723_004.005006],
    ['39h9m14.425s', 140_954_425],
    ['0.3333333333333333333h', 1_200_000],
    ['0.100000000000000000000h', 360_000],
  ])("%j is %d ms, as Go's time.ParseDuration reads it", (text, ms) => {
    expect(parseGoDuration(text)).toBe(ms)
  })

  it.each([
    ['', 'time: invalid duration ""'],
    ['-', 'time: invalid duration "-"'],
    ['s', 'time: invalid duration "s"'],
    ['.', 'time: invalid duration "."'],
    ['-.', 'time: invalid duration "-."'],
    ['.s', 'time: invalid duration ".s"'],
    ['+.s', 'time: invalid duration "+.s"'],
    ['h1', 'time: invalid duration "h1"'],
    ['none', 'time: invalid duration "none"'],
    ['+-1s', 'time: invalid duration "+-1s"'],
    ['3', 'time: missing unit in duration "3"'],
    ['10', 'time: missing unit in duration "10"'],
    ['1h30', 'time: missing unit in duration "1h30"'],
    ['1d', 'time: unknown unit "d" in duration "1d"'],
    ['1x', 'time: unknown unit "x" in duration "1x"'],
    ['10 s', 'time: unknown unit " s" in duration "10 s"'],
    ['10 seconds', 'time: unknown unit " seconds" in duration "10 seconds"'],
    ['1H', 'time: unknown unit "H" in duration "1H"'],
    ['1\u00b5', 'time: unknown unit "\\xc2\\xb5" in duration "1\\xc2\\xb5"'],
    ['\ufffd', 'time: invalid duration "\\xef\\xbf\\xbd"'],
    ['"1s"', 'time: invalid duration "\\"1s\\""'],
  ])("refuses %j with Go's message", (text, message) => {
    expect(() => parseGoDuration(text)).toThrow(message)
    try {
      parseGoDuration(text)
    } catch (error) {
      expect(error).toBeInstanceOf(DurationError)
      expect(error).toBeInstanceOf(ValueError)
      expect(error).toMatchObject({ name: 'DurationError', code: 'ERR_INVALID_DURATION', message })
    }
  })

  it("accepts Go's whole int64 range of nanoseconds and no more", () => {
    expect(parseGoDuration('9223372036854775807ns')).toBeCloseTo(9_223_372_036_854.775, 2)
    expect(parseGoDuration('-9223372036854775808ns')).toBeCloseTo(-9_223_372_036_854.775, 2)
    expect(parseGoDuration('-2562047h47m16.854775808s')).toBeCloseTo(-9_223_372_036_854.775, 2)
    expect(parseGoDuration('9223372036s854ms775us807ns')).toBeCloseTo(9_223_372_036_854.775, 2)
    expect(parseGoDuration('9007199254740993ns')).toBeCloseTo(9_007_199_254.740993, 5)
    for (const text of [
      '9223372036854775808ns',
      '9223372036854775810ns',
      '-9223372036854775809ns',
      '9223372036854776us',
      '3000000h',
      '9223372036854775.808us',
      '9223372036854ms775us808ns',
      '99999999999999999999s',
    ]) {
      expect(() => parseGoDuration(text), text).toThrow(`time: invalid duration "${text}"`)
    }
  })
})
