import { waitFor } from '@gatehouse/testing'
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { startService } from '../harness.js'

/**
 * A logger that lets a test await the next successful configuration load after which `check`
 * holds (the service logs `Successfully loaded new configuration` on each).
 */
function reloadEvents() {
  const waiters = new Set<{ check: () => boolean; resolve: () => void }>()
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        if (chunk.toString('utf8').includes('Successfully loaded new configuration')) {
          for (const waiter of waiters) {
            if (!waiter.check()) continue
            waiters.delete(waiter)
            waiter.resolve()
          }
        }
        callback()
      },
    }),
  )
  const reloaded = (check: () => boolean): Promise<void> =>
    new Promise((resolve) => waiters.add({ check, resolve }))
  return { logger, reloaded }
}

const config = (domain: string, requestsPerUnit: number) => `domain: ${domain}
descriptors:
  - key: key1
    rate_limit:
      unit: minute
      requests_per_unit: ${String(requestsPerUnit)}
`
const request = (domain: string) => ({
  domain,
  descriptors: [{ entries: [{ key: 'key1', value: 'v' }] }],
})
/** A check-only request (descriptor hits_addend 0): reads the remaining count without counting. */
const peek = (domain: string) => ({
  domain,
  descriptors: [{ entries: [{ key: 'key1', value: 'v' }], hitsAddend: { value: 0 } }],
})

