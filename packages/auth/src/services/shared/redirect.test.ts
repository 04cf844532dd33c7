import { describe, expect, it } from 'vitest'
import { loadSettings } from '../../conf/settings.js'
import { isRedirectUrlValid, pickRedirectTo } from './redirect.js'

const env = {
  AUTHSVC_SITE_URL: 'https://app.example.com',
  AUTHSVC_API_EXTERNAL_URL: 'https://auth.example.com',
  AUTHSVC_JWT_SECRET: 'a-secret-of-thirty-two-bytes-or-more',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'pglite://memory',
}
const settings = loadSettings({
  ...env,
  AUTHSVC_URI_ALLOW_LIST: 'https://*.preview.example.com/**,http://localhost:3000/cb',
})

describe('isRedirectUrlValid', () => {
  it.each([
    ['https://app.example.com/welcome', true],
    ['https://app.example.com:8443/welcome', false],
    ['http://app.example.com/welcome', false],
    ['https://evil.example/app.example.com', false],
    ['https://pr-1.preview.example.com/a/b', true],
    ['https://a.b.preview.example.com/', false],
    ['http://localhost:3000/cb', true],
    ['http://localhost:3000/cb#frag', true],
    ['http://localhost:3000/cb/x', false],
    ['not a url', false],
    ['', false],
  ])('%s → %s', (url, valid) => {
    expect(isRedirectUrlValid(settings, url)).toBe(valid)
  })

  it('ignores the port of a loopback SITE_URL', () => {
    const local = loadSettings({ ...env, AUTHSVC_SITE_URL: 'http://localhost:3000' })
    expect(isRedirectUrlValid(local, 'http://localhost:5173/app')).toBe(true)
    expect(isRedirectUrlValid(local, 'https://localhost:5173/app')).toBe(false)
  })

  /** @see issue 24, item 8: loopback literals were accepted whatever the settings said. */
  it('accepts a loopback IP literal only when SITE_URL is loopback or URI_ALLOW_LIST names it', () => {
    for (const url of [
      'http://127.0.0.1:8080/cb',
      'http://127.8.9.10/cb',
      'https://[::1]:4443/cb',
      'http://[::ffff:127.0.0.1]/cb',
    ]) {
      expect(isRedirectUrlValid(settings, url)).toBe(false)
    }
    const listed = loadSettings({ ...env, AUTHSVC_URI_ALLOW_LIST: 'http://127.0.0.1:9999/**' })
    expect(isRedirectUrlValid(listed, 'http://127.0.0.1:9999/native/cb')).toBe(true)
    expect(isRedirectUrlValid(listed, 'http://127.0.0.1:9998/native/cb')).toBe(false)
    for (const site of ['http://localhost:3000', 'http://127.0.0.1:3000', 'http://[::1]:3000']) {
      const local = loadSettings({ ...env, AUTHSVC_SITE_URL: site })
      expect(isRedirectUrlValid(local, 'http://127.0.0.1:5555/cb')).toBe(true)
      expect(isRedirectUrlValid(local, 'http://[::1]:5555/cb')).toBe(true)
      // Never another address, loopback SITE_URL or not.
      expect(isRedirectUrlValid(local, 'http://10.0.0.1:5555/cb')).toBe(false)
    }
  })

  // Upstream's TestGetReferrer (internal/utilities/request_test.go): SITE_URL
  // https://example.com and four allow-list globs.
  const upstream = loadSettings({
    ...env,
    AUTHSVC_SITE_URL: 'https://example.com',
    AUTHSVC_URI_ALLOW_LIST:
      'http://localhost:8000/*,http://*.localhost:8000/*,http://*:12345/*,http://**:12345/*',
  })
  it.each([
    ['valid redirect url', 'http://localhost:8000/path', true],
    ['invalid redirect url', 'http://localhost:3000', false],
    ['no / separator', 'http://localhost:8000', false],
    ['* respects separator', 'http://localhost:8000/path/to/page', false],
    ['* respects parameters', 'http://localhost:8000/path?param=1', true],
    ['decimal IP address', 'http://123?.localhost:8000/path', false],
    ['IPv4 address', 'http://123.123.123.123?localhost:8000/path', false],
    ['IPv6 address', 'http://[65e7:9410:d8b6:e227:58cd:e55b:8fc0:206d]?localhost:8000/path', false],
    ['bad URL', 'http://65e7:9410:d8b6:e227:58cd:e55b:8fc0:206d?localhost:8000/path', false],
    ['loopback IPv4 address', 'http://127.0.0.1:12345/path', true],
    ['loopback IPv6 address', 'http://[0:0:0:0:0:0:0:1]:12345/path', true],
    // Ours: the other spellings of an address that browsers accept.
    ['decimal loopback', 'http://2130706433:12345/path', false],
    ['hexadecimal loopback', 'http://0x7f.1:12345/path', false],
    ['unusual host characters', 'http://a_b.localhost:8000/x', false],
  ])('upstream case "%s": %s → %s', (_desc, url, valid) => {
    expect(isRedirectUrlValid(upstream, url)).toBe(valid)
  })
})

describe('pickRedirectTo', () => {
  const none = { header: '', body: '', query: '', referer: '' }
  it('takes the header, then the body, then the query', () => {
    const a = 'https://app.example.com/a'
    const b = 'https://app.example.com/b'
    const c = 'https://app.example.com/c'
    expect(pickRedirectTo(settings, { ...none, header: a, body: b, query: c })).toBe(a)
    expect(pickRedirectTo(settings, { ...none, body: b, query: c })).toBe(b)
    expect(pickRedirectTo(settings, { ...none, query: c })).toBe(c)
  })

  it('falls back to an allowed Referer, then to SITE_URL', () => {
    const referer = 'https://app.example.com/from'
    expect(pickRedirectTo(settings, { ...none, header: 'https://evil.io', referer })).toBe(referer)
    expect(pickRedirectTo(settings, { ...none, referer })).toBe(referer)
    expect(
      pickRedirectTo(settings, { ...none, query: 'https://evil.io', referer: 'https://evil.io' }),
    ).toBe('https://app.example.com')
    expect(pickRedirectTo(settings, none)).toBe('https://app.example.com')
  })

  it('does not look past a present but refused header to the body', () => {
    expect(
      pickRedirectTo(settings, {
        ...none,
        header: 'https://evil.io',
        body: 'https://app.example.com/b',
      }),
    ).toBe('https://app.example.com')
  })
})
