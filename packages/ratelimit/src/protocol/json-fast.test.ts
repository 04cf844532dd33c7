import { describe, expect, it } from 'vitest'
import { parseCommonJsonRequest } from './json-fast.js'
import { parseJsonRequestGeneral } from './json.js'
import type { RequestLimits } from './limits.js'

const LIMITS: RequestLimits = { maxDescriptors: 3, maxEntries: 3, maxEntryBytes: 12 }

/** What the general parser makes of `body`: the request, or the error's class and code. */
function general(body: Buffer, limits: RequestLimits): unknown {
  try {
    return parseJsonRequestGeneral(body, limits)
  } catch (error) {
    const { name, code } = error as { name: string; code?: string }
    return { threw: name, code }
  }
}

/** A small seeded generator (mulberry32), so that a failure can be replayed. */
function seeded(seed: number): () => number {
  let state = seed
  return () => {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * Random request bodies, near the common shape and off it in every way the fast path must
 * notice: other spellings, fields twice, unknown fields, `null`, escapes, non-ASCII, numbers as
 * strings or with signs, fractions, exponents and leading zeros, overrides, whitespace,
 * truncation, and values beyond the caps.
 */
function randomBody(random: () => number): Buffer {
  const pick = <T>(options: readonly T[]): T => options[Math.floor(random() * options.length)] as T
  const ws = (): string => pick(['', '', '', ' ', '\n  ', '\t', '\r\n'])
  const text = (): string =>
    JSON.stringify(
      pick([
        'k',
        'client_id',
        'bench-client',
        '',
        'twelve123456',
        'thirteen12345',
        'é',
        'a"b',
        'a\\b',
        'tab\there',
        '\u2028',
      ]),
    ).replace(/^"k"$/, () => pick(['"k"', '"\\u006b"', '"k"']))
  const integer = (): string =>
    pick([
      '0',
      '1',
      '7',
      '4294967295',
      '4294967296',
      '999999999999999',
      '1000000000000000',
      '01',
      '-1',
      '1.0',
      '1e2',
      '1E2',
      '"3"',
      'null',
      'true',
      '2.5',
    ])
  const member = (name: string, value: string): string => `${ws()}"${name}"${ws()}:${ws()}${value}`
  const object = (members: string[]): string => `{${members.join(',')}${ws()}}`
  const list = (count: number, item: () => string): string =>
    `[${Array.from({ length: count }, () => ws() + item()).join(',')}${ws()}]`
  const entry = (): string => {
    const members: string[] = []
    if (random() < 0.9) members.push(member('key', text()))
    if (random() < 0.8) members.push(member('value', text()))
    if (random() < 0.05) members.push(member(pick(['key', 'value', 'other']), text()))
    if (random() < 0.03) members.push(member('value', 'null'))
    return random() < 0.5 ? object(members) : object(members.reverse())
  }
  const descriptor = (): string => {
    const members: string[] = []
    if (random() < 0.95) members.push(member('entries', list(Math.floor(random() * 5), entry)))
    if (random() < 0.3) members.push(member(pick(['hitsAddend', 'hits_addend']), integer()))
    if (random() < 0.05) members.push(member('hits_addend', integer()))
    if (random() < 0.05) {
      members.push(
        member('limit', object([member('requests_per_unit', '5'), member('unit', '"HOUR"')])),
      )
    }
    if (random() < 0.03) members.push(member('entries', 'null'))
    return object(random() < 0.5 ? members : members.reverse())
  }
  const members: string[] = []
  if (random() < 0.95) members.push(member('domain', text()))
  if (random() < 0.95)
    members.push(member('descriptors', list(Math.floor(random() * 5), descriptor)))
  if (random() < 0.4) members.push(member(pick(['hitsAddend', 'hits_addend']), integer()))
  if (random() < 0.05) members.push(member(pick(['domain', 'hitsAddend', 'unknown']), text()))
  let body = ws() + object(random() < 0.5 ? members : members.reverse()) + ws()
  if (random() < 0.05) body = body.slice(0, Math.floor(random() * body.length))
  if (random() < 0.03) body += pick(['}', ',', 'x', '{}'])
  return Buffer.from(body)
}

describe('the /json fast path', () => {
  it('reads the bodies clients send, as the general parser does', () => {
    const bodies = [
      '{"domain":"bench","descriptors":[{"entries":[{"key":"client_id","value":"bench-client"}]}],"hitsAddend":0}',
      '{"domain":"d","descriptors":[{"entries":[{"key":"a","value":"b"},{"key":"c"}],"hits_addend":3},{"entries":[]},{}],"hits_addend":2}',
      ' {\n  "descriptors" : [ { "hitsAddend" : 12 , "entries" : [ { "value" : "v" , "key" : "k" } ] } ] ,\n  "domain" : "x"\n}\n',
      '{}',
    ]
    for (const text of bodies) {
      const body = Buffer.from(text)
      const fast = parseCommonJsonRequest(body, LIMITS)
      expect(fast, text).toBeDefined()
      expect(fast, text).toStrictEqual(general(body, LIMITS))
    }
  })

  it('gives up on what it does not read, leaving the answer to the general parser', () => {
    for (const text of [
      '',
      '{"domain":"a","domain":"b"}',
      '{"domain":"\\u0061"}',
      '{"domain":"é"}',
      '{"domain":null}',
      '{"hitsAddend":"1"}',
      '{"hitsAddend":-1}',
      '{"hitsAddend":1.5}',
      '{"hitsAddend":1e3}',
      '{"hitsAddend":01}',
      '{"hitsAddend":4294967296}',
      '{"descriptors":[{"entries":[],"limit":{"requestsPerUnit":5,"unit":"HOUR"}}]}',
      '{"descriptors":[{"entries":[{"key":"thirteen12345"}]}]}',
      '{"descriptors":[{},{},{},{}]}',
      '{"domain":"d"',
      '{"domain":"d"}x',
      '{"other":1}',
      '[]',
    ]) {
      expect(parseCommonJsonRequest(Buffer.from(text), LIMITS), text).toBeUndefined()
    }
  })

  it('never reads a body otherwise than the general parser (20,000 random bodies)', () => {
    const random = seeded(34)
    let read = 0
    for (let i = 0; i < 20_000; i++) {
      const body = randomBody(random)
      const fast = parseCommonJsonRequest(body, LIMITS)
      if (fast === undefined) continue
      read++
      expect(fast, body.toString()).toStrictEqual(general(body, LIMITS))
    }
    // The generator must reach the fast path often, or the comparison shows nothing.
    expect(read).toBeGreaterThan(1000)
  })
})
