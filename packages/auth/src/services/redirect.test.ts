import { describe, expect, it } from 'vitest'
import { loadSettings } from '../conf/settings.js'
import { isRedirectUrlValid } from './redirect.js'

const settings = loadSettings({
  AUTHSVC_SITE_URL: 'https://app.example.com',
  AUTHSVC_API_EXTERNAL_URL: 'https://auth.example.com',
  AUTHSVC_JWT_SECRET: 'a-secret-of-thirty-two-bytes-or-more',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'pglite://memory',
  AUTHSVC_URI_ALLOW_LIST: 'https://*.preview.example.com/**,http://localhost:3000/cb',
})

describe('isRedirectUrlValid', () => {
  it.each([
    ['https://app.example.com/welcome', true],
    ['http://app.example.com/welcome', false],
    ['https://evil.example/app.example.com', false],
    ['https://pr-1.preview.example.com/a/b', true],
    ['https://a.b.preview.example.com/', false],
    ['http://localhost:3000/cb', true],
    ['http://localhost:3000/cb#frag', true],
    ['', false],
  ])('%s → %s', (url, valid) => {
    expect(isRedirectUrlValid(settings, url)).toBe(valid)
  })
})
