/**
 * `gatehouse-auth admin …` and `gatehouse-auth keys` run as a user runs them, against a server's
 * database (issue 25 item 8: upstream's admin commands, and a lost development key one command
 * away).
 */
import { fileURLToPath } from 'node:url'
import {
  createTestSchema,
  runProcess,
  sourceEntryArgs,
  type ProcessResult,
  type TestDatabase,
} from '@gatehouse/testing'
import { jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiKeys } from '@gatehouse/auth'
import { runCli, type CliIo } from '#internal/cli.js'
import { startTestServer, TEST_JWT_SECRET, testEnv, type TestServer } from '../helpers.js'
import { startFakeRangeApi } from '../support/fake-range-api.js'

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url))
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/

let server: TestServer

/** The test server's settings (no mail confirmation). */
function settingsEnv(env: Record<string, string> = {}): Record<string, string> {
  return { ...testEnv(server.database.url, { AUTHSVC_MAILER_AUTOCONFIRM: 'false' }), ...env }
}

/** Runs the `gatehouse-auth` executable with the test server's settings. */
function auth(args: readonly string[], env: Record<string, string> = {}): Promise<ProcessResult> {
  return runProcess(process.execPath, [...sourceEntryArgs(MAIN), ...args], {
    env: { PATH: process.env.PATH ?? '', ...settingsEnv(env) },
  })
}

/**
 * Runs the same command in this process (`runCli`, what the executable runs), for the variants
 * of a case already run as a process: the result as {@link auth} gives it.
 */
