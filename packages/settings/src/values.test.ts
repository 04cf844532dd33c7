import { describe, expect, it } from 'vitest'
import { ValueError } from './errors.js'
import { parseBool, parseList, parseMap } from './values.js'

describe('parseBool', () => {
  it.each(['1', 't', 'T', 'TRUE', 'true', 'True'])('%j is true', (text) => {
    expect(parseBool(text)).toBe(true)
  })

  it.each(['0', 'f', 'F', 'FALSE', 'false', 'False'])('%j is false', (text) => {
    expect(parseBool(text)).toBe(false)
  })

  it.each(['yes', 'no', 'on', 'off', 'Yes', 'tRuE', 'FaLsE', 'y', '', ' true', 'true ', '2'])(
    "refuses %j as Go's strconv.ParseBool does",
    (text) => {
      expect(() => parseBool(text)).toThrow(
        `strconv.ParseBool: parsing ${JSON.stringify(text)}: invalid syntax`,
      )
      expect(() => parseBool(text)).toThrow(ValueError)
    },
  )

  it('gives its refusals the code ERR_INVALID_BOOLEAN', () => {
    expect(() => parseBool('maybe')).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_BOOLEAN' }),
    )
  })
})

describe('parseList', () => {
  it('splits on commas, trims items and drops empty ones', () => {
    expect(parseList('a, b ,,c,')).toEqual(['a', 'b', 'c'])
    expect(parseList('')).toEqual([])
    expect(parseList(' , ')).toEqual([])
    expect(parseList('https://a.example/*,http://localhost:3000/**')).toEqual([
      'https://a.example/*',
      'http://localhost:3000/**',
    ])
  })

  it('splits on another separator when given one', () => {
    expect(parseList('a:b: c', ':')).toEqual(['a', 'b', 'c'])
  })
})

describe('parseMap', () => {
  it('reads k:v pairs, splitting each at its first colon, without trimming', () => {
    expect({ ...parseMap('b:2,a:1') }).toEqual({ a: '1', b: '2' })
    expect({ ...parseMap('url:http://x:80,empty:') }).toEqual({ url: 'http://x:80', empty: '' })
    expect({ ...parseMap(' k : v ') }).toEqual({ ' k ': ' v ' })
    expect({ ...parseMap('a:1,a:2') }).toEqual({ a: '2' })
    expect({ ...parseMap('') }).toEqual({})
  })

  it('keeps keys such as __proto__ as plain keys', () => {
    const map = parseMap('__proto__:x,constructor:y')
    expect(Object.keys(map)).toEqual(['__proto__', 'constructor'])
    expect(map.__proto__).toBe('x')
  })

  it.each(['a', 'a:1,b', ':1', 'a:1,', ','])('refuses %j', (text) => {
    expect(() => parseMap(text)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_MAP' }))
  })
})
