import { describe, expect, it } from 'vitest'
import { Response } from './response.js'
import { SnakyHash } from './snaky-hash.js'

const make = (body: string, contentType?: string, options = {}) =>
  new Response(
    {
      status: 200,
      headers: contentType === undefined ? {} : { 'content-type': contentType },
      body,
    },
    options,
  )

describe('Response', () => {
  it('reads the media type of Content-Type: before ";", trimmed, lowercase; "" when absent', () => {
    expect(make('', ' Application/JSON ; charset=utf-8').contentType).toBe('application/json')
    expect(make('').contentType).toBe('')
  })

  it('parses JSON objects into SnakyHash with snake_case keys', () => {
    const parsed = make('{"accessToken":"a","tokenType":"Bearer"}', 'application/json').parsed
    expect(parsed).toBeInstanceOf(SnakyHash)
    expect(parsed).toEqual(new SnakyHash({ access_token: 'a', token_type: 'Bearer' }))
  })

  it.each([
    'text/javascript',
    'application/hal+json',
    'application/vnd.collection+json',
    'application/vnd.api+json',
    'application/problem+json',
    'application/vnd.custom+json',
  ])('parses %s as JSON', (type) => {
    expect(make('{"a":1}', type).parsed).toEqual(new SnakyHash({ a: 1 }))
  })

  it('keeps JSON arrays as arrays and an empty JSON body as ""', () => {
    expect(make('[{"a":1},2]', 'application/json').parsed).toEqual([{ a: 1 }, 2])
    expect(make('', 'application/json').parsed).toBe('')
  })

  it('parses forms into SnakyHash (repeated keys give arrays)', () => {
    const parsed = make(
      'access_token=x&expiresIn=3600&scope=a&scope=b',
      'application/x-www-form-urlencoded',
    ).parsed as SnakyHash
    expect(parsed.toObject()).toEqual({ access_token: 'x', expires_in: '3600', scope: ['a', 'b'] })
  })

  it('returns the body string for text/plain, unknown types and no Content-Type (the spec)', () => {
    expect(make('hello', 'text/plain').parsed).toBe('hello')
    expect(make('<a/>', 'application/xml').parsed).toBe('<a/>')
    expect(make('{"a":1}').parsed).toBe('{"a":1}')
  })

  it('keeps the provider keys in plain objects with snaky: false', () => {
    const parsed = make('{"accessToken":"a"}', 'application/json', { snaky: false }).parsed
    expect(parsed).not.toBeInstanceOf(SnakyHash)
    expect(parsed).toEqual({ accessToken: 'a' })
  })

  it('uses a snakyHashClass subclass', () => {
    class Mine extends SnakyHash {}
    expect(
      make('{"a":{"b":1}}', 'application/json', { snakyHashClass: Mine }).parsed,
    ).toBeInstanceOf(Mine)
  })

  it('lets parse choose a registered parser or a function', () => {
    expect(make('{"a":1}', 'text/plain', { parse: 'json' }).parsed).toEqual(new SnakyHash({ a: 1 }))
    expect(make('x', 'text/plain', { parse: (body: string) => body.toUpperCase() }).parsed).toBe(
      'X',
    )
    // An unknown key falls back to the Content-Type lookup.
    expect(make('{"a":1}', 'application/json', { parse: 'nope' }).parsed).toEqual(
      new SnakyHash({ a: 1 }),
    )
  })

  it('uses parsers registered for other content types', () => {
    Response.registerParser('csv-test', ['text/x-csv-test'], (body, response) => ({
      rows: body.split('\n').length,
      status: response.status,
    }))
    expect(make('a\nb', 'text/x-csv-test').parsed).toEqual(new SnakyHash({ rows: 2, status: 200 }))
    expect(() => {
      Response.registerParser('', [], () => 1)
    }).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
  })

  it('throws SyntaxError for invalid JSON and parses only once', () => {
    expect(() => make('{', 'application/json').parsed).toThrow(SyntaxError)
    let calls = 0
    const response = make('x', 'text/plain', { parse: () => ++calls })
    expect(response.parsed).toBe(1)
    expect(response.parsed).toBe(1)
  })
})
