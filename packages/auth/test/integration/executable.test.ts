/**
 * `gatehouse-auth` run as a user runs it: a process from the command line, its exit status and
 * its exact output (issue 25: command lines that follow conventions).
 */
import { readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startMailInbox, type MailInbox } from '@gatehouse/mail-inbox'
import {
  createTestDatabase,
  getFreePort,
  runProcess,
  sourceEntryArgs,
  type ProcessResult,
  type TestDatabase,
} from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readMigrations } from '#internal/storage/migrate.js'
import { runCli, type CliIo } from '#internal/cli.js'
import { testEnv } from '../helpers.js'

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url))
const { version } = JSON.parse(
  readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
) as { version: string }

let dir: string

/** Runs `gatehouse-auth` from a directory without `.env`, with only `env` set. */
function auth(args: readonly string[], env: Record<string, string> = {}): Promise<ProcessResult> {
  return runProcess(process.execPath, [...sourceEntryArgs(MAIN), ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', ...env },
  })
}

/** A CLI's io that keeps what it writes (for runs in this process). */
function fakeIo() {
  const out: string[] = []
  const err: string[] = []
  const io: CliIo = { out: (l) => out.push(l), err: (l) => err.push(l), onSignal: () => {} }
  return { io, out, err }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-auth-exe-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('gatehouse-auth: help, version, refused command lines', () => {
  it.each([['--version'], ['version']])("%s prints package.json's version", async (arg) => {
    expect(await auth([arg])).toEqual({
      code: 0,
      stdout: `gatehouse-auth ${version}\n`,
      stderr: '',
    })
  })

  it.each([['-h'], ['--help'], ['help']])('%s prints the usage and exits 0', async (arg) => {
    const result = await auth([arg])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^Usage: gatehouse-auth \[command\] \[--env-file <path>\]\n/)
    expect(result.stdout).toContain('\n  --version          print the version\n')
    expect(result.stderr).toBe('')
  })

  it.each([
    [['--bogus'], "unknown option '--bogus'"],
    [['-x', 'migrate'], "unknown option '-x'"],
    [['start'], "unknown command 'start'"],
    [['migrate', 'now'], "unexpected argument 'now'"],
    [['--env-file'], "option '--env-file' needs a value"],
  ])('refuses %j with one line and exit status 2', async (args, problem) => {
    expect(await auth(args)).toEqual({
      code: 2,
      stdout: '',
      stderr: `gatehouse-auth: ${problem} (see gatehouse-auth --help)\n`,
    })
  })
})

describe('gatehouse-auth --env-file', () => {
  it('reads the file as a program argument; the environment wins over it', async () => {
    const file = join(dir, 'auth.env')
    await writeFile(
      file,
      [
        '# read by gatehouse-auth, not by node',
        ...Object.entries(testEnv('postgres://unused@127.0.0.1:1/none')).map(
          ([name, value]) => `${name}=${value}`,
        ),
        'AUTHSVC_RATE_LIMIT_DOMAIN=from-the-file',
        'AUTHSVC_RATE_LIMIT_VERIFY=70',
      ].join('\n'),
    )
    const result = await auth(['ratelimit-config', '--env-file', file], {
      AUTHSVC_RATE_LIMIT_DOMAIN: 'from-the-environment',
    })
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("domain: 'from-the-environment'")
    // RATE_LIMIT_VERIFY 70 per 5 minutes, from the file, is 14 a minute.
    expect(result.stdout).toContain('requests_per_unit: 14\n')
  })

  it('refuses a named file it cannot read as an invalid setting (exit 2)', async () => {
    // Node itself exits 9 before the program runs when the path does not exist
    // (nodejs/node#54232), so this is the program's own answer, in process.
    const { io, out, err } = fakeIo()
    const missing = join(dir, 'missing.env')
    expect(await runCli(['migrate', '--env-file', missing], {}, io)).toBe(2)
    expect(out).toEqual([])
    expect(err).toEqual([
      `gatehouse-auth: invalid settings:\n  ${missing}: cannot read the env file (ENOENT: no such file or directory, open '${missing}')`,
    ])
  })
})

