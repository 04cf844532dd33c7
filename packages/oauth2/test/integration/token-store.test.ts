import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  FakeClock,
  redisKeyPrefix,
  sharedRedisUrl,
  startHttpServer,
  type TestHttpServer,
} from '@gatehouse/testing'
import {
  AccessToken,
  Client,
  MemoryTokenStore,
  RedisTokenStore,
  type TokenStore,
} from '@gatehouse/oauth2'
import { argError } from '../support/expect.js'
import { SteppingClock } from '../support/stepping-clock.js'

/** The TokenStore contract (issue 33 item 6), for the memory store and Redis (shared server). */
describe('token stores', () => {
  let redis: Redis
  const prefix = redisKeyPrefix('oauth2-token-store')

  beforeAll(() => {
    redis = new Redis(sharedRedisUrl())
  })

  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    await redis.quit()
  })

  /** The stores, with a way to let a lease's TTL run out. */
  const stores: [
    string,
    () => { store: TokenStore; expire: (key: string, ms: number) => Promise<void> },
  ][] = [
    [
      'MemoryTokenStore',
      () => {
        const clock = new FakeClock(1_000_000)
        return {
          store: new MemoryTokenStore(clock),
          expire: (_key, ms) => {
            clock.advance(ms)
            return Promise.resolve()
          },
        }
      },
    ],
    [
      'RedisTokenStore',
      () => ({
        store: new RedisTokenStore(redis, { keyPrefix: prefix }),
        // The lease runs out on Redis's clock: end it as its TTL would, without waiting.
        expire: async (key) => {
          await redis.del(`${prefix}{${key}}:lease`)
        },
      }),
    ],
  ]

  describe.each(stores)('%s', (_name, make) => {
    it('stores and reads a token hash', async () => {
      const { store } = make()
      const key = crypto.randomUUID()
      expect(await store.get(key)).toBeUndefined()
      expect(await store.set(key, { access_token: 'a', refresh_token: 'r', expires_at: 5 })).toBe(
        true,
      )
      expect(await store.get(key)).toEqual({ access_token: 'a', refresh_token: 'r', expires_at: 5 })
    })

    it('grants one lease at a time with growing fencing tokens, and again after the TTL', async () => {
      const { store, expire } = make()
      const key = crypto.randomUUID()
      const first = await store.acquire(key, 60_000)
      expect(first).toBe(1)
      expect(await store.acquire(key, 60_000)).toBeUndefined()
      await store.release(key, 99) // not its lease: nothing happens
      expect(await store.acquire(key, 60_000)).toBeUndefined()
      await store.release(key, first ?? 0)
      const second = await store.acquire(key, 60_000)
      expect(second).toBe(2)
      // The holder dies: after the TTL another takes over, with a newer fence.
      await expire(key, 60_000)
      const third = await store.acquire(key, 60_000)
      expect(third).toBe(3)
    })

    it('refuses a write under a stale fence (the lease was taken over), accepts the newest', async () => {
      const { store, expire } = make()
      const key = crypto.randomUUID()
      const stale = (await store.acquire(key, 60_000)) ?? 0
      await expire(key, 60_000)
      const current = (await store.acquire(key, 60_000)) ?? 0
      expect(await store.set(key, { access_token: 'late' }, stale)).toBe(false)
      expect(await store.set(key, { access_token: 'new' }, current)).toBe(true)
      expect(await store.get(key)).toEqual({ access_token: 'new' })
      // A waiter failing to take the lease does not make the holder's fence stale.
      expect(await store.acquire(key, 60_000)).toBeUndefined()
      expect(await store.set(key, { access_token: 'again' }, current)).toBe(true)
    })
  })

  it('RedisTokenStore keeps its three keys in one cluster slot and falls back to EVAL on NOSCRIPT', async () => {
    const store = new RedisTokenStore(redis, { keyPrefix: prefix })
    const key = 'user-1'
    await store.set(key, { access_token: 'x' })
    expect(await redis.get(`${prefix}{user-1}`)).toBe('{"access_token":"x"}')
    // A client that never saw the scripts: EVALSHA fails with NOSCRIPT on a fresh sha; simulate with
    // a store whose redis answers NOSCRIPT once.
    let noscript = 0
    const flaky = {
      get: (k: string) => redis.get(k),
      eval: (script: string, n: number, ...args: (string | number)[]) =>
        redis.eval(script, n, ...args),
      evalsha: (sha: string, n: number, ...args: (string | number)[]) => {
        if (noscript++ === 0) return Promise.reject(new Error('NOSCRIPT No matching script.'))
        return redis.evalsha(sha, n, ...args)
      },
    }
    const other = new RedisTokenStore(flaky, { keyPrefix: prefix })
    expect(await other.acquire('user-2', 1000)).toBe(1)
    expect(noscript).toBe(1)
    expect(() => new RedisTokenStore({} as never)).toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"redis" must be an ioredis client'),
    )
  })
})

