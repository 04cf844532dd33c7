/**
 * The Envoy example as its README runs it, with the stand-in for Envoy: the rate limit service
 * (its executable, this directory's config) on the shared Redis under a key prefix, the backend,
 * and the stand-in speaking the rate limit filter's gRPC protocol.
 */
import { sharedRedisUrl } from '@gatehouse/testing'
import { Redis } from 'ioredis'
import type { Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startRateLimitService, type ExampleRateLimitService } from '../support/run-example.js'
import { startBackend } from './backend.js'
import { startEnvoyStandin } from './envoy-standin.js'

let service: ExampleRateLimitService
let prefix = ''
let backend: Server
let standin: Awaited<ReturnType<typeof startEnvoyStandin>>
let redis: Redis

beforeAll(async () => {
  // The README's command, on ports of its own and a key prefix on the shared Redis.
  service = await startRateLimitService('examples/envoy-ratelimit')
  prefix = service.keyPrefix
  const started = await startBackend(0)
  backend = started.server
  standin = await startEnvoyStandin({
    backendUrl: started.url,
    rateLimitAddress: service.grpcAddress,
    port: 0,
    // Envoy's 250 ms would let requests through on a busy test machine; the decisions are the test.
    timeoutMs: 10_000,
  })
  redis = new Redis(sharedRedisUrl())
}, 180_000)

afterAll(async () => {
  await standin.close()
  backend.closeAllConnections()
  await new Promise((resolve) => backend.close(resolve))
  await service.process.stop()
  const keys = await redis.keys(`${prefix}*`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
})

const get = (path: string, user?: string) =>
  fetch(`${standin.url}${path}`, { headers: user === undefined ? {} : { 'x-user-id': user } })

describe('Envoy + rate limit service + Redis', () => {
  it('lets a user through three times an hour, then answers 429 as Envoy does', async () => {
    const answers = []
    for (let i = 0; i < 4; i++) answers.push(await get('/', 'alice'))
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 429])
    expect(answers.map((answer) => answer.headers.get('x-ratelimit-remaining'))).toEqual([
      '2',
      '1',
      '0',
      '0',
    ])
    expect(answers[0]?.headers.get('x-ratelimit-limit')).toBe('3, 3;w=3600')
    expect(Number(answers[0]?.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0)
    expect(await answers[0]?.json()).toEqual({ hello: 'alice', path: '/' })
    expect(answers[3]?.headers.get('x-envoy-ratelimited')).toBe('true')
    // Another user has a budget of its own.
    expect((await get('/', 'bob')).status).toBe(200)
  })

  it('applies the nested (user_id, path) rule to its own descriptor', async () => {
    const uploads = [await get('/upload', 'bulk-uploader'), await get('/upload', 'bulk-uploader')]
    expect(uploads.map((answer) => answer.status)).toEqual([200, 429])
    // (user_id, bulk-uploader) matches its own rule, which has no limit but the nested one.
    expect(uploads[1]?.headers.get('x-ratelimit-limit')).toBe('1, 1;w=3600')
    expect((await get('/', 'bulk-uploader')).headers.get('x-ratelimit-limit')).toBeNull()
  })

  it('asks nothing for a request without the header (no descriptor)', async () => {
    for (let i = 0; i < 5; i++) {
      const answer = await get('/')
      expect(answer.status).toBe(200)
      expect(answer.headers.get('x-ratelimit-limit')).toBeNull()
    }
  })

  it("counts in Redis under upstream's keys", async () => {
    const keys = (await redis.keys(`${prefix}edge_user_id_alice_*`)).map((key) =>
      key.slice(prefix.length),
    )
    // One hour window, keyed by its start (epoch seconds, a multiple of 3600).
    expect(keys).toHaveLength(1)
    const windowStart = Number(/^edge_user_id_alice_(\d+)$/.exec(keys[0] ?? '')?.[1])
    expect(windowStart % 3600).toBe(0)
    expect(Date.now() / 1000 - windowStart).toBeGreaterThanOrEqual(0)
    expect(Date.now() / 1000 - windowStart).toBeLessThan(3600 + 60)
    // The fixed window counts refused hits too (as upstream).
    expect(await redis.get(`${prefix}${keys[0] ?? ''}`)).toBe('4')
    expect(await redis.ttl(`${prefix}${keys[0] ?? ''}`)).toBeGreaterThan(0)
  })

  it('lets requests through while the service is down (failure_mode_deny: false)', async () => {
    await service.process.stop()
    const answer = await get('/', 'alice')
    expect(answer.status).toBe(200)
    expect(answer.headers.get('x-ratelimit-limit')).toBeNull()
  })
})