describe('gatehouse-auth check', () => {
  let database: TestDatabase
  let inbox: MailInbox
  /** The test database's URL with a password, which no output may show. */
  let databaseUrl: string
  const PASSWORD = 'pw-never-shown'

  beforeAll(async () => {
    database = await createTestDatabase('auth_exe_check')
    inbox = await startMailInbox()
    const url = new URL(database.url)
    url.password = PASSWORD
    databaseUrl = url.toString()
  })
  afterAll(async () => {
    await inbox.close()
    await database.drop()
  })

  it('says the settings are valid without serving, exit 0', async () => {
    expect(await auth(['check'], testEnv(databaseUrl))).toEqual({
      code: 0,
      stdout: 'settings: ok\n',
      stderr: '',
    })
  })

  it('lists every invalid setting at once, exit 2', async () => {
    const { code, stdout, stderr } = await auth(['check'], { AUTHSVC_DB_DRIVER: 'sqlite' })
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' })
    expect(stderr).toMatch(/^gatehouse-auth: invalid settings:\n/)
    expect(stderr).toContain('\n  AUTHSVC_SITE_URL: required\n')
    expect(stderr).toContain('\n  AUTHSVC_DB_DRIVER: must be postgres (got "sqlite")\n')
  })

  it('--connect reaches the database and the SMTP server, one line each, no password', async () => {
    const env = testEnv(databaseUrl, {
      AUTHSVC_SMTP_HOST: '127.0.0.1',
      AUTHSVC_SMTP_PORT: String(inbox.smtp.port),
      AUTHSVC_SMTP_USER: 'mailer',
      AUTHSVC_SMTP_PASS: PASSWORD,
      AUTHSVC_SMTP_ADMIN_EMAIL: 'no-reply@example.com',
    })
    const versions = (await readMigrations()).map((m) => m.version)
    const shown = databaseUrl.replace(`:${PASSWORD}@`, ':***@')
    expect(await auth(['check', '--connect'], env)).toEqual({
      code: 0,
      stdout: [
        'settings: ok',
        `database: reachable (${shown}), ${String(versions.length)} migration(s) pending (${versions.join(', ')}; serve and migrate apply them)`,
        `smtp: reachable (127.0.0.1:${String(inbox.smtp.port)})`,
        '',
      ].join('\n'),
      stderr: '',
    })
    // Once migrated, the schema is current (in this process: the same command).
    expect(await runCli(['migrate'], env, fakeIo().io)).toBe(0)
    const { io, out } = fakeIo()
    expect(await runCli(['check', '--connect'], env, io)).toBe(0)
    expect(out[1]).toBe(`database: reachable (${shown}), schema up to date`)
  })

  it('--connect says what cannot be reached, exit 1, no password', async () => {
    const [dbPort, smtpPort] = [await getFreePort(), await getFreePort()]
    const env = testEnv(`postgres://postgres:${PASSWORD}@127.0.0.1:${String(dbPort)}/gone`, {
      AUTHSVC_SMTP_HOST: '127.0.0.1',
      AUTHSVC_SMTP_PORT: String(smtpPort),
      AUTHSVC_SMTP_USER: 'mailer',
      AUTHSVC_SMTP_PASS: PASSWORD,
      AUTHSVC_SMTP_ADMIN_EMAIL: 'no-reply@example.com',
    })
    expect(await auth(['check', '--connect'], env)).toEqual({
      code: 1,
      stdout: 'settings: ok\n',
      stderr: [
        `database: unreachable (postgres://postgres:***@127.0.0.1:${String(dbPort)}/gone): connection refused by 127.0.0.1:${String(dbPort)} (is PostgreSQL running there?)`,
        `smtp: unreachable (127.0.0.1:${String(smtpPort)}): connect ECONNREFUSED 127.0.0.1:${String(smtpPort)}`,
        '',
      ].join('\n'),
    })
  })

  it("refuses --connect without 'check'", async () => {
    expect(await auth(['migrate', '--connect'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "gatehouse-auth: option '--connect' goes with 'check' (see gatehouse-auth --help)\n",
    })
  })
})