describe('hot reload of configuration files', () => {
  it('reloads on write, create, chmod and remove with RUNTIME_WATCH_ROOT=false, keeping the last good config', async () => {
    const h = await startService({ files: { 'a.yaml': config('reload', 5) } })
    try {
      const remaining = async (domain = 'reload') =>
        (await h.client.shouldRateLimit(peek(domain))).statuses?.[0]?.limitRemaining
      await h.client.shouldRateLimit(request('reload'))
      expect(await remaining()).toBe(4)

      // write: a new limit
      h.writeConfig('a.yaml', config('reload', 100))
      await waitFor(async () => (await remaining()) === 99, { what: 'the edited limit' })
      expect(h.stat('ratelimit.service.config_load_success')).toBeGreaterThanOrEqual(2)

      // create: a new domain in a nested directory (config key "sub.b.yaml")
      h.writeConfig('sub/b.yaml', config('other', 3))
      await waitFor(async () => (await remaining('other')) === 3, { what: 'the new file' })
      await h.client.shouldRateLimit(request('other'))

      // an invalid edit keeps the previous configuration and counts config_load_error
      h.writeConfig('sub/b.yaml', 'domain: other\nnonsense: 1\n')
      await waitFor(() => h.stat('ratelimit.service.config_load_error') >= 1, {
        what: 'a failed reload',
      })
      expect(await remaining('other')).toBe(2)

      // chmod triggers a reload too
      h.writeConfig('sub/b.yaml', config('other', 4))
      await waitFor(async () => (await remaining('other')) === 3, { what: 'the fixed file' })
      const successes = h.stat('ratelimit.service.config_load_success')
      chmodSync(join(h.configDir, 'sub/b.yaml'), 0o600)
      await waitFor(() => h.stat('ratelimit.service.config_load_success') > successes, {
        what: 'a reload after chmod',
      })

      // remove: the domain is gone
      rmSync(join(h.configDir, 'sub'), { recursive: true })
      await waitFor(() => h.app.service.config?.domains.includes('other') === false, {
        what: 'the removed file',
      })
      expect((await h.client.shouldRateLimit(request('other'))).statuses).toEqual([{ code: 'OK' }])
    } finally {
      await h.close()
    }
  })

  it("sees every edit of a file after an editor's atomic save replaced it (rename over it)", async () => {
    // @see issue 25 item 12: Node 20's recursive fs.watch kept watching the replaced inode.
    const { logger, reloaded } = reloadEvents()
    const h = await startService({
      files: { 'atomic.yaml': config('atomic', 1) },
      env: { RUNTIME_IGNOREDOTFILES: 'true' },
      deps: { logger },
    })
    const limit = () =>
      h.app.service.config?.getLimit('atomic', { entries: [{ key: 'key1', value: 'v' }] })
        ?.requestsPerUnit
    const path = join(h.configDir, 'atomic.yaml')
    try {
      expect(limit()).toBe(1)
      // What vim (backupcopy=no), VS Code and most editors do: a new file renamed over the old.
      let next = reloaded(() => limit() === 2)
      writeFileSync(join(h.configDir, '.atomic.yaml.swp'), config('atomic', 2))
      renameSync(join(h.configDir, '.atomic.yaml.swp'), path)
      await next
      next = reloaded(() => limit() === 3)
      writeFileSync(path, config('atomic', 3))
      await next
      next = reloaded(() => limit() === 4)
      writeFileSync(path, config('atomic', 4))
      await next
      expect(h.stat('ratelimit.service.config_load_error')).toBe(0)
    } finally {
      await h.close()
    }
  })

  it('refuses a YAML alias bomb on reload and keeps the last good configuration', async () => {
    const lines: string[] = []
    const logger = pino(
      { level: 'error' },
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          lines.push(chunk.toString('utf8'))
          callback()
        },
      }),
    )
    const h = await startService({ files: { 'a.yaml': config('bomb', 5) }, deps: { logger } })
    try {
      await h.client.shouldRateLimit(request('bomb'))
      const bomb = ['domain: &a0 [x, x, x, x, x, x, x, x, x]']
      for (let i = 1; i <= 6; i++) {
        bomb.push(
          `descriptors: &a${String(i)} [${Array(9)
            .fill(`*a${String(i - 1)}`)
            .join(', ')}]`,
        )
      }
      h.writeConfig('a.yaml', `${bomb.join('\n')}\n`)
      await waitFor(() => h.stat('ratelimit.service.config_load_error') === 1, {
        what: 'the failed reload',
      })
      expect(lines.join('')).toContain(
        'Error loading new configuration: a.yaml: error loading config file: yaml: document contains excessive aliasing',
      )
      expect((await h.client.shouldRateLimit(peek('bomb'))).statuses?.[0]?.limitRemaining).toBe(4)
    } finally {
      await h.close()
    }
  })

  it('keeps the last good configuration when the config directory disappears (RUNTIME_WATCH_ROOT=false)', async () => {
    const h = await startService({ files: { 'a.yaml': config('gone', 5) } })
    try {
      await h.client.shouldRateLimit(request('gone'))
      rmSync(h.configDir, { recursive: true })
      await waitFor(() => h.stat('ratelimit.service.config_load_error') >= 1, {
        what: 'the failed reload',
      })
      expect(h.stat('ratelimit.service.config_load_success')).toBe(1)
      expect(h.app.service.config?.domains).toEqual(['gone'])
      expect((await h.client.shouldRateLimit(peek('gone'))).statuses?.[0]?.limitRemaining).toBe(4)
    } finally {
      await h.close()
    }
  })

  it('keeps the last good configuration when the root is swapped to one without it (RUNTIME_WATCH_ROOT=true)', async () => {
    const base = mkdtempSync(join(tmpdir(), 'gatehouse-ratelimit-gone-'))
    for (const [dir, limit] of [
      ['v1', 5],
      ['v3', 30],
    ] as const) {
      mkdirSync(join(base, dir, 'config'), { recursive: true })
      writeFileSync(join(base, dir, 'config', 'swap.yaml'), config('swap', limit))
    }
    mkdirSync(join(base, 'v2')) // a deployment without the config directory
    symlinkSync(join(base, 'v1'), join(base, 'current'))
    const swap = (version: string): void => {
      symlinkSync(join(base, version), join(base, 'next'))
      renameSync(join(base, 'next'), join(base, 'current'))
    }
    const h = await startService({
      env: { RUNTIME_ROOT: join(base, 'current'), RUNTIME_WATCH_ROOT: 'true' },
    })
    try {
      const remaining = async () =>
        (await h.client.shouldRateLimit(peek('swap'))).statuses?.[0]?.limitRemaining
      expect(await remaining()).toBe(5)
      swap('v2')
      await waitFor(() => h.stat('ratelimit.service.config_load_error') === 1, {
        what: 'the failed reload',
      })
      expect(await remaining()).toBe(5)
      swap('v3')
      await waitFor(async () => (await remaining()) === 30, { what: 'the next good root' })
    } finally {
      await h.close()
      rmSync(base, { recursive: true, force: true })
    }
  })

  it('names files relative to the app directory in errors', async () => {
    const h = await startService({
      files: { 'a.yaml': config('x', 1), 'nested/bad.yaml': 'domain: x\n' },
    })
    try {
      expect(h.app.service.config).toBeUndefined()
      expect(h.stat('ratelimit.service.config_load_error')).toBe(1)
      const result = h.app.service.loadConfig([{ name: 'nested.bad.yaml', content: 'domain:\n' }])
      expect(result.ok ? undefined : result.error.message).toBe(
        'nested.bad.yaml: config file cannot have empty domain',
      )
      // Without a configuration every call fails like upstream.
      await expect(h.client.shouldRateLimit(request('x'))).rejects.toMatchObject({
        details: 'no rate limit configuration loaded',
      })
    } finally {
      await h.close()
    }
  })

  it('reloads a Kubernetes ConfigMap update (..data swapped in the config directory) with RUNTIME_WATCH_ROOT=false', async () => {
    // The layout kubelet keeps in a ConfigMap volume: each version in a timestamped dot
    // directory, `..data` pointing at the current one, and each key a symlink through `..data`.
    const base = mkdtempSync(join(tmpdir(), 'gatehouse-ratelimit-configmap-'))
    const mount = join(base, 'config')
    mkdirSync(mount)
    const publish = (version: string, limit: number): void => {
      mkdirSync(join(mount, version))
      writeFileSync(join(mount, version, 'k8s.yaml'), config('k8s', limit))
      symlinkSync(version, join(mount, '..data_tmp'))
      renameSync(join(mount, '..data_tmp'), join(mount, '..data'))
    }
    publish('..2026_11_24_07_00_00.1', 5)
    symlinkSync(join('..data', 'k8s.yaml'), join(mount, 'k8s.yaml'))
    const h = await startService({
      env: {
        RUNTIME_ROOT: base,
        RUNTIME_SUBDIRECTORY: '',
        RUNTIME_WATCH_ROOT: 'false',
        RUNTIME_IGNOREDOTFILES: 'true',
      },
    })
    try {
      const remaining = async () =>
        (await h.client.shouldRateLimit(peek('k8s'))).statuses?.[0]?.limitRemaining
      expect(await remaining()).toBe(5)
      publish('..2026_11_24_07_05_00.2', 50)
      rmSync(join(mount, '..2026_11_24_07_00_00.1'), { recursive: true })
      await waitFor(async () => (await remaining()) === 50, { what: 'the updated ConfigMap' })
      publish('..2026_11_24_07_10_00.3', 7)
      rmSync(join(mount, '..2026_11_24_07_05_00.2'), { recursive: true })
      await waitFor(async () => (await remaining()) === 7, { what: 'the second update' })
      expect(h.stat('ratelimit.service.config_load_error')).toBe(0)
    } finally {
      await h.close()
      rmSync(base, { recursive: true, force: true })
    }
  })

  it('reloads when the runtime root symlink is swapped (RUNTIME_WATCH_ROOT=true) and ignores dot files', async () => {
    const base = mkdtempSync(join(tmpdir(), 'gatehouse-ratelimit-swap-'))
    const v1 = join(base, 'v1')
    const v2 = join(base, 'v2')
    for (const [dir, limit] of [
      [v1, 5],
      [v2, 50],
    ] as const) {
      mkdirSync(join(dir, 'config'), { recursive: true })
      writeFileSync(join(dir, 'config', 'swap.yaml'), config('swap', limit))
      writeFileSync(join(dir, 'config', '.hidden.yaml'), 'not: valid yaml: at all')
    }
    symlinkSync(v1, join(base, 'current'))
    const h2 = await startService({
      env: {
        RUNTIME_ROOT: join(base, 'current'),
        RUNTIME_WATCH_ROOT: 'true',
        RUNTIME_IGNOREDOTFILES: 'true',
      },
    })
    try {
      const remaining = async () =>
        (await h2.client.shouldRateLimit(peek('swap'))).statuses?.[0]?.limitRemaining
      expect(await remaining()).toBe(5)
      // In this mode a reload is triggered by swapping the root.
      symlinkSync(v2, join(base, 'next'))
      renameSync(join(base, 'next'), join(base, 'current'))
      await waitFor(async () => (await remaining()) === 50, { what: 'the swapped root' })
      expect(h2.stat('ratelimit.service.config_load_error')).toBe(0)
    } finally {
      await h2.close()
      rmSync(base, { recursive: true, force: true })
    }
  })
})
