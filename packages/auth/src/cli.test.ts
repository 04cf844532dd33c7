import { mkdtemp, rm, writeFile } from 'node:fs/promises'
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
  ])('refuses %j', (argv, message) => {
    expect(() => parseArgs(argv)).toThrow(new UsageError(message))
  })
})

describe('USAGE', () => {
  it('lists every setting with its default, once', () => {
    for (const line of [
      /^ {2}SITE_URL +.*\(required\)$/m,
      /^ {2}API_PORT \| PORT +listen port \(8081\)$/m,
      /^ {2}DB_DATABASE_URL \| DATABASE_URL +.*\(required\)$/m,
      /^ {2}JWT_ADMIN_ROLES +.*\(service_role,supabase_admin\)$/m,
      /^ {2}SECURITY_REFRESH_TOKEN_REUSE_INTERVAL +.*\(0\)$/m,
      /^ {2}EXTERNAL_WORKOS_ENABLED +.*\(false\)$/m,
      /^ {2}SMS_PROVIDER +.*\(none\)$/m,
    ]) {
      expect(USAGE).toMatch(line)
    }
    expect(USAGE.match(/^ {2}JWT_EXP /gm)).toHaveLength(1)
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

  it('overlays the environment on the --env-file', async () => {
    const file = join(dir, 'auth.env')
    await writeFile(file, 'export AUTHSVC_SITE_URL=http://file\nPORT=1\nLOG_LEVEL="debug"\n')
    expect(readEnvironment({ PORT: '2' }, file)).toEqual({
      AUTHSVC_SITE_URL: 'http://file',
      PORT: '2',
      LOG_LEVEL: 'debug',
    })
  })

  it('fails for a named file that cannot be read, not for a missing ./.env', () => {
    expect(() => readEnvironment({}, join(dir, 'missing.env'))).toThrow(
      /missing\.env: cannot read the env file \(ENOENT/,
    )
    expect(readEnvironment({ A: '1' }, undefined)).toMatchObject({ A: '1' })
  })
})
