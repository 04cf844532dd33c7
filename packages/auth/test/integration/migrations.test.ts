import { createTestSchema, type TestDatabase } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrate, openDb } from '@gatehouse/auth'
import { readMigrations } from '#internal/storage/migrate.js'

describe('migrations', () => {
  let schema: TestDatabase

  beforeAll(async () => {
    schema = await createTestSchema('auth_migrations')
  })
  afterAll(async () => {
    await schema.drop()
  })

  it('several instances starting together apply each migration exactly once', async () => {
    const versions = (await readMigrations()).map((m) => m.version)
    const dbs = await Promise.all(Array.from({ length: 4 }, () => openDb(schema.url, '', 2)))
    try {
      const results = await Promise.all(dbs.map((db) => migrate(db)))
      expect(results.flat().sort()).toEqual(versions)
      expect(results.filter((applied) => applied.length > 0)).toHaveLength(1)
      expect(await migrate(dbs[0]!)).toEqual([])
      const { rows } = await dbs[0]!.query<{ version: string }>(
        'SELECT version FROM schema_migrations',
      )
      expect(rows.map((r) => r.version)).toEqual(versions)
    } finally {
      await Promise.all(dbs.map((db) => db.close()))
    }
  })

  it('creates upstream tables and columns, prefixed by DB_NAMESPACE', async () => {
    const db = await openDb(schema.url, 'gh', 0)
    try {
      await migrate(db)
      const { rows } = await db.query<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables
         WHERE table_schema = current_schema() AND table_name LIKE 'gh\\_%' ORDER BY table_name`,
      )
      expect(rows.map((r) => r.table_name)).toEqual([
        'gh_audit_log_entries',
        'gh_custom_oauth_providers',
        'gh_failed_attempts',
        'gh_flow_state',
        'gh_identities',
        'gh_mail_queue',
        'gh_mfa_amr_claims',
        'gh_mfa_challenges',
        'gh_mfa_factors',
        'gh_mfa_recovery_code_sets',
        'gh_mfa_recovery_codes',
        'gh_oauth_authorizations',
        'gh_oauth_clients',
        'gh_oauth_consents',
        'gh_one_time_tokens',
        'gh_refresh_tokens',
        'gh_saml_providers',
        'gh_saml_relay_states',
        'gh_saml_used_assertions',
        'gh_schema_migrations',
        'gh_sessions',
        'gh_sso_domains',
        'gh_sso_providers',
        'gh_users',
        'gh_webauthn_challenges',
        'gh_webauthn_credentials',
      ])
      const columns = await db.query<{ column_name: string }>(
        `SELECT column_name FROM information_schema.columns
         WHERE table_schema = current_schema() AND table_name = 'gh_users'`,
      )
      expect(columns.rows.map((c) => c.column_name)).toEqual(
        expect.arrayContaining([
          'instance_id',
          'encrypted_password',
          'raw_app_meta_data',
          'raw_user_meta_data',
          'confirmed_at',
          'banned_until',
          'is_sso_user',
          'is_anonymous',
        ]),
      )
    } finally {
      await db.close()
    }
  })
})
