import { describe, expect, it } from 'vitest'
import { PlanError, stackPlan } from './plan.js'

const root = '/repo'

describe('stackPlan', () => {
  it('runs on the embedded defaults: PGlite in .data, mailed links through the gateway', () => {
    const plan = stackPlan({}, root)
    expect(plan.dataDir).toBe('/repo/.data')
    expect(plan.auth.env).toMatchObject({
      AUTHSVC_DB_DATABASE_URL: 'pglite://.data/auth',
      AUTHSVC_API_PORT: '9999',
      AUTHSVC_SITE_URL: 'http://127.0.0.1:54321/',
      AUTHSVC_API_EXTERNAL_URL: 'http://127.0.0.1:54321/auth/v1',
      AUTHSVC_MAILER_URLPATHS_CONFIRMATION: '/auth/v1/verify',
      AUTHSVC_MAILER_URLPATHS_RECOVERY: '/auth/v1/verify',
      AUTHSVC_SMTP_PORT: '54325',
      AUTHSVC_RATE_LIMIT_SERVICE_ADDRESS: '127.0.0.1:8081',
      OTEL_EXPORTER_PROMETHEUS_PORT: '9100',
    })
    expect(plan.ratelimit.env).toMatchObject({
      PORT: '8080',
      GRPC_PORT: '8081',
      RUNTIME_ROOT: '.data/ratelimit',
      LOG_FORMAT: 'json',
    })
    expect(plan.ratelimit.configDir).toBe('/repo/.data/ratelimit/config')
    expect(plan.auth.embeddedDatabaseDir).toBe('/repo/.data/auth')
    expect(plan.developmentSecret).toBe(true)
    expect(plan.ports.map((p) => [p.port, p.variable])).toEqual([
      [54321, 'GATEHOUSE_API_PORT'],
      [54324, 'GATEHOUSE_INBOX_PORT'],
      [54325, 'GATEHOUSE_INBOX_SMTP_PORT'],
      [9999, 'AUTHSVC_API_PORT'],
      [9100, 'AUTHSVC_OTEL_EXPORTER_PROMETHEUS_PORT'],
      [8080, 'RATELIMIT_PORT'],
      [8081, 'RATELIMIT_GRPC_PORT'],
      [6070, 'RATELIMIT_DEBUG_PORT'],
      [9090, 'RATELIMIT_PROMETHEUS_ADDR'],
    ])
  })

  it('lets the environment win: AUTHSVC_* and GOTRUE_* for auth, RATELIMIT_<NAME> for the rate limit service', () => {
    const plan = stackPlan(
      {
        GOTRUE_API_PORT: '7999',
        AUTHSVC_SITE_URL: 'http://localhost:3000',
        AUTHSVC_JWT_SECRET: 'mine',
        AUTHSVC_API_EXTERNAL_URL: 'http://127.0.0.1:7999',
        RATELIMIT_GRPC_PORT: '8181',
        RATELIMIT_BACKEND_TYPE: 'redis',
        GATEHOUSE_API_PORT: '6000',
        GATEHOUSE_DATA_DIR: '/tmp/stack',
        // Unprefixed names are ambiguous between the servers: npm start's defaults win.
        PORT: '3000',
        DATABASE_URL: 'postgres://someone-else/db',
      },
      root,
    )
    // Set by the user: npm start does not set them (the child gets the user's own variables).
    expect(plan.auth.env).not.toHaveProperty('AUTHSVC_API_PORT')
    expect(plan.auth.env).not.toHaveProperty('AUTHSVC_SITE_URL')
    expect(plan.auth.env).not.toHaveProperty('AUTHSVC_JWT_SECRET')
    expect(plan.developmentSecret).toBe(false)
    expect(plan.auth.env).toMatchObject({
      AUTHSVC_MAILER_URLPATHS_INVITE: '/verify',
      AUTHSVC_RATE_LIMIT_SERVICE_ADDRESS: '127.0.0.1:8181',
      AUTHSVC_DB_DATABASE_URL: 'pglite:///tmp/stack/auth',
    })
    expect(plan.auth.healthUrl).toBe('http://127.0.0.1:7999/health')
    expect(plan.gateway.authUrl).toBe('http://127.0.0.1:7999')
    expect(plan.ratelimit.env).toMatchObject({
      GRPC_PORT: '8181',
      BACKEND_TYPE: 'redis',
      PORT: '8080',
      RUNTIME_ROOT: '/tmp/stack/ratelimit',
    })
    expect(plan.ports.find((p) => p.what === 'auth API')).toMatchObject({
      port: 7999,
      variable: 'GOTRUE_API_PORT',
    })
    expect(plan.endpoints.find((e) => e.label === 'SITE_URL')?.value).toBe('http://localhost:3000')
    expect(plan.endpoints.find((e) => e.label === 'Supabase URL')?.value).toBe(
      'http://127.0.0.1:6000',
    )
  })

  it('leaves out the metrics ports that are switched off', () => {
    const plan = stackPlan(
      { AUTHSVC_METRICS_ENABLED: 'false', RATELIMIT_USE_PROMETHEUS: 'false' },
      root,
    )
    expect(plan.ports.map((p) => p.what)).not.toContain('auth metrics')
    expect(plan.ports.map((p) => p.what)).not.toContain('rate limit metrics')
  })

  it('lists every variable it cannot use, and two servers on one port', () => {
    let error: unknown
    try {
      stackPlan(
        {
          GATEHOUSE_INBOX_PORT: 'abc',
          RATELIMIT_PORT: '70000',
          AUTHSVC_METRICS_ENABLED: 'maybe',
          RATELIMIT_DEBUG_PORT: '9999',
        },
        root,
      )
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(PlanError)
    expect((error as PlanError).problems).toEqual([
      'GATEHOUSE_INBOX_PORT: must be a port number from 1 to 65535 (got "abc")',
      'RATELIMIT_PORT: must be a port number from 1 to 65535 (got "70000")',
      'AUTHSVC_METRICS_ENABLED: must be true or false (got "maybe")',
      'RATELIMIT_DEBUG_PORT: the rate limit debug would listen on port 9999, as the auth API (AUTHSVC_API_PORT) does; set one of them to another port',
    ])
  })
})
