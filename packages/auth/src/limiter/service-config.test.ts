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
const FIXED_WINDOW_EXAMPLE = new URL(
  '../../examples/ratelimit-gatehouse-auth-fixed-window.yaml',
  import.meta.url,
)
const FIXED_WINDOW = { AUTHSVC_RATE_LIMIT_SERVICE_ALGORITHM: 'fixed_window' }

function load(yaml: string): RateLimitConfig {
  return RateLimitConfig.load([{ name: 'auth.yaml', content: yaml }], {
    stats: new StatsManager(new StatsStore()),
  })
}

const entries = (...pairs: [string, string][]) => ({
  entries: pairs.map(([key, value]) => ({ key, value })),
})

describe('rateLimitServiceConfig', () => {
  it('is the shipped example for the default settings, for either algorithm', () => {
    expect(rateLimitServiceConfig(loadSettings(REQUIRED))).toBe(readFileSync(EXAMPLE, 'utf8'))
    expect(rateLimitServiceConfig(loadSettings({ ...REQUIRED, ...FIXED_WINDOW }))).toBe(
      readFileSync(FIXED_WINDOW_EXAMPLE, 'utf8'),
    )
  })

  it('loads in the rate limit service with the settings’ token buckets', () => {
    const config = load(
      rateLimitServiceConfig(
        loadSettings({
          ...REQUIRED,
          AUTHSVC_RATE_LIMIT_DOMAIN: 'auth-eu',
          AUTHSVC_RATE_LIMIT_TOKEN_REFRESH: '60',
          AUTHSVC_RATE_LIMIT_VERIFY: '7',
          AUTHSVC_RATE_LIMIT_ANONYMOUS_USERS: '0',
        }),
      ),
    )
    const limit = (d: ReturnType<typeof entries>) => {
      const found = config.getLimit('auth-eu', d)
      return (
        found && {
          unit: found.unit,
          requestsPerUnit: found.requestsPerUnit,
          algorithm: found.algorithm,
          burst: found.burst,
        }
      )
    }
    const client = ['client', '203.0.113.9'] as [string, string]
    // 60 per 5 minutes: 12 a minute; 7 per 5 minutes is whole only per hour (84).
    expect(limit(entries(['operation', 'token'], client))).toEqual({
      unit: 'MINUTE',
      requestsPerUnit: 12,
      algorithm: 'token_bucket',
      burst: 30,
    })
    expect(limit(entries(['operation', 'verify'], client))).toEqual({
      unit: 'HOUR',
      requestsPerUnit: 84,
      algorithm: 'token_bucket',
      burst: 30,
    })
    // No anonymous sign-in allowed at all: a window of 0, which refuses every request.
    expect(limit(entries(['operation', 'anonymous_signin'], client))).toEqual({
      unit: 'MINUTE',
      requestsPerUnit: 0,
      algorithm: 'fixed_window',
      burst: 0,
    })
    // Only the two entries have a rule: the fixed window's hourly descriptor is unknown.
    expect(limit(entries(['operation', 'token'], client, ['window', 'hour']))).toBeUndefined()
  })

  it('loads in the rate limit service with the settings’ fixed windows', () => {
    const config = load(
      rateLimitServiceConfig(
        loadSettings({
          ...REQUIRED,
          ...FIXED_WINDOW,
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
