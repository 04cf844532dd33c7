import { describe, expect, it } from 'vitest'
import { loadSettings } from './conf/settings.js'
import { databaseFailureLine, listenFailureLine } from './serve.js'

const settings = loadSettings({
  AUTHSVC_SITE_URL: 'http://localhost:3000',
  AUTHSVC_API_EXTERNAL_URL: 'http://127.0.0.1:9999',
  AUTHSVC_JWT_SECRET: 'test-secret-with-at-least-32-characters!!',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'postgres://ann:s3cret@db:5432/auth',
  AUTHSVC_API_HOST: '10.1.2.3',
  PORT: '80',
})
const withCode = (code: string) => Object.assign(new Error(code), { code })

describe('listenFailureLine', () => {
  it('names the setting to change', () => {
    expect(listenFailureLine(settings, withCode('EADDRINUSE'))).toBe(
      'gatehouse-auth: PORT: 10.1.2.3:80 is already in use by another program; set PORT to a free port',
    )
    expect(listenFailureLine(settings, withCode('EACCES'))).toBe(
      'gatehouse-auth: PORT: not allowed to listen on 10.1.2.3:80 (ports below 1024 need privileges); set PORT to 1024 or above',
    )
    expect(listenFailureLine(settings, withCode('EADDRNOTAVAIL'))).toBe(
      'gatehouse-auth: API_HOST: 10.1.2.3 is not an address of this machine',
    )
  })
})

describe('databaseFailureLine', () => {
  it('masks the password and says how long a database that was down was tried', () => {
    expect(databaseFailureLine(settings, withCode('ETIMEDOUT'))).toBe(
      'gatehouse-auth: DATABASE_URL (postgres://ann:***@db:5432/auth): no answer from db:5432 (timed out); gave up after 30 s (DB_START_RETRY_SECONDS)',
    )
    expect(databaseFailureLine(settings, withCode('ENOTFOUND'))).toBe(
      'gatehouse-auth: DATABASE_URL (postgres://ann:***@db:5432/auth): unknown host "db"',
    )
  })
})
