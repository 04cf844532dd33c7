import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkConfigs } from './config-check.js'
import { loadSettings } from './settings/settings.js'

const rule = (domain: string, extra = '', key = 'k') =>
  `domain: ${domain}\ndescriptors:\n  - key: ${key}\n    rate_limit: {unit: minute, requests_per_unit: 1${extra}}\n`

let root: string

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'ratelimit-check-'))
})
afterAll(() => {
  rmSync(root, { recursive: true, force: true })
})

/** A directory of `files` under the test's root. */
function directory(name: string, files: Record<string, string>): string {
  const dir = join(root, name)
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true })
    writeFileSync(join(dir, path), content)
  }
  return dir
}

async function check(path: string | undefined, env: Record<string, string> = {}) {
  const out: string[] = []
  const err: string[] = []
  const code = await checkConfigs(path, loadSettings({ BACKEND_TYPE: 'memory', ...env }), {
    out: (text) => out.push(text),
    err: (text) => err.push(text),
  })
  return { code, out: out.join(''), err: err.join('') }
}

describe("gatehouse-ratelimit check (upstream's ratelimit_config_check)", () => {
  it('loads every file of a directory, named as the service names them', async () => {
    const dir = directory('ok', { 'a.yaml': rule('a'), 'team/b.yaml': rule('b'), '.c': 'x' })
    expect(await check(dir, { RUNTIME_IGNOREDOTFILES: 'true' })).toEqual({
      code: 0,
      out: [
        'checking rate limit configs...',
        `loading config directory: ${dir}`,
        'opening config file: a.yaml',
        'opening config file: team.b.yaml',
        'all rate limit configs ok',
        '',
      ].join('\n'),
      err: '',
    })
  })

  it("checks the service's own directory when no path is given", async () => {
    directory('runtime/current/rl/config', { 'x.yaml': rule('x', ', algorithm: wobbly') })
    const env = {
      RUNTIME_ROOT: join(root, 'runtime/current'),
      RUNTIME_SUBDIRECTORY: 'rl',
    }
    expect(await check(undefined, env)).toEqual({
      code: 1,
      out: [
        'checking rate limit configs...',
        `loading config directory: ${join(root, 'runtime/current/rl/config')}`,
        // RUNTIME_WATCH_ROOT=true (the default): keys relative to the subdirectory.
        'opening config file: config.x.yaml',
        '',
      ].join('\n'),
      err: expect.stringMatching(
        /^error loading rate limit configs: config\.x\.yaml: .*wobbly.*\n$/,
      ) as unknown,
    })
  })

  it('applies the settings: MERGE_DOMAIN_CONFIG, and the algorithms of BACKEND_TYPE', async () => {
    const dir = directory('merge', {
      'one.yaml': rule('same'),
      'two.yaml': rule('same', '', 'other'),
    })
    expect((await check(dir)).err).toBe(
      "error loading rate limit configs: two.yaml: duplicate domain 'same' in config file\n",
    )
    expect((await check(dir, { MERGE_DOMAIN_CONFIG: 'true' })).code).toBe(0)
    const bucket = directory('bucket', { 'b.yaml': rule('b', ', algorithm: token_bucket') })
    expect((await check(bucket)).code).toBe(0)
    expect(
      await check(bucket, { BACKEND_TYPE: 'memcache', MEMCACHE_HOST_PORT: 'mc:11211' }),
    ).toMatchObject({
      code: 1,
      err: "error loading rate limit configs: b.yaml: rate limit algorithm 'token_bucket' is not supported: BACKEND_TYPE=memcache has no atomic token bucket (use redis or memory)\n",
    })
  })

  it('checks a single file', async () => {
    const file = join(directory('single', { 'empty.yaml': 'descriptors: []\n' }), 'empty.yaml')
    expect(await check(file)).toEqual({
      code: 1,
      out: `checking rate limit configs...\nopening config file: ${file}\n`,
      err: 'error loading rate limit configs: empty.yaml: config file cannot have empty domain\n',
    })
  })

  it("says what it cannot open as Go's os errors read", async () => {
    const missing = join(root, 'missing')
    expect(await check(missing)).toEqual({
      code: 1,
      out: `checking rate limit configs...\nloading config directory: ${missing}\n`,
      err: `error opening directory ${missing}: open ${missing}: no such file or directory\n`,
    })
  })
})
