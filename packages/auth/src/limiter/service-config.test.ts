import { readFileSync } from 'node:fs'
import { RateLimitConfig, StatsManager, StatsStore } from '@gatehouse/ratelimit'
import { describe, expect, it } from 'vitest'
import { loadSettings } from '../conf/settings.js'
import { rateLimitServiceConfig } from './service-config.js'

const REQUIRED = {
  AUTHSVC_SITE_URL: 'http://localhost:3000',
  AUTHSVC_API_EXTERNAL_URL: 'http://localhost:9999',
  AUTHSVC_JWT_SECRET: 'a-secret-of-thirty-two-bytes-or-more',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'postgres://localhost/db',
}

const EXAMPLE = new URL('../../examples/ratelimit-gatehouse-auth.yaml', import.meta.url)

function load(yaml: string): RateLimitConfig {
  return RateLimitConfig.load([{ name: 'auth.yaml', content: yaml }], {
    stats: new StatsManager(new StatsStore()),
  })
}

const entries = (...pairs: [string, string][]) => ({
  entries: pairs.map(([key, value]) => ({ key, value })),
})

describe('rateLimitServiceConfig', () => {
  it('is the shipped example for the default settings', () => {
    expect(rateLimitServiceConfig(loadSettings(REQUIRED))).toBe(readFileSync(EXAMPLE, 'utf8'))
  })

  it('loads in the rate limit service with the settings’ windows', () => {
    const config = load(
      rateLimitServiceConfig(
        loadSettings({
          ...REQUIRED,
          AUTHSVC_RATE_LIMIT_DOMAIN: 'auth-eu',
          AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: '60',
          AUTHSVC_RATE_LIMIT_EMAIL_SENT: '10/5m',
        }),
      ),
    )
    const limit = (d: ReturnType<typeof entries>) => {
      const found = config.getLimit('auth-eu', d)
      return found && { unit: found.unit, requestsPerUnit: found.requestsPerUnit }
    }
    expect(limit(entries(['operation', 'token'], ['client', '203.0.113.9']))).toEqual({
      unit: 'MINUTE',
      requestsPerUnit: 30,
    })
    expect(
      limit(entries(['operation', 'token'], ['client', '203.0.113.9'], ['window', 'hour'])),
    ).toEqual({ unit: 'HOUR', requestsPerUnit: 720 })
    expect(
      limit(entries(['operation', 'factor_verify'], ['client', 'x'], ['window', 'hour'])),
    ).toEqual({ unit: 'HOUR', requestsPerUnit: 900 })
    expect(limit(entries(['operation', 'email_sent']))).toEqual({
      unit: 'MINUTE',
      requestsPerUnit: 2,
    })
    expect(limit(entries(['operation', 'sms_sent']))).toEqual({ unit: 'HOUR', requestsPerUnit: 30 })
  })
})
