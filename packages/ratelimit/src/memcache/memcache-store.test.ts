import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import type { MemcacheSettings } from '../settings/settings.js'
import { memcacheTlsOptions } from './memcache-store.js'

const TLS = fileURLToPath(new URL('../../test/fixtures/tls/', import.meta.url))
const settings = (overrides: Partial<MemcacheSettings>): MemcacheSettings => ({
  hostPort: ['mc:11211'],
  srv: '',
  srvRefreshMs: 0,
  maxIdleConns: 2,
  tls: true,
  tlsClientCert: '',
  tlsClientKey: '',
  tlsCaCert: '',
  tlsSkipHostnameVerification: false,
  ...overrides,
})

describe('memcacheTlsOptions', () => {
  const dir = mkdtempSync(join(tmpdir(), 'memcache-tls-'))
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  it('is undefined without MEMCACHE_TLS, and reads the files with it', () => {
    expect(memcacheTlsOptions(settings({ tls: false }))).toBeUndefined()
    const tls = memcacheTlsOptions(
      settings({
        tlsCaCert: join(TLS, 'ca.crt'),
        tlsClientCert: join(TLS, 'client.crt'),
        tlsClientKey: join(TLS, 'client.key'),
        tlsSkipHostnameVerification: true,
      }),
    )
    expect(Buffer.isBuffer(tls?.ca)).toBe(true)
    expect(tls?.checkServerIdentity?.('server', {} as never)).toBeUndefined()
  })

  it('names the setting of a missing file, and refuses a file that is not a key', () => {
    expect(() => memcacheTlsOptions(settings({ tlsCaCert: join(dir, 'missing.pem') }))).toThrow(
      `MEMCACHE_TLS_CACERT: cannot read ${join(dir, 'missing.pem')}: ENOENT`,
    )
    const garbage = join(dir, 'garbage.key')
    writeFileSync(garbage, 'not a key')
    expect(() =>
      memcacheTlsOptions(
        settings({ tlsClientCert: join(TLS, 'client.crt'), tlsClientKey: garbage }),
      ),
    ).toThrow(/^MEMCACHE_TLS_\*: invalid certificate or key: /)
  })
})