async function authHere(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<ProcessResult> {
  const out: string[] = []
  const err: string[] = []
  const io: CliIo = {
    out: (l) => out.push(`${l}\n`),
    err: (l) => err.push(`${l}\n`),
    onSignal: () => {},
  }
  const code = await runCli(args, settingsEnv(env), io)
  return { code, stdout: out.join(''), stderr: err.join('') }
}

interface UserRow {
  id: string
  aud: string
  role: string
  email_confirmed_at: Date | null
}

async function userRow(email: string): Promise<UserRow | undefined> {
  const { rows } = await server.app.db.query<UserRow>(
    'SELECT id, aud, role, email_confirmed_at FROM users WHERE email = $1',
    [email],
  )
  return rows[0]
}

async function signIn(email: string, password: string): Promise<number> {
  const res = await server.request('POST', '/token?grant_type=password', {
    body: { email, password },
  })
  return res.statusCode
}

beforeAll(async () => {
  server = await startTestServer('admin_cli', { AUTHSVC_MAILER_AUTOCONFIRM: 'false' })
})
afterAll(async () => {
  await server.close()
})

describe('gatehouse-auth admin (upstream cmd/admin_cmd.go)', () => {
  it('createuser --confirm creates a user who can sign in at once', async () => {
    const result = await auth([
      'admin',
      'createuser',
      'alice@example.com',
      'correct horse battery',
      '--confirm',
    ])
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' })
    const row = await userRow('alice@example.com')
    expect(result.stdout).toBe(
      `created user alice@example.com (id ${row?.id ?? ''}), role authenticated, confirmed\n`,
    )
    expect(row).toMatchObject({ aud: 'authenticated', role: 'authenticated' })
    expect(row?.email_confirmed_at).toBeInstanceOf(Date)
    expect(await signIn('alice@example.com', 'correct horse battery')).toBe(200)
    // The admin API's audit entry, naming the command as its actor.
    const { rows } = await server.app.db.query<{ payload: Record<string, unknown> }>(
      "SELECT payload FROM audit_log_entries WHERE payload->>'action' = 'user_signedup' AND payload->'traits'->>'user_email' = $1",
      ['alice@example.com'],
    )
    expect(rows[0]?.payload).toMatchObject({ actor_username: 'gatehouse-auth admin' })
  })

  it('createuser without --confirm leaves the email unconfirmed, as upstream', async () => {
    const result = await authHere(['admin', 'createuser', 'carol@example.com', 'another password'])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/, role authenticated, not confirmed\n$/)
    expect((await userRow('carol@example.com'))?.email_confirmed_at).toBeNull()
  })

  it('createuser refuses a leaked password when PASSWORD_HIBP_ENABLED, as the admin API does', async () => {
    const fake = await startFakeRangeApi()
    try {
      fake.addPwned('password1234')
      const env = {
        AUTHSVC_PASSWORD_HIBP_ENABLED: 'true',
        AUTHSVC_PASSWORD_HIBP_API_URL: fake.url,
      }
      const leaked = await authHere(
        ['admin', 'createuser', 'dave@example.com', 'password1234'],
        env,
      )
      expect(leaked.code).toBe(1)
      expect(leaked.stderr).toBe(
        'gatehouse-auth: admin createuser: Password is known to be weak and easy to guess, please choose a different one.\n',
      )
      expect(await userRow('dave@example.com')).toBeUndefined()
      const fine = await authHere(['admin', 'createuser', 'dave@example.com', 'a safe one 42'], env)
      expect(fine.code).toBe(0)
      expect(fake.requests.length).toBe(2)
    } finally {
      await fake.close()
    }
  })

  it('createuser --admin --aud gives the JWT_ADMIN_GROUP_NAME role in that audience', async () => {
    const result = await authHere([
      'admin',
      'createuser',
      'bob@example.com',
      'bob password',
      '--admin',
      '-a',
      'staff',
    ])
    expect(result.code).toBe(0)
    expect(await userRow('bob@example.com')).toMatchObject({ aud: 'staff', role: 'admin' })
  })

  it('refuses a taken email with the admin API message, exit 1', async () => {
    expect(await auth(['admin', 'createuser', 'alice@example.com', 'x'])).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'gatehouse-auth: admin createuser: A user with this email address has already been registered\n',
    })
  })

  it('editrole changes the role of a user named by email', async () => {
    const result = await auth(['admin', 'editrole', 'alice@example.com', 'support'])
    const row = await userRow('alice@example.com')
    expect(result).toEqual({
      code: 0,
      stdout: `user alice@example.com (id ${row?.id ?? ''}) now has role support\n`,
      stderr: '',
    })
    expect(row?.role).toBe('support')
  })

  it('deleteuser deletes a user named by id; then the user is not found, exit 1', async () => {
    const row = await userRow('carol@example.com')
    const id = row?.id ?? ''
    expect(id).toMatch(UUID)
    expect(await auth(['admin', 'deleteuser', id])).toEqual({
      code: 0,
      stdout: `deleted user carol@example.com (id ${id})\n`,
      stderr: '',
    })
    expect(await userRow('carol@example.com')).toBeUndefined()
    expect(await authHere(['admin', 'deleteuser', 'carol@example.com'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'gatehouse-auth: admin deleteuser: User not found\n',
    })
  })

  it('refuses a command line missing its arguments with upstream text, exit 2', async () => {
    expect(await authHere(['admin', 'createuser', 'dave@example.com'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'gatehouse-auth: Not enough arguments to createuser command. Expected at least email and password values (see gatehouse-auth --help)\n',
    })
  })

  describe('on a database that was never migrated', () => {
    let fresh: TestDatabase
    beforeAll(async () => {
      fresh = await createTestSchema('auth_admin_cli_fresh')
    })
    afterAll(async () => {
      await fresh.drop()
    })

    it('changes nothing and says to migrate, exit 1', async () => {
      const result = await auth(['admin', 'createuser', 'erin@example.com', 'pw'], {
        DATABASE_URL: fresh.url,
      })
      expect(result.code).toBe(1)
      expect(result.stderr).toMatch(
        /^gatehouse-auth: admin createuser: the database schema is not current \(\d+ migration\(s\) pending\); run gatehouse-auth migrate first\n$/,
      )
    })
  })
})

describe('gatehouse-auth keys', () => {
  it('prints an anon and a service_role key signed with JWT_SECRET; the latter opens the admin API', async () => {
    const result = await auth(['keys'])
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' })
    const match = /^anon key: (\S+)\nservice_role key: (\S+)\n$/.exec(result.stdout)
    const [, anon = '', serviceRole = ''] = match ?? []
    const secret = new TextEncoder().encode(TEST_JWT_SECRET)
    expect((await jwtVerify(anon, secret)).payload).toMatchObject({
      role: 'anon',
      iss: 'gatehouse',
    })
    expect((await jwtVerify(serviceRole, secret)).payload).toMatchObject({ role: 'service_role' })
    // The same keys every time for one secret: the ones npm start printed.
    expect({ anon, serviceRole }).toEqual(await apiKeys(server.app.keys))
    const admin = await server.request('GET', '/admin/users', { token: serviceRole })
    expect(admin.statusCode).toBe(200)
    const notAdmin = await server.request('GET', '/admin/users', { token: anon })
    expect(notAdmin.statusCode).toBe(403)
  })
})
