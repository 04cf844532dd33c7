import {
  getFreePort,
  ping,
  redisKeyPrefix,
  sharedRedisUrl,
  startProcess,
  waitFor,
} from '@gatehouse/testing'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs'
import { connect, createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../fixtures.js'
import { exitCode, loopbackEnv, spawnService } from '../harness.js'

const PACKAGE = fileURLToPath(new URL('../../', import.meta.url))
const TSX = ['--import', 'tsx', '--conditions', 'dev-source']
const run = promisify(execFile)

/**
 * Sends raw bytes to a loopback port and resolves with everything the server sends back until it
 * closes the connection (or `''` when the connection fails).
 */
function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    const socket = connect(port, '127.0.0.1', () => {
      socket.end(request)
    })
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', () => {
      resolve('')
    })
    socket.on('close', () => {
      resolve(Buffer.concat(chunks).toString('latin1'))
    })
  })
}

describe('the gatehouse-ratelimit executable', () => {
  let root: string
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'ratelimit-exe-'))
    mkdirSync(join(root, 'config'))
    writeFileSync(join(root, 'config', 'basic.yaml'), fixture('integration/basic.yaml'))
  })
  afterAll(() => {
    rmSync(root, { recursive: true, force: true })
  })

  it('exits 2 listing every invalid setting', async () => {
    const p = await spawnService({ PORT: 'eighty', NEAR_LIMIT_RATIO: '2', BACKEND_TYPE: 'memory' })
    expect(await exitCode(p)).toBe(2)
    expect(p.output()).toContain(
      'gatehouse-ratelimit: invalid settings:\n  PORT: must be an integer from 0 to 65535 (got "eighty")\n  NEAR_LIMIT_RATIO: must be a number from 0 to 1 (got "2")',
    )
  })

  it('exits 2 naming the variable when a gRPC TLS file cannot be read', async () => {
    const { env } = await loopbackEnv(root)
    // Two workers: the primary checks the files before forking.
    const p = await spawnService({
      ...env,
      BACKEND_TYPE: 'redis',
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_URL: '127.0.0.1:1',
      RATELIMIT_WORKERS: '2',
      GRPC_SERVER_USE_TLS: 'true',
      GRPC_SERVER_TLS_CERT: join(root, 'missing.crt'),
      GRPC_SERVER_TLS_KEY: join(root, 'missing.key'),
    })
    expect(await exitCode(p)).toBe(2)
    expect(p.output()).toContain(
      `gatehouse-ratelimit: invalid settings:\n  GRPC_SERVER_TLS_CERT: cannot read ${join(root, 'missing.crt')}: ENOENT`,
    )
    expect(p.output()).toContain(`GRPC_SERVER_TLS_KEY: cannot read ${join(root, 'missing.key')}`)
  })

  it('serves, answers the CLI client, logs JSON, and exits 0 on SIGTERM', async () => {
    const { port, grpcPort, env } = await loopbackEnv(root)
    const p = await spawnService({
      ...env,
      BACKEND_TYPE: 'memory',
      USE_STATSD: 'false',
      STATS_FLUSH_INTERVAL: '100ms',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    })
    try {
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${String(port)}/healthcheck`)).status === 200,
        {
          what: () => `the service to listen (output: ${p.output()})`,
          timeout: 20_000,
        },
      )
      const { stdout } = await run(process.execPath, [
        ...TSX,
        join(PACKAGE, 'src/client/cli.ts'),
        '-dial_string',
        `127.0.0.1:${String(grpcPort)}`,
        '-domain',
        'basic',
        '-descriptors',
        'one_per_minute=cli',
      ])
      expect(stdout).toContain(
        `dial string: 127.0.0.1:${String(grpcPort)}\ndomain: basic\ndescriptors: [one_per_minute=cli]\n`,
      )
      expect(stdout).toMatch(
        /response: \{"overallCode":"OK","statuses":\[\{"code":"OK","currentLimit":\{"requestsPerUnit":1,"unit":"MINUTE"\}/,
      )
      // Stats reach standard output in gostats' logging-sink shape.
      await waitFor(() => p.output().includes('"msg":"flushing counter"'), {
        what: 'a stats flush',
      })
      const logLine = p
        .output()
        .split('\n')
        .find((line) => line.includes('Successfully loaded new configuration'))
      const record = JSON.parse(logLine ?? '{}') as Record<string, unknown>
      expect(record).toMatchObject({
        level: 'info',
        '@message': 'Successfully loaded new configuration (1 domain(s))',
      })
      expect(typeof record['@timestamp']).toBe('string')
      p.child.kill('SIGTERM')
      expect(await exitCode(p), `exit code (output: ${p.output()})`).toBe(0)
    } finally {
      await p.stop('SIGKILL')
    }
  })

  it('runs several workers on the same ports (RATELIMIT_WORKERS) and stops them all on SIGTERM', async () => {
    const { port, env } = await loopbackEnv(root)
    const p = await spawnService({
      ...env,
      RATELIMIT_WORKERS: '2',
      REDIS_URL: sharedRedisUrl(),
      CACHE_KEY_PREFIX: redisKeyPrefix('ratelimit-workers'),
      DISABLE_STATS: 'true',
    })
    try {
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${String(port)}/healthcheck`)).status === 200,
        {
          what: () => `the workers to listen (output: ${p.output()})`,
          timeout: 20_000,
        },
      )
      const body = JSON.stringify({
        domain: 'basic',
        descriptors: [{ entries: [{ key: 'one_per_minute', value: 'workers' }] }],
      })
      const statuses: number[] = []
      for (let i = 0; i < 4; i++)
        statuses.push(
          (await fetch(`http://127.0.0.1:${String(port)}/json`, { method: 'POST', body })).status,
        )
      // The counter lives in Redis, so it is shared by both workers.
      expect(statuses, `statuses (output: ${p.output()})`).toEqual([200, 429, 429, 429])
      p.child.kill('SIGTERM')
      expect(await exitCode(p), `exit code (output: ${p.output()})`).toBe(0)
    } finally {
      await p.stop('SIGKILL')
    }
  })

  it('stops with exit 1 when a worker cannot start, instead of restarting it in a loop', async () => {
    const { env } = await loopbackEnv(root)
    const busy = createServer()
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve))
    const address = busy.address()
    const p = await spawnService({
      ...env,
      PORT: String(typeof address === 'object' && address !== null ? address.port : 0),
      RATELIMIT_WORKERS: '2',
      REDIS_URL: sharedRedisUrl(),
      DISABLE_STATS: 'true',
    })
    try {
      expect(await exitCode(p)).toBe(1)
      expect(p.output()).toContain('before serving; stopping')
    } finally {
      await p.stop('SIGKILL')
      busy.close()
    }
  })

  it('survives unparsable request targets on every port, answering 400 on HTTP ones', async () => {
    const { port, grpcPort, debugPort, env } = await loopbackEnv(root)
    const p = await spawnService({ ...env, BACKEND_TYPE: 'memory', DISABLE_STATS: 'true' })
    try {
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${String(port)}/healthcheck`)).status === 200,
        { what: () => `the service to listen (output: ${p.output()})`, timeout: 20_000 },
      )
      const hostile = 'GET http://[/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
      const debug = await rawExchange(debugPort, hostile)
      expect(debug).toMatch(/^HTTP\/1\.1 400 /)
      expect(debug).toContain('malformed request target')
      expect(await rawExchange(port, hostile)).toMatch(/^HTTP\/1\.1 400 /)
      await rawExchange(grpcPort, hostile)
      // Still serving on every port.
      expect((await fetch(`http://127.0.0.1:${String(port)}/healthcheck`)).status).toBe(200)
      expect((await fetch(`http://127.0.0.1:${String(debugPort)}/rlconfig`)).status).toBe(200)
      expect(p.child.exitCode).toBeNull()
    } finally {
      await p.stop('SIGKILL')
    }
  })

  it('drains an in-flight call on SIGTERM before exiting 0', async () => {
    const redisPort = await getFreePort()
    const redis = await startProcess('redis-server', [
      '--bind',
      '127.0.0.1',
      '--port',
      String(redisPort),
      '--save',
      '',
      '--appendonly',
      'no',
    ])
    await waitFor(() => ping('127.0.0.1', redisPort), { what: 'redis' })
    // A proxy in front of Redis holds the first command that counts the `drain` descriptor: the
    // call is then in flight, inside the service, until the proxy lets it through.
    let inside: () => void = () => undefined
    const callInside = new Promise<void>((resolve) => {
      inside = resolve
    })
    let release: () => void = () => undefined
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    const proxy = createServer((client) => {
      const upstream = connect(redisPort, '127.0.0.1')
      let held = false
      client.on('data', (chunk) => {
        if (!held && chunk.includes('drain')) {
          held = true
          client.pause()
          inside()
          void released.then(() => {
            upstream.write(chunk)
            client.resume()
          })
          return
        }
        if (held) return void released.then(() => upstream.write(chunk))
        upstream.write(chunk)
      })
      upstream.pipe(client)
      client.on('error', () => upstream.destroy())
      upstream.on('error', () => client.destroy())
      client.on('close', () => upstream.destroy())
    })
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
    const proxyPort = (proxy.address() as AddressInfo).port
    const { port, env } = await loopbackEnv(root)
    const p = await spawnService({
      ...env,
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_URL: `127.0.0.1:${String(proxyPort)}`,
      DISABLE_STATS: 'true',
    })
    try {
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${String(port)}/healthcheck`)).status === 200,
        {
          what: () => `the service to be healthy (output: ${p.output()})`,
          timeout: 20_000,
        },
      )
      const inFlight = fetch(`http://127.0.0.1:${String(port)}/json`, {
        method: 'POST',
        body: JSON.stringify({
          domain: 'basic',
          descriptors: [{ entries: [{ key: 'key1', value: 'drain' }] }],
        }),
      })
      await callInside
      p.child.kill('SIGTERM')
      // Draining: the service stops listening (a new connection is refused) while the held call
      // is still in flight.
      const refused = () =>
        new Promise<boolean>((resolve) => {
          const socket = connect(port, '127.0.0.1')
          socket.once('connect', () => {
            socket.destroy()
            resolve(false)
          })
          socket.once('error', () => {
            resolve(true)
          })
        })
      await waitFor(refused, {
        what: () => `the service to stop listening (output: ${p.output()})`,
      })
      expect(p.child.exitCode).toBeNull()
      release()
      const answer = await inFlight
      expect(answer.status).toBe(200)
      expect(await exitCode(p), `exit code (output: ${p.output()})`).toBe(0)
    } finally {
      release()
      await p.stop('SIGKILL')
      proxy.close()
      await redis.stop()
    }
  })
})
