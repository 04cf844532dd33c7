import { describe, expect, it } from 'vitest'
import { SnakyHash, snakeCase } from './snaky-hash.js'

describe('snakeCase', () => {
  it.each([
    ['accessToken', 'access_token'],
    ['access_token', 'access_token'],
    ['ExpiresIn', 'expires_in'],
    ['HTTPResponse', 'http_response'],
    ['Expires-In', 'expires_in'],
    [' token type ', 'token_type'],
    ['a__b', 'a_b'],
    ['Foo::Bar', 'foo/bar'],
    ['id2Token', 'id2_token'],
  ])('converts %j to %j', (input, output) => {
    expect(snakeCase(input)).toBe(output)
  })
})

describe('SnakyHash', () => {
  it('snake-cases keys recursively, including objects inside arrays, and keeps values', () => {
    const hash = new SnakyHash({
      accessToken: 'AbC',
      userInfo: { firstName: 'Ann', roles: [{ roleName: 'Admin' }, 'plain'] },
    })
    expect(hash.access_token).toBe('AbC')
    const info = hash.user_info as SnakyHash
    expect(info).toBeInstanceOf(SnakyHash)
    expect(info.first_name).toBe('Ann')
    expect((info.roles as unknown[])[0]).toEqual(new SnakyHash({ role_name: 'Admin' }))
    expect((info.roles as unknown[])[1]).toBe('plain')
  })

  it('gives indifferent access through get() and has()', () => {
    const hash = new SnakyHash({ expiresIn: 3600 })
    expect(hash.get('expiresIn')).toBe(3600)
    expect(hash.get('expires_in')).toBe(3600)
    expect(hash.has('Expires-In')).toBe(true)
    expect(hash.has('missing')).toBe(false)
  })

  it('keeps a __proto__ key as data (squeezed to _proto_) instead of changing the prototype', () => {
    const hash = new SnakyHash(
      JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>,
    )
    expect(Object.getPrototypeOf(hash)).toBe(SnakyHash.prototype)
    expect(hash._proto_).toEqual(new SnakyHash({ polluted: true }))
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('toObject() returns plain objects', () => {
    const plain = new SnakyHash({ a: { bC: 1 } }).toObject()
    expect(Object.getPrototypeOf(plain)).toBe(Object.prototype)
    expect(plain).toEqual({ a: { b_c: 1 } })
  })

  it('dump/load round-trip through JSON', () => {
    const hash = new SnakyHash({ accessToken: 'x', nested: { expiresIn: 5 } })
    const text = SnakyHash.dump(hash)
    expect(JSON.parse(text)).toEqual({ access_token: 'x', nested: { expires_in: 5 } })
    const loaded = SnakyHash.load(text)
    expect(loaded).toBeInstanceOf(SnakyHash)
    expect(loaded).toEqual(hash)
    expect(SnakyHash.load('')).toEqual(new SnakyHash())
    expect(SnakyHash.load(null)).toEqual(new SnakyHash())
  })

  it('runs value and hash hooks of a subclass on dump and load', () => {
    class Sealed extends SnakyHash {
      static override dumpValue(value: unknown): unknown {
        return typeof value === 'string' ? `sealed:${value}` : value
      }
      static override loadValue(value: unknown): unknown {
        return typeof value === 'string' ? value.replace(/^sealed:/, '') : value
      }
      static override dumpHash(hash: Record<string, unknown>): Record<string, unknown> {
        return { ...hash, v: 1 }
      }
      static override loadHash(hash: Record<string, unknown>): Record<string, unknown> {
        const { v: _v, ...rest } = hash
        return rest
      }
    }
    const text = Sealed.dump({ token: 'abc', inner: { code: 'x', n: 2 } })
    expect(JSON.parse(text)).toEqual({
      token: 'sealed:abc',
      inner: { code: 'sealed:x', n: 2, v: 1 },
      v: 1,
    })
    const loaded = Sealed.load(text)
    expect(loaded).toBeInstanceOf(Sealed)
    expect(loaded.toObject()).toEqual({ token: 'abc', inner: { code: 'x', n: 2 } })
    expect(loaded.inner).toBeInstanceOf(Sealed)
  })

  it('load rejects JSON that is not an object', () => {
    expect(() => SnakyHash.load('[1]')).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }),
    )
    expect(() => SnakyHash.load('{')).toThrow(SyntaxError)
  })
})