/** Tokens of one process sharing a MemoryTokenStore, against a token endpoint that counts refreshes. */
describe('AccessToken with a store', () => {
  let server: TestHttpServer
  let refreshes = 0
  const used = new Set<string>()

  beforeAll(async () => {
    server = await startHttpServer((req, res) => {
      let body = ''
      req.on('data', (chunk: Buffer) => (body += chunk.toString()))
      req.on('end', () => {
        const form = new URLSearchParams(body)
        if (req.url === '/token') {
          const refresh = form.get('refresh_token') ?? ''
          if (used.has(refresh)) {
            res.writeHead(400, { 'content-type': 'application/json' })
            res.end('{"error":"invalid_grant","error_description":"refresh token already used"}')
            return
          }
          used.add(refresh)
          refreshes++
          res.writeHead(200, { 'content-type': 'application/json' })
          res.end(
            JSON.stringify({
              access_token: `at-${String(refreshes)}`,
              refresh_token: `rt-${String(refreshes)}`,
              token_type: 'Bearer',
              expires_in: 3600,
            }),
          )
          return
        }
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ authorization: req.headers.authorization }))
      })
    })
  })

  afterAll(async () => {
    await server.close()
  })

  function setup(realStore = false) {
    // The client waits on a clock that steps (no real waits); lease TTLs run on the store's clock,
    // which only the test moves (as real time would not pass during instant waits).
    const clock = new SteppingClock(1_700_000_000_000)
    const storeClock = new FakeClock(1_700_000_000_000)
    const client = new Client('id', 'secret', { site: server.url, tokenUrl: '/token', clock })
    const store = realStore ? new MemoryTokenStore() : new MemoryTokenStore(storeClock)
    const key = crypto.randomUUID()
    const expired = {
      access_token: 'at-0',
      refresh_token: `rt-0-${key}`,
      expires_at: Math.floor(Math.min(clock.now(), Date.now()) / 1000) - 1,
    }
    return { storeClock, client, store, key, expired }
  }

  it('refreshes once for several tokens sharing the key; the others take the stored token', async () => {
    // Real time here: the waiters poll while the holder's refresh is on the wire.
    const { store, key, expired } = setup(true)
    const client = new Client('id', 'secret', { site: server.url, tokenUrl: '/token' })
    await store.set(key, expired)
    const tokens = await Promise.all(
      [1, 2, 3].map(() => AccessToken.fromStore(client, { store, key, pollIntervalMs: 10 })),
    )
    const before = refreshes
    const answers = await Promise.all(tokens.map((token) => token.fetch('/api')))
    expect(refreshes - before).toBe(1)
    expect(
      new Set(answers.map((a) => (a.parsed as { authorization: string }).authorization)).size,
    ).toBe(1)
    expect((await store.get(key))?.access_token).toBe(tokens[0]?.token)
  })

  it('waits at most waitTimeoutMs while another holds the lease (token_store_timeout), and takes over after its TTL', async () => {
    const { client, store, key, expired, storeClock } = setup()
    await store.set(key, expired)
    const token = await AccessToken.fromStore(client, {
      store,
      key,
      leaseTtlMs: 5000,
      waitTimeoutMs: 1000,
      pollIntervalMs: 100,
    })
    await store.acquire(key, 5000) // a process that dies holding the lease
    await expect(token.fetch('/api')).rejects.toMatchObject({ code: 'token_store_timeout' })
    storeClock.advance(5000) // its TTL runs out
    const patient = await AccessToken.fromStore(client, { store, key, leaseTtlMs: 5000 })
    const before = refreshes
    expect((await patient.fetch('/api')).status).toBe(200)
    expect(refreshes - before).toBe(1)
  })

  it('saves a token to its store, and checks its store option', async () => {
    const { client, store, key } = setup()
    const token = new AccessToken(client, 'fresh', { refresh_token: 'r', store: { store, key } })
    await token.saveToStore()
    expect(await store.get(key)).toEqual({ access_token: 'fresh', refresh_token: 'r' })
    await expect(AccessToken.fromStore(client, { store, key: 'missing' })).rejects.toMatchObject({
      code: 'no_token',
    })
    expect(() => new AccessToken(client, 't', { store: { store, key: '' } })).toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"opts.store.key" must be a non-empty string'),
    )
    expect(() => new AccessToken(client, 't', { store: { store, key, ttl: 1 } as never })).toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"opts.store.ttl" is not understood'),
    )
  })
})
