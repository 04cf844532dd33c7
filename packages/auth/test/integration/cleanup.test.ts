/**
 * The periodic clean-up of expired PKCE flow states, MFA challenges and OAuth authorization requests: a background job of the
 * app, with the injected clock, in bounded batches, stopped on close.
 *
 * @see issue 24, item 8
 */
import { randomUUID } from 'node:crypto'
import { FakeClock, waitFor } from '@gatehouse/testing'
import { type Queryable } from '@gatehouse/auth'
import { CleanupJob } from '#internal/services/cleanup.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../helpers.js'

const HOUR = 3_600_000

/** Inserts `count` flow states created at `at` (epoch ms). */
async function flowStates(db: Queryable, count: number, at: number): Promise<void> {
  await db.query(
    `INSERT INTO ${db.t.flowState} (id, auth_code, code_challenge_method, code_challenge,
       provider_type, authentication_method, created_at, updated_at)
     SELECT gen_random_uuid(), md5(random()::text), 's256', 'c', 'email', 'magiclink', $2, $2
     FROM generate_series(1, $1)`,
    [count, new Date(at)],
  )
}

/** Inserts `count` MFA challenges of a new factor, created at `at` (epoch ms). */
async function challenges(db: Queryable, count: number, at: number): Promise<void> {
  const user = randomUUID()
  const factor = randomUUID()
  await db.query(`INSERT INTO ${db.t.users} (id, aud, role, email) VALUES ($1, '', '', $2)`, [
    user,
    `${user}@example.com`,
  ])
  await db.query(
    `INSERT INTO ${db.t.mfaFactors} (id, user_id, factor_type, status, created_at, updated_at)
     VALUES ($1, $2, 'totp', 'verified', $3, $3)`,
    [factor, user, new Date(at)],
  )
  await db.query(
    `INSERT INTO ${db.t.mfaChallenges} (id, factor_id, created_at, ip_address)
     SELECT gen_random_uuid(), $1, $3, '127.0.0.1' FROM generate_series(1, $2)`,
    [factor, count, new Date(at)],
  )
}

/** Inserts OAuth authorization requests of a new client, one per `[status, expires_at]`. */
async function authorizations(
  db: Queryable,
  rows: readonly (readonly ['pending' | 'approved' | 'denied', number])[],
): Promise<void> {
  const client = randomUUID()
  await db.query(
    `INSERT INTO ${db.t.oauthClients} (id, registration_type, redirect_uris, grant_types,
       token_endpoint_auth_method) VALUES ($1, 'manual', 'https://rp.example/cb', 'authorization_code', 'none')`,
    [client],
  )
  for (const [status, expiresAt] of rows) {
    await db.query(
      `INSERT INTO ${db.t.oauthAuthorizations} (id, authorization_id, client_id, redirect_uri, scope,
         status, created_at, expires_at)
       VALUES (gen_random_uuid(), md5(random()::text), $1, 'https://rp.example/cb', 'email', $2, $3, $4)`,
      [client, status, new Date(expiresAt - 600_000), new Date(expiresAt)],
    )
  }
}

async function count(db: Queryable, table: string): Promise<number> {
  const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)
  return Number(rows[0]?.n)
}

describe('the clean-up of expired flow states and MFA challenges', () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1))
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer(
      'cleanup',
      {
        AUTHSVC_DB_CLEANUP_INTERVAL: '50ms',
        AUTHSVC_MAILER_OTP_EXP: '3600',
        AUTHSVC_EXTERNAL_FLOW_STATE_EXPIRY_DURATION: '300',
        AUTHSVC_MFA_CHALLENGE_EXPIRY_DURATION: '300',
      },
      clock,
    )
  })
  afterAll(async () => {
    await server.close()
  })

  it('runs in the background and deletes only what can no longer be used', async () => {
    const { db } = server.app
    const now = clock.now()
    // Flow states live for MAILER_OTP_EXP (1 h) plus the flow state expiry (5 min).
    await flowStates(db, 3, now - HOUR - 301_000)
    await flowStates(db, 2, now - HOUR - 299_000)
    // Challenges live for MFA_CHALLENGE_EXPIRY_DURATION (5 min).
    await challenges(db, 4, now - 301_000)
    await challenges(db, 1, now - 299_000)
    // WebAuthn challenges live until their expires_at.
    for (const expiresAt of [now - 1, now + 1_000]) {
      await db.query(
        `INSERT INTO ${db.t.webauthnChallenges} (id, challenge_type, session_data, created_at, expires_at)
         VALUES (gen_random_uuid(), 'authentication', '{}', $1, $1)`,
        [new Date(expiresAt)],
      )
    }
    // OAuth authorization requests (any status) are kept for a day after they expired.
    await authorizations(db, [
      ['pending', now - 24 * HOUR - 1],
      ['approved', now - 24 * HOUR - 1],
      ['denied', now - 24 * HOUR - 1],
      ['approved', now - 24 * HOUR + 1_000],
    ])
    await waitFor(async () => (await count(db, db.t.flowState)) === 2, {
      what: 'the background clean-up to delete the expired flow states',
    })
    await waitFor(async () => (await count(db, db.t.mfaChallenges)) === 1, {
      what: 'the background clean-up to delete the expired challenges',
    })
    await waitFor(async () => (await count(db, db.t.webauthnChallenges)) === 1, {
      what: 'the background clean-up to delete the expired WebAuthn challenges',
    })
    await waitFor(async () => (await count(db, db.t.oauthAuthorizations)) === 1, {
      what: 'the background clean-up to delete the expired OAuth authorization requests',
    })
    // Time passes (the injected clock): the rest expires too.
    clock.advance(2_000)
    await waitFor(
      async () =>
        (await count(db, db.t.flowState)) +
          (await count(db, db.t.mfaChallenges)) +
          (await count(db, db.t.webauthnChallenges)) +
          (await count(db, db.t.oauthAuthorizations)) ===
        0,
      { what: 'the background clean-up to delete the rest' },
    )
  })
})

describe('DB_CLEANUP_INTERVAL=0 and bounded batches', () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1))
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer('cleanup_off', { AUTHSVC_DB_CLEANUP_INTERVAL: '0' }, clock)
  })
  afterAll(async () => {
    await server.close()
  })

  it('deletes in bounded batches, leaving the rest for the next run', async () => {
    const { db } = server.app
    await flowStates(db, 25, clock.now() - 30 * HOUR)
    const job = new CleanupJob({
      db,
      clock,
      settings: server.settings,
      intervalMs: 0,
      batchSize: 10,
      maxBatchesPerRun: 2,
    })
    expect(await job.runOnce()).toEqual({
      flowStates: 20,
      mfaChallenges: 0,
      webauthnChallenges: 0,
      sessions: 0,
      oauthAuthorizations: 0,
    })
    expect(await count(db, db.t.flowState)).toBe(5)
    expect(await job.runOnce()).toEqual({
      flowStates: 5,
      mfaChallenges: 0,
      webauthnChallenges: 0,
      sessions: 0,
      oauthAuthorizations: 0,
    })
    await job.close()
  })

  it('runs only when asked when the interval is 0', async () => {
    const { db } = server.app
    await flowStates(db, 3, clock.now() - 30 * HOUR)
    expect(await count(db, db.t.flowState)).toBe(3)
    expect(await server.app.cleanup()).toEqual({
      flowStates: 3,
      mfaChallenges: 0,
      webauthnChallenges: 0,
      sessions: 0,
      oauthAuthorizations: 0,
    })
  })
})
