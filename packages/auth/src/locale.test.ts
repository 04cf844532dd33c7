import { describe, expect, it } from 'vitest'
import { acceptedLanguages, canonicalLocale, lookupLocale, readerLanguages } from './locale.js'

describe('canonicalLocale', () => {
  it('writes a tag in its canonical case, with - between subtags', () => {
    expect(canonicalLocale('PT_BR')).toBe('pt-BR')
    expect(canonicalLocale('pt-br')).toBe('pt-BR')
    expect(canonicalLocale('ZH_HANT_TW')).toBe('zh-Hant-TW')
    expect(canonicalLocale('de')).toBe('de')
  })

  it('refuses what is not a language tag', () => {
    for (const tag of ['', '*', 'german', 'en-', 'e', 'en--US', 'de;q=1', 'x'.repeat(300)]) {
      expect(canonicalLocale(tag)).toBeUndefined()
    }
  })
})

describe('acceptedLanguages', () => {
  it('orders by q, then as written, dropping *, q=0 and malformed ranges', () => {
    expect(acceptedLanguages('fr-CA, fr;q=0.9, en;q=0.8, *;q=0.5')).toEqual(['fr-CA', 'fr', 'en'])
    expect(acceptedLanguages('en;q=0.3, de, nl;q=0')).toEqual(['de', 'en'])
    expect(acceptedLanguages('it;q=2, es;q=abc, pt-br;Q=0.7')).toEqual(['pt-BR'])
    expect(acceptedLanguages('')).toEqual([])
    expect(acceptedLanguages('de, de;q=0.5')).toEqual(['de'])
  })

  it('reads a bounded part of a hostile header', () => {
    const huge = Array.from({ length: 10_000 }, (_, i) => `l${String.fromCharCode(97 + (i % 26))}`)
    expect(acceptedLanguages(huge.join(',')).length).toBeLessThanOrEqual(16)
    expect(acceptedLanguages(`${'x'.repeat(600)},de`)).toEqual([])
  })
})

describe('readerLanguages', () => {
  it("puts the user's own locale first, then the request's languages", () => {
    expect(readerLanguages('pt_BR', 'de, fr;q=0.5')).toEqual(['pt-BR', 'de', 'fr'])
    expect(readerLanguages('de', 'de')).toEqual(['de'])
  })

  it('ignores a user locale that is not a language tag', () => {
    expect(readerLanguages(42, 'fr')).toEqual(['fr'])
    expect(readerLanguages('klingon!', '')).toEqual([])
    expect(readerLanguages(undefined, '')).toEqual([])
  })
})

describe('lookupLocale (RFC 4647 lookup)', () => {
  const available = new Set(['de', 'pt-BR', 'zh-Hant'])

  it('takes the first preference that has texts, as written', () => {
    expect(lookupLocale(['fr', 'pt-BR', 'de'], available)).toBe('pt-BR')
  })

  it('shortens a preference a subtag at a time, skipping singletons', () => {
    expect(lookupLocale(['de-AT'], available)).toBe('de')
    expect(lookupLocale(['zh-Hant-TW'], available)).toBe('zh-Hant')
    expect(lookupLocale(['de-x-formal'], available)).toBe('de')
  })

  it('never widens: pt does not match pt-BR, and nothing matches nothing', () => {
    expect(lookupLocale(['pt'], available)).toBeUndefined()
    expect(lookupLocale(['fr'], available)).toBeUndefined()
    expect(lookupLocale([], available)).toBeUndefined()
    expect(lookupLocale(['de'], new Set())).toBeUndefined()
  })
})
