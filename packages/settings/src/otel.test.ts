import { describe, expect, it } from 'vitest'
import { Invalid } from './fields.js'
import { parseOtlpHeaders, parseResourceAttributes } from './otel.js'

describe('parseOtlpHeaders', () => {
  it('reads URL-encoded pairs with lower-case names', () => {
    expect(parseOtlpHeaders('API-Key=a%20b, x-team = t ,')).toEqual({
      'api-key': 'a b',
      'x-team': 't',
    })
  })
  it('refuses what is not header names and values', () => {
    expect(parseOtlpHeaders('novalue')).toBeInstanceOf(Invalid)
    expect(parseOtlpHeaders('bad name=v')).toBeInstanceOf(Invalid)
    expect(parseOtlpHeaders('k=a%0Db')).toBeInstanceOf(Invalid)
    expect(parseOtlpHeaders('k=%E0%A4%A')).toBeInstanceOf(Invalid)
  })
})

describe('parseResourceAttributes', () => {
  it('keeps keys as written and decodes values', () => {
    expect(parseResourceAttributes('deployment.environment=prod,Team=a%2Cb')).toEqual({
      'deployment.environment': 'prod',
      Team: 'a,b',
    })
    expect(parseResourceAttributes('')).toEqual({})
  })
  it('refuses malformed lists and oversized or control-character values', () => {
    expect(parseResourceAttributes('a')).toBeInstanceOf(Invalid)
    expect(parseResourceAttributes(`k=${'x'.repeat(4097)}`)).toBeInstanceOf(Invalid)
    expect(parseResourceAttributes('k=a%0Ab')).toBeInstanceOf(Invalid)
  })
})
