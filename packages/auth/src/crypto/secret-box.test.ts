import { describe, expect, it } from 'vitest'
import { cryptoRandom } from '../random.js'
import { SecretBox } from './secret-box.js'

describe('SecretBox', () => {
  const box = new SecretBox('server-secret-0123456789-0123456789', 'test', cryptoRandom)

  it('seals to a value without the plaintext, and opens it for the same row', () => {
    const sealed = box.seal('client-secret-value', 'row-1')
    expect(sealed).toMatch(/^gh1:[\w-]+$/)
    expect(sealed).not.toContain('client-secret-value')
    expect(box.open(sealed, 'row-1')).toBe('client-secret-value')
    expect(box.seal('client-secret-value', 'row-1')).not.toBe(sealed)
  })

  it('refuses another row, another key, a changed value and a plain one', () => {
    const sealed = box.seal('s3cret', 'row-1')
    expect(() => box.open(sealed, 'row-2')).toThrow()
    expect(() =>
      new SecretBox('another-secret-0123456789-01234567', 'test', cryptoRandom).open(
        sealed,
        'row-1',
      ),
    ).toThrow()
    expect(() =>
      new SecretBox('server-secret-0123456789-0123456789', 'other', cryptoRandom).open(
        sealed,
        'row-1',
      ),
    ).toThrow()
    const flipped = sealed.slice(0, -2) + (sealed.endsWith('A') ? 'B' : 'A') + sealed.slice(-1)
    expect(() => box.open(flipped, 'row-1')).toThrow()
    expect(() => box.open('plain', 'row-1')).toThrow('not a sealed value')
  })
})
