import { describe, expect, it } from 'vitest'
import { challengeError, parseWwwAuthenticate } from './www-authenticate.js'

describe('WWW-Authenticate (RFC 9110 §11.6.1)', () => {
  it('reads several challenges with token and quoted-string parameters', () => {
    expect(
      parseWwwAuthenticate(
        'Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple"',
      ),
    ).toEqual([
      { scheme: 'newauth', params: { realm: 'apps', type: '1', title: 'Login to "apps"' } },
      { scheme: 'basic', params: { realm: 'simple' } },
    ])
  })

  it('reads the RFC 6750 and RFC 9449 challenges, names lowercased, first value of a repeated name kept', () => {
    expect(
      parseWwwAuthenticate(
        'Bearer realm="api", ERROR="invalid_token", error="other", DPoP algs="ES256 PS256", error=use_dpop_nonce',
      ),
    ).toEqual([
      { scheme: 'bearer', params: { realm: 'api', error: 'invalid_token' } },
      { scheme: 'dpop', params: { algs: 'ES256 PS256', error: 'use_dpop_nonce' } },
    ])
  })

  it('reads bare schemes, token68 and commas in quoted strings', () => {
    expect(parseWwwAuthenticate('Negotiate, Basic YWxhZGRpbjpvcGVu==, Bearer x="a, b=c"')).toEqual([
      { scheme: 'negotiate', params: {} },
      { scheme: 'basic', params: {}, token68: 'YWxhZGRpbjpvcGVu==' },
      { scheme: 'bearer', params: { x: 'a, b=c' } },
    ])
  })

  it('stops at the first malformed part and keeps what came before', () => {
    expect(parseWwwAuthenticate('Bearer error="invalid_token", "junk"')).toEqual([
      { scheme: 'bearer', params: { error: 'invalid_token' } },
    ])
    expect(parseWwwAuthenticate('Bearer error="unterminated')).toEqual([])
    expect(parseWwwAuthenticate('')).toEqual([])
    expect(parseWwwAuthenticate('=oops')).toEqual([])
  })

  it('reads a long hostile header in one pass', () => {
    const header = `Bearer ${'a=b, '.repeat(20_000)}error="invalid_token"`
    expect(parseWwwAuthenticate(header)[0]?.params.error).toBe('invalid_token')
    expect(parseWwwAuthenticate(`Bearer x="${'\\'.repeat(50_001)}`)).toEqual([])
  })

  it('challengeError matches scheme and error, not the words anywhere', () => {
    expect(
      challengeError('Bearer error="invalid_token"', ['bearer', 'dpop'], 'invalid_token'),
    ).toBe(true)
    expect(challengeError('DPoP error=invalid_token', ['bearer', 'dpop'], 'invalid_token')).toBe(
      true,
    )
    expect(challengeError('Basic realm="invalid_token"', ['bearer'], 'invalid_token')).toBe(false)
    expect(
      challengeError('Bearer error_description="invalid_token"', ['bearer'], 'invalid_token'),
    ).toBe(false)
    expect(challengeError('Bearer error="insufficient_scope"', ['bearer'], 'invalid_token')).toBe(
      false,
    )
    expect(challengeError(undefined, ['bearer'], 'invalid_token')).toBe(false)
  })
})
