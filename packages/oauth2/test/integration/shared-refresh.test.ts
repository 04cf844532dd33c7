import { once } from 'node:events'
import type { Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { redisKeyPrefix, sharedRedisUrl } from '@gatehouse/testing'
import { Client, pkce, RedisTokenStore } from '@gatehouse/oauth2'
import {
  authorize,
  REDIRECT_URI,
  startProvider,
  WEB_SECRET,
  type TestProvider,
} from '../support/oidc-provider.js'
import type { WorkerInput, WorkerMessage } from '../support/shared-refresh-worker.js'

type Middleware = Parameters<TestProvider['provider']['use']>[0]

const BOOT = fileURLToPath(new URL('../support/worker-boot.mjs', import.meta.url))
const BODY = fileURLToPath(new URL('../support/shared-refresh-worker.ts', import.meta.url))
const LEASE_TTL_MS = 1000

/**
 * Refresh once across processes (issue 33 item 6): worker threads, each with its own client and
 * Redis connection, share one token through a RedisTokenStore, against an oidc-provider that
 * rotates refresh tokens and revokes the whole grant when one is used twice.
 */
describe('a token shared by worker threads through a RedisTokenStore', () => {
  let op: TestProvider
  let redis: Redis
  const keyPrefix = redisKeyPrefix('oauth2-shared-refresh')
  const refreshes = { success: 0, error: [] as string[] }
  /** While set, token requests wait for it (or for their client to go away) before they run. */
  let gate: { held: () => void; open: Promise<void>; dropped: () => void } | undefined

  /** Holds token requests while `gate` is set, and drops those whose client went away. */
  const gateTokenRequests: Middleware = async (ctx, next) => {
    const held = gate
    if (held !== undefined && ctx.path === '/token' && ctx.method === 'POST') {
      const socket: Socket = ctx.req.socket
      held.held()
      const gone = once(socket, 'close').then(() => 'gone' as const)
      if ((await Promise.race([held.open.then(() => 'open' as const), gone])) === 'gone') {
        // The client died with its request in flight: the server never sees the refresh.
        held.dropped()
        ctx.respond = false
        return
      }
    }
    await next()
  }

  beforeAll(async () => {
    redis = new Redis(sharedRedisUrl())
    op = await startProvider({
      configure(configuration) {
        configuration.rotateRefreshToken = true
      },
      setup: (provider) => {
        provider.use(gateTokenRequests)
      },
    })
    op.provider.on('grant.success', (ctx) => {
      if (ctx.oidc.params?.grant_type === 'refresh_token') refreshes.success++
    })
    op.provider.on('grant.error', (ctx, error) => {
      if (ctx.oidc.params?.grant_type === 'refresh_token') refreshes.error.push(error.message)
    })
  })

  afterAll(async () => {
    const keys = await redis.keys(`${keyPrefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    await redis.quit()
    await op.stop()
  })

  /** Signs alice in (offline_access) and stores her token, already expired, under a new key. */
  async function storeExpiredToken(): Promise<{ key: string; accessToken: string }> {
    const client = await Client.discover(op.issuer, 'web-app', WEB_SECRET, {
      redirect_uri: REDIRECT_URI,
    })
    const { code_verifier, code_challenge, code_challenge_method } = pkce()
    const url = client.authCode.authorizeUrl({
      scope: 'openid offline_access',
      prompt: 'consent',
      state: 's',
      code_challenge,
      code_challenge_method,
    })
    const token = await client.authCode.getTokenFromCallback(
      `${REDIRECT_URI}?${(await authorize(url)).toString()}`,
      { state: 's', codeVerifier: code_verifier },
    )
    const key = crypto.randomUUID()
    const store = new RedisTokenStore(redis, { keyPrefix })
    await store.set(key, {
      access_token: token.token,
      refresh_token: token.refreshToken,
      token_type: 'Bearer',
      expires_at: Math.floor(Date.now() / 1000) - 10,
    })
    return { key, accessToken: token.token }
  }

  /** Starts a worker; resolves once it has read the store and waits for go. */
  async function startWorker(key: string, concurrency: number) {
    const input: WorkerInput & { file: string } = {
      file: BODY,
      issuer: op.issuer,
      clientId: 'web-app',
      clientSecret: WEB_SECRET,
      redisUrl: sharedRedisUrl(),
      keyPrefix,
      key,
      concurrency,
      leaseTtlMs: LEASE_TTL_MS,
    }
    const worker = new Worker(BOOT, { workerData: input })
    const messages: WorkerMessage[] = []
    let onDone: (message: WorkerMessage) => void = () => {}
    const done = new Promise<Extract<WorkerMessage, { type: 'done' }>>((resolve, reject) => {
      onDone = (message) => {
        if (message.type === 'done') resolve(message)
      }
      worker.once('error', reject)
    })
    worker.on('message', (message: WorkerMessage) => {
      messages.push(message)
      onDone(message)
    })
    await new Promise<void>((resolve, reject) => {
      worker.once('error', reject)
      worker.on('message', (message: WorkerMessage) => {
        if (message.type === 'ready') resolve()
      })
    })
    return {
      go: () => {
        worker.postMessage('go')
      },
      done,
      terminate: () => worker.terminate(),
    }
  }

  it('refreshes exactly once for four workers of five concurrent requests each, all served', async () => {
    const { key, accessToken } = await storeExpiredToken()
    const before = refreshes.success
    const workers = await Promise.all([1, 2, 3, 4].map(() => startWorker(key, 5)))
    for (const worker of workers) worker.go()
    const results = await Promise.all(workers.map((worker) => worker.done))
    expect(refreshes.error).toEqual([])
    expect(refreshes.success - before).toBe(1)
    for (const result of results) {
      expect(result.errors).toEqual([])
      expect(result.statuses).toEqual([200, 200, 200, 200, 200])
    }
    const tokens = new Set(results.map((result) => result.accessToken))
    expect(tokens.size).toBe(1)
    expect(tokens.has(accessToken)).toBe(false)
    const stored = await new RedisTokenStore(redis, { keyPrefix }).get(key)
    expect(stored?.access_token).toBe([...tokens][0])
  })

  it('takes over after the lease TTL when the lease holder dies with its refresh in flight', async () => {
    const { key } = await storeExpiredToken()
    const before = refreshes.success
    let held!: () => void
    let dropped!: () => void
    let open!: () => void
    const heldAt = new Promise<void>((resolve) => (held = resolve))
    const droppedAt = new Promise<void>((resolve) => (dropped = resolve))
    gate = { held, dropped, open: new Promise<void>((resolve) => (open = resolve)) }
    try {
      const holder = await startWorker(key, 1)
      holder.go()
      await heldAt
      // the holder took the lease and its refresh reached the server
      const waiters = await Promise.all([startWorker(key, 3), startWorker(key, 3)])
      for (const waiter of waiters) waiter.go()
      await holder.terminate()
      await droppedAt
      gate = undefined
      open()
      const results = await Promise.all(waiters.map((waiter) => waiter.done))
      expect(refreshes.error).toEqual([])
      expect(refreshes.success - before).toBe(1)
      for (const result of results) {
        expect(result.errors).toEqual([])
        expect(result.statuses).toEqual([200, 200, 200])
      }
      expect(new Set(results.map((result) => result.accessToken)).size).toBe(1)
    } finally {
      gate = undefined
      open()
    }
  })
})
