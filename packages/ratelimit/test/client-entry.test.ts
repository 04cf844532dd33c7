/**
 * `@gatehouse/ratelimit/client` loads the client and the wire codec, and nothing of the service:
 * a process importing it (as the auth server does) loads no Redis, memcache, xDS, settings or
 * service code. Each import runs in a process of its own, from the auth package's directory,
 * through `test/loaded-modules.ts`.
 */
import { fileURLToPath } from 'node:url'
import { runProcess, sourceEntryArgs } from '@gatehouse/testing'
import { describe, expect, it } from 'vitest'

const PROBE = fileURLToPath(new URL('loaded-modules.ts', import.meta.url))
const AUTH = fileURLToPath(new URL('../../auth/', import.meta.url))
const SOURCE = new URL('../src/', import.meta.url).href

/** The modules importing `specifier` loads: the package's own by path under `src/`, others by URL. */
async function modulesLoadedBy(specifier: string): Promise<{ own: string[]; other: string[] }> {
  const result = await runProcess(process.execPath, [...sourceEntryArgs(PROBE), specifier], {
    cwd: AUTH,
  })
  expect(result.stderr).toBe('')
  expect(result.code).toBe(0)
  const urls = JSON.parse(result.stdout) as string[]
  return {
    own: urls.filter((url) => url.startsWith(SOURCE)).map((url) => url.slice(SOURCE.length)),
    other: urls.filter((url) => !url.startsWith(SOURCE)),
  }
}

/** Packages only the service uses. */
const SERVICE_PACKAGES =
  /\/node_modules\/(ioredis|memcache-client|chokidar|yaml|prom-client|pino|@gatehouse\/settings|@gatehouse\/telemetry)\//

describe('@gatehouse/ratelimit/client', () => {
  it('loads the client, the wire codec and grpc-js, nothing of the service', async () => {
    const { own, other } = await modulesLoadedBy('@gatehouse/ratelimit/client')
    expect(own).toContain('client/client.ts')
    expect(
      own.filter((path) => !/^(client\/|protocol\/|clock\.ts$|errors\.ts$)/.test(path)),
    ).toEqual([])
    expect(other.filter((url) => SERVICE_PACKAGES.test(url))).toEqual([])
    expect(other.some((url) => url.includes('/node_modules/@grpc/grpc-js/'))).toBe(true)
  })

  it('the main entry point, by contrast, loads the service and its stores (the probe sees them)', async () => {
    const { own, other } = await modulesLoadedBy('@gatehouse/ratelimit')
    expect(own).toEqual(
      expect.arrayContaining([
        'service/service.ts',
        'redis/redis-store.ts',
        'memcache/memcache-store.ts',
        'provider/xds-provider.ts',
      ]),
    )
    expect(other.some((url) => url.includes('/node_modules/ioredis/'))).toBe(true)
    expect(other.some((url) => url.includes('/node_modules/memcache-client/'))).toBe(true)
  })
})
