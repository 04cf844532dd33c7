import { Writable } from 'node:stream'
import { FakeClock } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '#internal/logger.js'
import { authJsClient } from '../support/auth-js.js'
import { startTestServer, type TestServer } from '../helpers.js'

/** A logger whose JSON lines are kept, and the audit events among them. */
function recordingLogger() {
  const lines: string[] = []
  const logger = createLogger(
    { level: 'info', file: '' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean))
        done()
      },
    }),
  )
  const events = (): Record<string, unknown>[] =>
    lines
      .map(
        (line) => JSON.parse(line) as { msg?: string; auth_audit_event?: Record<string, unknown> },
      )
      .filter((entry) => entry.msg === 'audit_event')
      .map((entry) => entry.auth_audit_event ?? {})
  return { logger, events }
}

/**
 * The audit trail (upstream `models.NewAuditLogEntry`): every event is logged as `audit_event`,
 * and written to `audit_log_entries` unless `AUDIT_LOG_DISABLE_POSTGRES` is on.
 */
describe.each([
  ['written and logged', 'false'],
  ['logged only (AUDIT_LOG_DISABLE_POSTGRES)', 'true'],
] as const)('audit events %s', (_label, disable) => {
  const log = recordingLogger()
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer(
      `audit_${disable}`,
      { AUTHSVC_AUDIT_LOG_DISABLE_POSTGRES: disable },
      new FakeClock(Date.now()),
      { deps: { logger: log.logger } },
    )
    await server.listen()
  })
  afterAll(async () => {
    await server.close()
  })

  it('records sign-up, sign-in, both events of a refresh and sign-out, in order', async () => {
    const auth = authJsClient(server.url)
    const email = 'audited@example.com'
    expect((await auth.signUp({ email, password: 'password-1234' })).error).toBeNull()
    const { data } = await auth.signInWithPassword({ email, password: 'password-1234' })
    expect(
      (await auth.refreshSession({ refresh_token: data.session?.refresh_token ?? '' })).error,
    ).toBeNull()
    expect((await auth.signOut()).error).toBeNull()
    // Each event is logged as it is recorded (the rotation's once its statement ran).
    await expect
      .poll(() => log.events().map((e) => e.action))
      .toEqual(['user_signedup', 'login', 'token_revoked', 'token_refreshed', 'logout'])
    const [signedUp] = log.events()
    expect(signedUp).toMatchObject({
      actor_username: email,
      actor_via_sso: false,
      log_type: 'team',
      ip_address: '127.0.0.1',
    })
    expect(typeof signedUp?.audit_log_id).toBe('string')
    expect(String(signedUp?.created_at)).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/)

    const { rows } = await server.app.db.query<{ id: string; action: string }>(
      `SELECT id::text, payload->>'action' AS action FROM ${server.app.db.t.auditLogEntries}
       ORDER BY created_at, payload->>'action' = 'token_refreshed'`,
    )
    if (disable === 'true') {
      expect(rows).toEqual([])
      const listed = await server.request('GET', '/admin/audit', { token: server.serviceKey })
      expect(listed.headers['x-total-count']).toBe('0')
    } else {
      // The same events, under the same ids as logged.
      expect(new Set(rows.map((r) => r.id))).toEqual(
        new Set(log.events().map((e) => e.audit_log_id)),
      )
    }
  })
})
