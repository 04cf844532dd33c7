import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createTestSchema, getFreePort, waitFor, type TestDatabase } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readMigrations } from '#internal/storage/migrate.js'
import { runCli, type CliIo } from '#internal/cli.js'
import { testEnv } from '../helpers.js'

const BIN = fileURLToPath(new URL('../../bin/gatehouse-auth.js', import.meta.url))

function fakeIo() {
  const out: string[] = []
  const err: string[] = []
  let handler: ((signal: string) => void) | undefined
  const io: CliIo = {
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    onSignal: (h) => {
      handler = h
    },
  }
  return { io, out, err, signal: (name: string) => handler?.(name) }
}

describe('gatehouse-auth CLI', () => {
  let schema: TestDatabase

  beforeAll(async () => {
    schema = await createTestSchema('auth_cli')
  })
  afterAll(async () => {
    await schema.drop()
  })

  it('prints help', async () => {
    const { io, out } = fakeIo()
    expect(await runCli(['--help'], {}, io)).toBe(0)
    expect(out.join('\n')).toContain('Usage: gatehouse-auth [command] [--env-file <path>]')
  })

  it('ratelimit-config prints the rate limit service config of the settings', async () => {
    const print = async (extra: Record<string, string>) => {
      const { io, out } = fakeIo()
      const env = testEnv(schema.url, {
        AUTHSVC_RATE_LIMIT_DOMAIN: 'auth-eu',
        AUTHSVC_RATE_LIMIT_VERIFY: '70',
        ...extra,
      })
      expect(await runCli(['ratelimit-config'], env, io)).toBe(0)
      return out.join('\n')
    }
    const buckets = await print({})
    expect(buckets).toContain("domain: 'auth-eu'")
    // RATE_LIMIT_VERIFY 70 per 5 minutes is 14 a minute (no other rate gives 14).
    expect(buckets).toContain('requests_per_unit: 14\n          algorithm: token_bucket')
    // With fixed windows, it is 840 an hour.
    const windows = await print({ AUTHSVC_RATE_LIMIT_SERVICE_ALGORITHM: 'fixed_window' })
    expect(windows).toContain('requests_per_unit: 840')
    expect(windows).not.toContain('token_bucket')
  })

  it('--help lists the limits with their defaults', async () => {
    const { io, out } = fakeIo()
    expect(await runCli(['--help'], {}, io)).toBe(0)
    // A description wraps under itself (column 41); one line per setting here.
    const help = out.join('\n').replace(/\n {40}/g, ' ')
    expect(help).toMatch(/PASSWORD_HASH_CONCURRENCY .*\(0: one per CPU core\)/)
    expect(help).toMatch(/PASSWORD_HASH_QUEUE_SIZE .*\(100\)/)
    expect(help).toMatch(/API_MAX_REQUEST_DURATION .*\(10s\)/)
    expect(help).toMatch(/DB_MAX_POOL_SIZE .*\(0: half of what the server allows\)/)
  })

  it('lists every configuration problem and exits 2', async () => {
    const { io, err } = fakeIo()
    expect(await runCli(['migrate'], { AUTHSVC_DB_DRIVER: 'sqlite' }, io)).toBe(2)
    const message = err.join('\n')
    expect(message).toContain('AUTHSVC_SITE_URL: required')
    expect(message).toContain('AUTHSVC_API_EXTERNAL_URL: required')
    expect(message).toContain('AUTHSVC_DB_DRIVER: must be postgres (got "sqlite")')
    expect(message).toContain('AUTHSVC_JWT_SECRET: required unless')
  })

  it('refuses to start with a JWT_SECRET shorter than 32 bytes', async () => {
    const { io, err } = fakeIo()
    expect(await runCli([], testEnv(schema.url, { AUTHSVC_JWT_SECRET: 'too-short' }), io)).toBe(2)
    expect(err.join('\n')).toContain('AUTHSVC_JWT_SECRET: must be at least 32 bytes long')
    expect(err.join('\n')).not.toContain('too-short')
  })

  it('rejects unknown arguments on one line', async () => {
    const { io, err } = fakeIo()
    expect(await runCli(['--bogus'], {}, io)).toBe(2)
    expect(err).toEqual(["gatehouse-auth: unknown option '--bogus' (see gatehouse-auth --help)"])
  })

  it('migrate applies migrations once', async () => {
    const first = fakeIo()
    expect(await runCli(['migrate'], testEnv(schema.url), first.io)).toBe(0)
    const versions = (await readMigrations()).map((m) => m.version)
    expect(versions.slice(0, 2)).toEqual(['0001', '0002'])
    expect(first.out).toEqual([`migrations applied: ${versions.join(', ')}`])
    const second = fakeIo()
    expect(await runCli(['migrate'], testEnv(schema.url), second.io)).toBe(0)
    expect(second.out).toEqual(['migrations: up to date'])
  })

  it('serve listens, then stops on a signal', async () => {
    const port = await getFreePort()
    const { io, out, signal } = fakeIo()
    const env = testEnv(schema.url, {
      PORT: String(port),
      AUTHSVC_API_HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
    })
    const running = runCli([], env, io)
    await waitFor(() => out.some((line) => line.includes('listening on')), { what: 'the server' })
    expect(out[0]).toBe(
      `gatehouse-auth: listening on http://127.0.0.1:${String(port)} (database: postgres)`,
    )
    const res = await fetch(`http://127.0.0.1:${String(port)}/health`)
    expect(res.status).toBe(200)
    signal('SIGTERM')
    expect(await running).toBe(0)
  })

  /** @see issue 8, item 9: a lasting admin credential is not printed on every start. */
  it('prints the development service_role key only when the embedded database is created', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-auth-cli-'))
    try {
      const start = async () => {
        const port = await getFreePort()
        const { io, out, signal } = fakeIo()
        const env = testEnv(`pglite://${dir}`, {
          PORT: String(port),
          AUTHSVC_API_HOST: '127.0.0.1',
          LOG_LEVEL: 'error',
        })
        const running = runCli([], env, io)
        await waitFor(() => out.some((line) => line.includes('listening on')), {
          timeout: 30_000,
          what: 'the server',
        })
        signal('SIGTERM')
        expect(await running).toBe(0)
        return out.join('\n')
      }
      const first = await start()
      expect(first).toMatch(/service_role key \(admin API\): \S+\.\S+\.\S+/)
      const second = await start()
      expect(second).toContain('listening on')
      expect(second).not.toMatch(/service_role key \(admin API\)/)
      expect(second).not.toMatch(/eyJ/)
      expect(second).toContain(
        'the development service_role key is printed only when the embedded database is created',
      )
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }, 90_000)

  it('the executable serves embedded PGlite, prints a service_role key, and exits on SIGTERM', async () => {
    const port = await getFreePort()
    const child = spawn(process.execPath, [BIN], {
      env: {
        ...process.env,
        ...testEnv('pglite://memory', {
          PORT: String(port),
          AUTHSVC_API_HOST: '127.0.0.1',
          LOG_LEVEL: 'error',
        }),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    try {
      await waitFor(() => output.includes('service_role key'), {
        timeout: 20_000,
        what: () => `the executable (${output})`,
      })
      const key = /service_role key \(admin API\): (\S+)/.exec(output)![1]!
      const res = await fetch(`http://127.0.0.1:${String(port)}/admin/users`, {
        headers: { authorization: `Bearer ${key}` },
      })
      expect(res.status).toBe(200)
    } finally {
      child.kill('SIGTERM')
    }
    expect(await exited).toBe(0)
  }, 60_000)
})
