import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { UsageError } from '@gatehouse/settings'
import { parseArgs, readEnvironment, USAGE } from './cli.js'

describe('parseArgs', () => {
  it.each([
    [[], { name: 'serve', envFile: undefined }],
    [['migrate'], { name: 'migrate', envFile: undefined }],
    [['ratelimit-config'], { name: 'ratelimit-config', envFile: undefined }],
    [['serve', '-h'], { name: 'help' }],
    [['--help', 'migrate'], { name: 'help' }],
    [['help'], { name: 'help' }],
    [['help', 'migrate'], { name: 'help' }],
    [['--version'], { name: 'version' }],
    [['migrate', '--version'], { name: 'version' }],
    [['version'], { name: 'version' }],
    [['--env-file', 'conf/.env', 'migrate'], { name: 'migrate', envFile: 'conf/.env' }],
    [['--env-file=prod.env'], { name: 'serve', envFile: 'prod.env' }],
    [['--env-file', '-weird-name'], { name: 'serve', envFile: '-weird-name' }],
    [['--', 'migrate'], { name: 'migrate', envFile: undefined }],
    [['check'], { name: 'check', envFile: undefined }],
    [['check', '--connect'], { name: 'check', envFile: undefined, connect: true }],
    [['keys', '--env-file', 'dev.env'], { name: 'keys', envFile: 'dev.env' }],
    [
      ['admin', 'createuser', 'a@b.co', 'pw', '--confirm', '-a', 'staff'],
      {
        name: 'admin',
        envFile: undefined,
        admin: {
          action: 'createuser',
          email: 'a@b.co',
          password: 'pw',
          role: undefined,
          admin: false,
          confirm: true,
          aud: 'staff',
        },
      },
    ],
    [
      ['admin', 'createuser', 'a@b.co', '--', '-pw-starting-with-a-dash', 'editor'],
      {
        name: 'admin',
        envFile: undefined,
        admin: {
          action: 'createuser',
          email: 'a@b.co',
          password: '-pw-starting-with-a-dash',
          role: 'editor',
          admin: false,
          confirm: false,
          aud: undefined,
        },
      },
    ],
    [
      ['admin', 'deleteuser', 'a@b.co', '--aud=x'],
      {
        name: 'admin',
        envFile: undefined,
        admin: { action: 'deleteuser', user: 'a@b.co', aud: 'x' },
      },
    ],
    [
      ['admin', 'editrole', 'a@b.co', '--admin'],
      {
        name: 'admin',
        envFile: undefined,
        admin: { action: 'editrole', user: 'a@b.co', role: undefined, admin: true, aud: undefined },
      },
    ],
  ])('reads %j', (argv, parsed) => {
    expect(parseArgs(argv)).toEqual(parsed)
  })

  it.each([
    [['--env-file'], "option '--env-file' needs a value"],
    [['--bogus'], "unknown option '--bogus'"],
    [['-x'], "unknown option '-x'"],
    [['-hx'], "unknown option '-x'"],
    [['--help=yes'], "option '--help' takes no value"],
    [['start'], "unknown command 'start'"],
    [['migrate', 'serve'], "unexpected argument 'serve'"],
    [['version', 'x'], "unexpected argument 'x'"],
    [['keys', 'x'], "unexpected argument 'x'"],
    [['migrate', '--connect'], "option '--connect' goes with 'check'"],
    [['check', '--confirm'], "option '--confirm' goes with 'admin createuser'"],
    [['admin'], "'admin' needs a command: createuser, deleteuser or editrole"],
    [['admin', 'adduser'], "unknown admin command 'adduser'"],
    [
      ['admin', 'createuser', 'a@b.co'],
      'Not enough arguments to createuser command. Expected at least email and password values',
    ],
    [['admin', 'createuser', 'a@b.co', 'pw', 'role', 'more'], "unexpected argument 'more'"],
    [
      ['admin', 'createuser', 'a@b.co', 'pw', 'role', '--admin'],
      "give a role or '--admin', not both",
    ],
    [
      ['admin', 'deleteuser'],
      'Not enough arguments to deleteuser command. Expected at least ID or email',
    ],
    [
      ['admin', 'deleteuser', 'a@b.co', '--admin'],
      "option '--admin' goes with 'admin createuser' or 'admin editrole'",
    ],
    [
      ['admin', 'editrole', 'a@b.co'],
      'Not enough arguments to editrole command. Expected an ID or email, and a role or --admin',
    ],
    [['admin', 'editrole', 'a@b.co', 'r', '--admin'], "give a role or '--admin', not both"],
    [
      ['admin', 'editrole', 'a@b.co', 'r', '--confirm'],
      "option '--confirm' goes with 'admin createuser'",
    ],
  ])('refuses %j', (argv, message) => {
    expect(() => parseArgs(argv)).toThrow(new UsageError(message))
  })
})

describe('USAGE', () => {
  it('lists every setting with its default, once', () => {
    // A description wraps under itself (column 41); one line per setting here.
    const usage = USAGE.replace(/\n {40}/g, ' ')
    for (const line of [
      /^ {2}SITE_URL +.*\(required\)$/m,
      /^ {2}API_PORT \| PORT +Listen port \(8081\)$/m,
      /^ {2}DB_DATABASE_URL \| DATABASE_URL +.*\(required\)$/m,
      /^ {2}JWT_ADMIN_ROLES +.*\(service_role,supabase_admin\)$/m,
      /^ {2}SECURITY_REFRESH_TOKEN_REUSE_INTERVAL +.*\(0\)$/m,
      /^ {2}EXTERNAL_WORKOS_ENABLED +.*\(false\)$/m,
      /^ {2}SMS_PROVIDER +.*\(none\)$/m,
    ]) {
      expect(usage).toMatch(line)
    }
    expect(usage.match(/^ {2}JWT_EXP /gm)).toHaveLength(1)
    expect(USAGE).toContain('exit status 2')
  })
})

describe('readEnvironment', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gatehouse-auth-env-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('fails for a named file that cannot be read, not for a missing ./.env', () => {
    expect(() => readEnvironment({}, join(dir, 'missing.env'))).toThrow(
      /missing\.env: cannot read the env file \(ENOENT/,
    )
    expect(readEnvironment({ A: '1' }, undefined)).toMatchObject({ A: '1' })
  })
})
