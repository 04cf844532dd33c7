/**
 * The multi-instance example as its README runs it: the rate limit service with the config
 * `gatehouse-auth ratelimit-config` generates from `auth.env`, two `gatehouse-auth` instances
 * reading `auth.env` on one PostgreSQL database, and the proxy in front of them.
 */
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import {
  createTestDatabase,
  getFreePort,
  startProcess,
  type ManagedProcess,
  type TestDatabase,
} from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ROOT,
  executable,
  startRateLimitService,
  waitUntilOk,
  type ExampleRateLimitService,
} from '../support/run-example.js'
import { startProxy } from './proxy.js'

const run = promisify(execFile)
const [NODE, AUTH] = executable('gatehouse-auth')
const ENV_FILE = 'examples/auth-behind-proxy/auth.env'

let database: TestDatabase
let runtimeRoot = ''
let service: ExampleRateLimitService
let instances: ManagedProcess[] = []
let proxy: Awaited<ReturnType<typeof startProxy>>
const upstreams: string[] = []

beforeAll(async () => {
  database = await createTestDatabase('auth_behind_proxy')
  runtimeRoot = await mkdtemp(join(tmpdir(), 'auth-behind-proxy-'))
  // The rate limit service, with the config generated from the same settings.
  await mkdir(join(runtimeRoot, 'config'))
  const { stdout: yaml } = await run(NODE, [AUTH, 'ratelimit-config', '--env-file', ENV_FILE], {
    cwd: ROOT,
  })
  await writeFile(join(runtimeRoot, 'config', 'gatehouse-auth.yaml'), yaml)
  service = await startRateLimitService(runtimeRoot)
  // What differs from the README: this test's database, ports and Redis key prefix.
  const authEnv = {
    ...process.env,
    DATABASE_URL: database.url,
    AUTHSVC_RATE_LIMIT_SERVICE_ADDRESS: service.grpcAddress,
  }

  // Two auth instances on one database.
  const ports = [await getFreePort(), await getFreePort()]
  instances = await Promise.all(
    ports.map((port) =>
      startProcess(NODE, [AUTH, '--env-file', ENV_FILE], {
        cwd: ROOT,
        env: { ...authEnv, PORT: String(port) },
      }),
    ),
  )
  upstreams.push(...ports.map((port) => `127.0.0.1:${String(port)}`))
  await Promise.all(
    upstreams.map((upstream, i) =>
      waitUntilOk(`http://${upstream}/health`, instances[i] as ManagedProcess),
    ),
  )
  proxy = await startProxy({ upstreams, port: 0 })
}, 180_000)

afterAll(async () => {
  await proxy.close()
  await Promise.all(instances.map((instance) => instance.stop()))
  await service.process.stop()
  await database.drop()
  if (runtimeRoot !== '') await rm(runtimeRoot, { recursive: true, force: true })
})

const post = (path: string, body: object, headers: Record<string, string> = {}) =>
  fetch(`${proxy.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })

describe('two auth instances behind a proxy', () => {
  it('share one database: signed up on one instance, signed in on the other', async () => {
    const user = { email: 'ada@example.com', password: 'correct-horse-1' }
    const signup = await post('/signup', user)
    expect(signup.status).toBe(200)
    const signin = await post('/token?grant_type=password', user)
    expect(signin.status).toBe(200)
    expect(signin.headers.get('x-upstream')).not.toBe(signup.headers.get('x-upstream'))
    const session = (await signin.json()) as { refresh_token: string; user: { email: string } }
    expect(session.user.email).toBe(user.email)
    // The refresh token issued by one instance is exchanged by the other.
    const refreshed = await post('/token?grant_type=refresh_token', {
      refresh_token: session.refresh_token,
    })
    expect(refreshed.status).toBe(200)
    expect(refreshed.headers.get('x-upstream')).toBe(signup.headers.get('x-upstream'))
  })

  it('share one rate limit budget per client, as the proxy names it', async () => {
    // The refresh above spent one of the burst of 30 refreshes (auth.env); the password grant
    // has a bucket of its own.
    const answers = await Promise.all(
      Array.from({ length: 30 }, () =>
        post('/token?grant_type=refresh_token', { refresh_token: 'not-a-token' }),
      ),
    )
    const statuses = answers.map((answer) => answer.status).sort()
    expect(statuses.filter((status) => status === 400)).toHaveLength(29)
    expect(statuses.filter((status) => status === 429)).toHaveLength(1)
    // Spread over both instances, which counted alone would have allowed 30 each.
    const servedBy = new Set(answers.map((answer) => answer.headers.get('x-upstream')))
    expect([...servedBy].sort()).toEqual([...upstreams].sort())
    const refused = answers.find((answer) => answer.status === 429)
    expect(((await refused?.json()) as { error_code?: string }).error_code).toBe(
      'over_request_rate_limit',
    )
  })

  it('names the client itself: an X-Real-IP sent by the client is overwritten', async () => {
    // A client claiming another address still spends (and has spent) its own budget.
    const answer = await post(
      '/token?grant_type=refresh_token',
      { refresh_token: 'not-a-token' },
      { 'x-real-ip': '203.0.113.9' },
    )
    expect(answer.status).toBe(429)
  })
})
