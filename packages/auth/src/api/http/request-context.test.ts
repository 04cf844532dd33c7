import type { FastifyRequest } from 'fastify'
import { describe, expect, it } from 'vitest'
import { loadSettings } from '../../conf/settings.js'
import { clientKey } from './request-context.js'

const env = {
  AUTHSVC_SITE_URL: 'https://app.example.com',
  AUTHSVC_API_EXTERNAL_URL: 'https://auth.example.com',
  AUTHSVC_JWT_SECRET: 'a-secret-of-thirty-two-bytes-or-more',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'pglite://memory',
}

/** A request carrying only these headers (all `clientKey` reads). */
const request = (headers: Record<string, string>) =>
  ({ headers, ip: '10.9.9.9' }) as unknown as FastifyRequest

describe('clientKey', () => {
  /** @see issue 24, item 8: the first X-Forwarded-For value is the client's own choice. */
  it('takes the value the trusted proxy appended, not the one the client sent', () => {
    const settings = loadSettings({ ...env, AUTHSVC_RATE_LIMIT_HEADER: 'X-Forwarded-For' })
    expect(settings.rateLimit.trustedProxyHops).toBe(1)
    // The client sent "6.6.6.6"; the proxy appended the address it saw.
    expect(clientKey(request({ 'x-forwarded-for': '6.6.6.6, 203.0.113.9' }), settings)).toBe(
      '203.0.113.9',
    )
    // Whatever the client puts first, its key stays the proxy's.
    expect(
      clientKey(request({ 'x-forwarded-for': `${'x'.repeat(40)},203.0.113.9` }), settings),
    ).toBe('203.0.113.9')
    expect(clientKey(request({ 'x-forwarded-for': '203.0.113.9' }), settings)).toBe('203.0.113.9')
  })

  it('counts RATE_LIMIT_TRUSTED_PROXY_HOPS from the right, for the header and Svc-Forwarded-For', () => {
    const twoHops = loadSettings({
      ...env,
      AUTHSVC_RATE_LIMIT_HEADER: 'X-Forwarded-For',
      AUTHSVC_RATE_LIMIT_TRUSTED_PROXY_HOPS: '2',
    })
    const chain = { 'x-forwarded-for': 'spoofed, 198.51.100.1, 10.0.0.2' }
    expect(clientKey(request(chain), twoHops)).toBe('198.51.100.1')
    // Fewer values than hops: the request skipped the outer proxy; the first value is the
    // address the inner one saw.
    expect(clientKey(request({ 'x-forwarded-for': '198.51.100.1' }), twoHops)).toBe('198.51.100.1')
    const svc = loadSettings({ ...env, AUTHSVC_SECURITY_SVC_FORWARDED_FOR_ENABLED: 'true' })
    expect(clientKey(request({ 'svc-forwarded-for': 'spoofed, 198.51.100.7' }), svc)).toBe(
      '198.51.100.7',
    )
  })

  it('has no key without a configured header, or with an empty value', () => {
    const none = loadSettings(env)
    expect(clientKey(request({ 'x-forwarded-for': '203.0.113.9' }), none)).toBeUndefined()
    const settings = loadSettings({ ...env, AUTHSVC_RATE_LIMIT_HEADER: 'X-Real-IP' })
    expect(clientKey(request({}), settings)).toBeUndefined()
    expect(clientKey(request({ 'x-real-ip': ' , ' }), settings)).toBeUndefined()
  })

  it('refuses a hop count below 1', () => {
    expect(() => loadSettings({ ...env, AUTHSVC_RATE_LIMIT_TRUSTED_PROXY_HOPS: '0' })).toThrow(
      /RATE_LIMIT_TRUSTED_PROXY_HOPS/,
    )
  })
})
