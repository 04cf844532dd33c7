import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AUTH_CONFIG_HEADER, prepareRatelimitConfig, servedExample } from './runtime.js'

describe('the rate limit config directory of npm start', () => {
  let base: string
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'start-runtime-'))
  })
  afterEach(() => {
    rmSync(base, { recursive: true, force: true })
  })

  it("serves a copy of each example whose first lines name the copy's own path, once", () => {
    const examples = join(base, 'examples')
    mkdirSync(examples)
    writeFileSync(
      join(examples, 'example.yaml'),
      '# About the example in the repository.\n# More of it.\ndomain: d\n# a rule\ndescriptors: []\n',
    )
    const configDir = join(base, 'data', 'ratelimit', 'config')
    const shown = (path: string) => path.replace(`${base}/`, '')
    prepareRatelimitConfig(configDir, examples, 'domain: auth\n', shown)

    const copy = join(configDir, 'example.yaml')
    expect(readFileSync(copy, 'utf8')).toBe(
      '# Served by npm start from\n' +
        '#   data/ratelimit/config/example.yaml\n' +
        '# Edit this file while the stack runs: the rate limit service reloads it on save. It was copied\n' +
        '# from examples/example.yaml on the first start and is kept after; delete it to get\n' +
        '# the example again at the next start.\n' +
        'domain: d\n# a rule\ndescriptors: []\n',
    )
    expect(readFileSync(join(configDir, 'gatehouse-auth.yaml'), 'utf8')).toBe(
      `${AUTH_CONFIG_HEADER}domain: auth\n`,
    )
    // The user's edits are kept at the next start.
    writeFileSync(copy, 'domain: mine\n')
    prepareRatelimitConfig(configDir, examples, 'domain: auth\n', shown)
    expect(readFileSync(copy, 'utf8')).toBe('domain: mine\n')
  })

  it('keeps a file without a leading comment whole', () => {
    expect(servedExample('e.yaml', 'domain: d\n', 'c/e.yaml')).toMatch(
      /^# Served by npm start from\n# {3}c\/e\.yaml\n[^]*\ndomain: d\n$/,
    )
  })
})
