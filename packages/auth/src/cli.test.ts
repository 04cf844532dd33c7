import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseArgs, readEnvironment, USAGE } from './cli.js'

describe('parseArgs', () => {
  it.each([
    [[], { command: 'serve', envFile: undefined }],
    [['migrate'], { command: 'migrate', envFile: undefined }],
    [['ratelimit-config'], { command: 'ratelimit-config', envFile: undefined }],
    [['migrate', 'serve'], { command: 'serve', envFile: undefined }],
    [['serve', '-h'], { command: 'help', envFile: undefined }],
    [['--help', 'migrate'], { command: 'help', envFile: undefined }],
    [['help'], { command: 'help', envFile: undefined }],
    [['--env-file', 'conf/.env', 'migrate'], { command: 'migrate', envFile: 'conf/.env' }],
    [['--env-file=prod.env'], { command: 'serve', envFile: 'prod.env' }],
    [['--env-file', '-weird-name'], { command: 'serve', envFile: '-weird-name' }],
  ])('reads %j', (argv, parsed) => {
    expect(parseArgs(argv)).toEqual(parsed)
  })

  it.each([
    [['--env-file'], '--env-file needs a path'],
    [['--bogus'], 'unknown argument "--bogus"'],
    [['-x'], 'unknown argument "-x"'],
    [['-hx'], 'unknown argument "-hx"'],
    [['--help=yes'], 'unknown argument "--help=yes"'],
    [['start'], 'unknown argument "start"'],
    [['--', 'serve'], 'unknown argument "--"'],
  ])('refuses %j', (argv, error) => {
    expect(parseArgs(argv).error).toBe(error)
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

  it('fails for a named file that cannot be read', () => {
    expect(() => readEnvironment({}, join(dir, 'missing.env'))).toThrow(/ENOENT/)
  })
})
