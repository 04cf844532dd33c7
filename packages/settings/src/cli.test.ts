import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  USAGE_EXIT_STATUS,
  UsageError,
  environmentWithFile,
  parseCommandLine,
  readPackageVersion,
  usageErrorLine,
} from './cli.js'
import { SettingsError } from './errors.js'

const OPTIONS = {
  'env-file': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  aud: { type: 'string', short: 'a' },
} as const

describe('parseCommandLine', () => {
  it.each([
    [[], {}, []],
    [['serve'], {}, ['serve']],
    [['--env-file', 'conf/.env', 'migrate'], { 'env-file': 'conf/.env' }, ['migrate']],
    [['--env-file=prod.env'], { 'env-file': 'prod.env' }, []],
    [['--env-file', '-weird-name'], { 'env-file': '-weird-name' }, []],
    [['--env-file', 'a', '--env-file', 'b'], { 'env-file': 'b' }, []],
    [['-h', 'admin'], { help: true }, ['admin']],
    [['-a', 'x', '-ay'], { aud: 'y' }, []],
    [['admin', '--', '--not-an-option', '-'], {}, ['admin', '--not-an-option', '-']],
  ])('reads %j', (argv, values, positionals) => {
    expect(parseCommandLine(argv, OPTIONS)).toEqual({ values, positionals })
  })

  it.each([
    [['--bogus'], "unknown option '--bogus'"],
    [['--bogus=1'], "unknown option '--bogus'"],
    [['-x'], "unknown option '-x'"],
    [['-hx'], "unknown option '-x'"],
    [['--h'], "unknown option '--h'"],
    [['--__proto__'], "unknown option '--__proto__'"],
    [['--env-file'], "option '--env-file' needs a value"],
    [['--env-file='], "option '--env-file' needs a value"],
    [['--help=yes'], "option '--help' takes no value"],
  ])('refuses %j on one line', (argv, message) => {
    let thrown: unknown
    try {
      parseCommandLine(argv, OPTIONS)
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(UsageError)
    expect(thrown).toMatchObject({ code: 'ERR_USAGE', message })
    expect((thrown as Error).message).not.toContain('\n')
  })
})

describe('usageErrorLine', () => {
  it('names the program and where the usage is', () => {
    expect(usageErrorLine('gatehouse-auth', new UsageError("unknown option '-x'"))).toBe(
      "gatehouse-auth: unknown option '-x' (see gatehouse-auth --help)",
    )
    expect(usageErrorLine('client', new UsageError('unexpected argument "a"'), '-h')).toBe(
      'client: unexpected argument "a" (see client -h)',
    )
    expect(USAGE_EXIT_STATUS).toBe(2)
  })
})

describe('files', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gatehouse-settings-cli-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('readPackageVersion reads the version of a package.json', async () => {
    const file = join(dir, 'package.json')
    await writeFile(file, JSON.stringify({ name: 'x', version: '1.2.3-rc.1' }))
    expect(readPackageVersion(pathToFileURL(file))).toBe('1.2.3-rc.1')
    await writeFile(file, JSON.stringify({ name: 'x' }))
    expect(() => readPackageVersion(pathToFileURL(file))).toThrow(`${file} has no "version"`)
  })

  it("readPackageVersion reads this package's own version", () => {
    expect(readPackageVersion(new URL('../package.json', import.meta.url))).toMatch(
      /^\d+\.\d+\.\d+/,
    )
  })

  it('environmentWithFile overlays the environment on the file', async () => {
    const file = join(dir, 'auth.env')
    await writeFile(file, 'export AUTHSVC_SITE_URL=http://file\nPORT=1\nLOG_LEVEL="debug"\n')
    expect(environmentWithFile({ PORT: '2' }, file)).toEqual({
      AUTHSVC_SITE_URL: 'http://file',
      PORT: '2',
      LOG_LEVEL: 'debug',
    })
    expect(environmentWithFile({ PORT: '2' }, undefined)).toEqual({ PORT: '2' })
  })

  it('environmentWithFile refuses a named file it cannot read as a settings problem', () => {
    const missing = join(dir, 'missing.env')
    let thrown: unknown
    try {
      environmentWithFile({}, missing)
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(SettingsError)
    expect((thrown as SettingsError).problems).toEqual([
      `${missing}: cannot read the env file (ENOENT: no such file or directory, open '${missing}')`,
    ])
    expect(environmentWithFile({ A: '1' }, missing, { optional: true })).toEqual({ A: '1' })
  })
})
