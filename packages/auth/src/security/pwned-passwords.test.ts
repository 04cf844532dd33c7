import { describe, expect, it } from 'vitest'
import type { HibpSettings } from '../conf/settings.js'
import {
  MAX_RANGE_BYTES,
  PwnedHashCache,
  RangeApiPwnedPasswords,
  parseRange,
  pwnedPasswordHash,
  type PwnedPasswordsLog,
} from './pwned-passwords.js'

const SETTINGS: HibpSettings = {
  enabled: true,
  failClosed: false,
  userAgent: 'gatehouse-test',
  apiUrl: 'https://range.example/',
  timeoutMs: 1000,
  bloom: { enabled: false, items: 1000, falsePositives: 0.0001 },
}

// SHA-1("password") = 5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8
const PASSWORD_HASH = '5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8'

interface Call {
  readonly url: string
  readonly headers: Headers
}

function fakeFetch(answer: (url: string) => Response | Promise<Response>): {
  fetch: typeof fetch
  calls: Call[]
} {
  const calls: Call[] = []
  const impl = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url
    calls.push({ url, headers: new Headers(init?.headers) })
    return Promise.resolve(answer(url))
  }
  return { fetch: impl, calls }
}

function collectingLog(): PwnedPasswordsLog & { messages: string[] } {
  const messages: string[] = []
  return {
    messages,
    warn: (_fields, message) => {
      messages.push(message)
    },
  }
}

describe('parseRange', () => {
  it('keeps suffixes with a count, drops padding (count 0), accepts CRLF', () => {
    const body =
      'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA:0\r\nBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB:12\r\n'
    expect(parseRange(body)).toEqual(['BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB'])
  })

  it('refuses a line that is not SUFFIX:COUNT', () => {
    expect(() => parseRange('<html>blocked</html>')).toThrow(/SUFFIX:COUNT/)
    expect(() => parseRange('bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb:1')).toThrow()
  })
})

describe('RangeApiPwnedPasswords', () => {
  it('sends only the five-character prefix, with Add-Padding and the user agent', async () => {
    const { fetch, calls } = fakeFetch(
      () =>
        new Response(`${PASSWORD_HASH.slice(5)}:9545824\r\n0018A45C4D1DEF81644B54AB7F969B88D65:0`),
    )
    const checker = new RangeApiPwnedPasswords(SETTINGS, { fetch })
    expect(await checker.check('password')).toBe('pwned')
    expect(calls).toHaveLength(1)
    expect(calls[0]?.url).toBe('https://range.example/range/5BAA6')
    expect(calls[0]?.headers.get('add-padding')).toBe('true')
    expect(calls[0]?.headers.get('user-agent')).toBe('gatehouse-test')
    expect(pwnedPasswordHash('password')).toBe(PASSWORD_HASH)
  })

  it('answers not_pwned when the suffix is absent or only padding', async () => {
    const { fetch } = fakeFetch(() => new Response(`${PASSWORD_HASH.slice(5)}:0\r\n`))
    expect(await new RangeApiPwnedPasswords(SETTINGS, { fetch }).check('password')).toBe(
      'not_pwned',
    )
  })

  it('answers unknown and logs on HTTP errors, garbage and oversized answers', async () => {
    const answers = [
      () => new Response('oops', { status: 503 }),
      () => new Response('<html>'),
      () => new Response('A'.repeat(MAX_RANGE_BYTES + 1)),
      () => Promise.reject(new TypeError('fetch failed')),
    ]
    for (const answer of answers) {
      const log = collectingLog()
      const { fetch } = fakeFetch(answer)
      const checker = new RangeApiPwnedPasswords(SETTINGS, { fetch, log })
      expect(await checker.check('password')).toBe('unknown')
      expect(log.messages).toEqual([
        'Unable to perform password strength check with HaveIBeenPwned.org, pwned passwords are being allowed',
      ])
    }
  })

  it('gives up after the timeout', async () => {
    const fetch = ((_url: string, init?: RequestInit) =>
      new Promise((_resolve, reject) => {
        init?.signal?.addEventListener('abort', () => {
          reject(new Error('aborted'))
        })
      })) as typeof globalThis.fetch
    const checker = new RangeApiPwnedPasswords({ ...SETTINGS, timeoutMs: 20 }, { fetch })
    expect(await checker.check('password')).toBe('unknown')
  })

  it('shares one request between concurrent lookups of a prefix', async () => {
    const { fetch, calls } = fakeFetch(() => new Response(`${PASSWORD_HASH.slice(5)}:1`))
    const checker = new RangeApiPwnedPasswords(SETTINGS, { fetch })
    const verdicts = await Promise.all([checker.check('password'), checker.check('password')])
    expect(verdicts).toEqual(['pwned', 'pwned'])
    expect(calls).toHaveLength(1)
  })

  it('answers a known-pwned hash from the bloom cache without asking again', async () => {
    const { fetch, calls } = fakeFetch(() => new Response(`${PASSWORD_HASH.slice(5)}:1`))
    const checker = new RangeApiPwnedPasswords(
      { ...SETTINGS, bloom: { ...SETTINGS.bloom, enabled: true } },
      { fetch },
    )
    expect(await checker.check('password')).toBe('pwned')
    expect(await checker.check('password')).toBe('pwned')
    expect(calls).toHaveLength(1)
  })
})

describe('PwnedHashCache', () => {
  it('empties itself when 80 % full', () => {
    const cache = new PwnedHashCache(10, 0.001)
    const suffix = (i: number): string => i.toString(16).toUpperCase().padStart(35, '0')
    cache.add('AAAAA', [1, 2, 3, 4, 5, 6, 7, 8].map(suffix))
    expect(cache.has(`AAAAA${suffix(1)}`)).toBe(true)
    cache.add('BBBBB', [suffix(9)])
    expect(cache.has(`BBBBB${suffix(9)}`)).toBe(true)
    expect(cache.has(`AAAAA${suffix(1)}`)).toBe(false)
  })
})
