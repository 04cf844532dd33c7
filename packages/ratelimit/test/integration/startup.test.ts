/**
 * The executable when its backend is not there at start (issue 25 item 1): every attempt is a
 * `warn` line at the default log level naming the address and the error, the start gives up
 * after `BACKEND_STARTUP_TIMEOUT_SECONDS` with one line naming the variable to fix (exit 1), and
 * a Redis that comes up in time is used at once.
 */
import { getFreePort, startRedisServer, waitFor } from '@gatehouse/testing'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../fixtures.js'
import { exitCode, loopbackEnv, spawnService } from '../harness.js'

/** Lines of `output` that contain `text`. */
function linesWith(output: string, text: string): string[] {
  return output.split('\n').filter((line) => line.includes(text))
}

describe('gatehouse-ratelimit start-up without its backend', () => {
  let root: string
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'ratelimit-startup-'))
    mkdirSync(join(root, 'config'))
    writeFileSync(join(root, 'config', 'basic.yaml'), fixture('integration/basic.yaml'))
  })
  afterAll(() => {
    rmSync(root, { recursive: true, force: true })
  })

  it('logs each attempt at warn, then exits 1 with one line naming REDIS_URL (two workers)', async () => {
    const address = `127.0.0.1:${String(await getFreePort())}`
    const p = await spawnService({
      ...(await loopbackEnv(root)).env,
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_URL: address,
      RATELIMIT_WORKERS: '2',
      REDIS_STARTUP_INITIAL_INTERVAL: '100ms',
      BACKEND_STARTUP_TIMEOUT_SECONDS: '1',
    })
    try {
      expect(await exitCode(p)).toBe(1)
      const output = p.output()
      const attempts = linesWith(output, 'level=warning')
      expect(attempts.length, output).toBeGreaterThanOrEqual(2)
      for (const line of attempts) {
        expect(line).toContain(
          `msg="cannot reach the main redis at ${address} (REDIS_URL): connect ECONNREFUSED ${address}; retrying in `,
        )
      }
      // Waited for once, by the primary: no worker was started.
      expect(linesWith(output, 'worker')).toEqual([])
      expect(linesWith(output, 'gatehouse-ratelimit:')).toEqual([
        `gatehouse-ratelimit: cannot start: REDIS_URL: the main redis at ${address} did not answer within 1.0 s (BACKEND_STARTUP_TIMEOUT_SECONDS): connect ECONNREFUSED ${address}`,
      ])
      expect(output.trimEnd().split('\n').at(-1)).toMatch(/^gatehouse-ratelimit: cannot start: /)
    } finally {
      await p.stop('SIGKILL')
    }
  })

  it('names MEMCACHE_HOST_PORT for memcache, and hints at REDIS_SOCKET_TYPE for host:port on a socket', async () => {
    const env = (await loopbackEnv(root)).env
    const address = `127.0.0.1:${String(await getFreePort())}`
    const memcache = await spawnService({
      ...env,
      BACKEND_TYPE: 'memcache',
      MEMCACHE_HOST_PORT: address,
      RATELIMIT_WORKERS: '1',
      REDIS_STARTUP_INITIAL_INTERVAL: '100ms',
      BACKEND_STARTUP_TIMEOUT_SECONDS: '1',
    })
    const socket = await spawnService({
      ...env,
      REDIS_URL: address,
      RATELIMIT_WORKERS: '1',
      BACKEND_STARTUP_TIMEOUT_SECONDS: '1',
    })
    try {
      expect(await exitCode(memcache)).toBe(1)
      expect(linesWith(memcache.output(), 'gatehouse-ratelimit:')).toEqual([
        `gatehouse-ratelimit: cannot start: MEMCACHE_HOST_PORT: memcache at ${address} did not answer within 1.0 s (BACKEND_STARTUP_TIMEOUT_SECONDS): connect ECONNREFUSED ${address}`,
      ])
      expect(await exitCode(socket)).toBe(1)
      expect(linesWith(socket.output(), 'gatehouse-ratelimit:')).toEqual([
        `gatehouse-ratelimit: cannot start: REDIS_URL: the main redis at ${address} did not answer within 1.0 s (BACKEND_STARTUP_TIMEOUT_SECONDS): connect ENOENT ${address} (REDIS_SOCKET_TYPE is unix, so REDIS_URL is a socket path; set REDIS_SOCKET_TYPE=tcp for host:port)`,
      ])
    } finally {
      await Promise.all([memcache.stop('SIGKILL'), socket.stop('SIGKILL')])
    }
  })

  it('comes up once a Redis started late answers', async () => {
    const redis = await startRedisServer()
    await redis.stop() // its port is known and closed until restart()
    const { port, env } = await loopbackEnv(root)
    const p = await spawnService({
      ...env,
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_URL: redis.hostPort,
      RATELIMIT_WORKERS: '2',
      REDIS_STARTUP_INITIAL_INTERVAL: '100ms',
      REDIS_STARTUP_MAX_INTERVAL: '200ms',
      BACKEND_STARTUP_TIMEOUT_SECONDS: '30',
      DISABLE_STATS: 'true',
    })
    try {
      await waitFor(() => p.output().includes(`cannot reach the main redis at ${redis.hostPort}`), {
        what: () => `a warn line about the missing Redis (output: ${p.output()})`,
      })
      await redis.restart()
      await waitFor(
        async () =>
          (await fetch(`http://127.0.0.1:${String(port)}/healthcheck`).catch(() => undefined))
            ?.status === 200,
        // Two worker processes start from the TypeScript sources (tsx, a cold cache on a clean
        // clone): 4 s alone, 10 s beside four busy processes, more in a loaded CI run.
        { what: () => `the service to listen (output: ${p.output()})`, timeout: 60_000 },
      )
      const answer = await fetch(`http://127.0.0.1:${String(port)}/json`, {
        method: 'POST',
        body: JSON.stringify({
          domain: 'basic',
          descriptors: [{ entries: [{ key: 'key1', value: 'late' }] }],
        }),
      })
      expect(answer.status).toBe(200)
      expect(p.output()).not.toContain('cannot start')
      p.child.kill('SIGTERM')
      expect(await exitCode(p), p.output()).toBe(0)
    } finally {
      await p.stop('SIGKILL')
      await redis.stop()
    }
  }, 90_000)
})
