import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { loadSettings, type MemcacheSettings } from '../settings/settings.js'
import { memcacheTlsOptions } from './memcache-store.js'

const TLS = fileURLToPath(new URL('../../test/fixtures/tls/', import.meta.url))
/** The memcache settings of `env` (with a server list and MEMCACHE_TLS=true). */
const settings = (env: Record<string, string>): MemcacheSettings =>
  loadSettings({
    BACKEND_TYPE: 'memcache',
    MEMCACHE_HOST_PORT: 'mc:11211',
    MEMCACHE_TLS: 'true',
    ...env,
  }).memcache

describe('memcacheTlsOptions', () => {
  const dir = mkdtempSync(join(tmpdir(), 'memcache-tls-'))
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  it('is undefined without MEMCACHE_TLS, and reads the files with it', () => {
    expect(memcacheTlsOptions(settings({ MEMCACHE_TLS: 'false' }))).toBeUndefined()
    const tls = memcacheTlsOptions(
      settings({
        MEMCACHE_TLS_CACERT: join(TLS, 'ca.crt'),
        MEMCACHE_TLS_CLIENT_CERT: join(TLS, 'client.crt'),
        MEMCACHE_TLS_CLIENT_KEY: join(TLS, 'client.key'),
        MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION: 'true',
      }),
    )
    expect(Buffer.isBuffer(tls?.ca)).toBe(true)
    expect(tls?.checkServerIdentity?.('server', {} as never)).toBeUndefined()
  })

  it('names the setting of a missing file, and refuses a file that is not a key', () => {
    expect(() =>
      memcacheTlsOptions(settings({ MEMCACHE_TLS_CACERT: join(dir, 'missing.pem') })),
    ).toThrow(`MEMCACHE_TLS_CACERT: cannot read ${join(dir, 'missing.pem')}: ENOENT`)
    const garbage = join(dir, 'garbage.key')
    writeFileSync(garbage, 'not a key')
    expect(() =>
      memcacheTlsOptions(
        settings({
          MEMCACHE_TLS_CLIENT_CERT: join(TLS, 'client.crt'),
          MEMCACHE_TLS_CLIENT_KEY: garbage,
        }),
      ),
    ).toThrow(/^MEMCACHE_TLS_\*: invalid certificate or key: /)
  })
})
