import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseEnvFile, readEnvFile } from './env-file.js'

describe('parseEnvFile', () => {
  it('reads NAME=value lines as Node does: comments, export, quotes; a later line wins', () => {
    const text = [
      '# settings for the test server',
      'export AUTHSVC_SITE_URL=http://localhost:3000',
      'DATABASE_URL = postgres://u:p@h/db?sslmode=require # inline comment',
      "AUTHSVC_PASSWORD_REQUIRED_CHARACTERS='abc:ABC # not a comment'",
      'AUTHSVC_JWT_AUD=`authenticated`',
      'AUTHSVC_SMS_PROVIDER=',
      'PORT=1',
      'PORT=9999',
    ].join('\n')
    expect(parseEnvFile(text)).toEqual({
      AUTHSVC_SITE_URL: 'http://localhost:3000',
      DATABASE_URL: 'postgres://u:p@h/db?sslmode=require',
      AUTHSVC_PASSWORD_REQUIRED_CHARACTERS: 'abc:ABC # not a comment',
      AUTHSVC_JWT_AUD: 'authenticated',
      AUTHSVC_SMS_PROVIDER: '',
      PORT: '9999',
    })
  })

  it('expands \\n in double quotes only, and keeps other backslashes as written', () => {
    expect(parseEnvFile('A="x\\ny\\tz"\nB=\'x\\ny\'')).toEqual({ A: 'x\ny\\tz', B: 'x\\ny' })
  })

  it('reads a quoted value over several lines (a JSON array of JWKs)', () => {
    const text = ["AUTHSVC_JWT_KEYS='[", '  {"kty": "oct"}', "]'", 'AFTER=1'].join('\n')
    expect(parseEnvFile(text)).toEqual({
      AUTHSVC_JWT_KEYS: '[\n  {"kty": "oct"}\n]',
      AFTER: '1',
    })
  })

  /** @see https://github.com/nodejs/node/issues/56775 (Node 20 glues such lines to the next name) */
  it('skips lines that are no assignment, wherever they stand', () => {
    const text = [
      'not a line',
      'A=1',
      '  foo',
      '',
      'bar',
      'export B=2',
      'C="multi',
      'line without equals',
      '"',
      'stray',
      'A=3',
    ].join('\r\n')
    expect(parseEnvFile(text)).toEqual({
      A: '3',
      B: '2',
      C: 'multi\nline without equals\n',
    })
    expect(parseEnvFile('only junk\nmore junk')).toEqual({})
  })
})

describe('readEnvFile', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gatehouse-settings-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('reads a file', async () => {
    const path = join(dir, 'app.env')
    await writeFile(path, 'PORT=9999\n# c\nLOG_LEVEL=debug\n')
    expect(readEnvFile(path)).toEqual({ PORT: '9999', LOG_LEVEL: 'debug' })
    expect(readEnvFile(path, { optional: true })).toEqual({ PORT: '9999', LOG_LEVEL: 'debug' })
  })

  it('gives nothing for a missing optional file, and fails for a missing named one', () => {
    const missing = join(dir, 'missing.env')
    expect(readEnvFile(missing, { optional: true })).toEqual({})
    expect(() => readEnvFile(missing)).toThrow(/ENOENT/)
  })
})
