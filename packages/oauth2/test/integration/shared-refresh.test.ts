import type { EventEmitter } from 'node:events'
import { once } from 'node:events'
import type { Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { redisKeyPrefix, sharedRedisUrl, sourceEntryArgs, startProcess } from '@gatehouse/testing'
import { Client, pkce, RedisTokenStore } from '@gatehouse/oauth2'
import {
  authorize,
  REDIRECT_URI,
  startProvider,
  WEB_SECRET,
  type TestProvider,
} from '../support/oidc-provider.js'
import type {
  ParticipantInput,
  ParticipantMessage,
  ParticipantRound,
} from '../support/shared-refresh-participant.js'

type Middleware = Parameters<TestProvider['provider']['use']>[0]
type Done = Extract<ParticipantMessage, { type: 'done' }>

const BOOT = fileURLToPath(new URL('../support/worker-boot.mjs', import.meta.url))
const BODY = fileURLToPath(new URL('../support/shared-refresh-participant.ts', import.meta.url))
const LEASE_TTL_MS = 1000

/** A participant as the test started it, before it said ready. */
interface Started {
  /** Emits `'message'` (a {@link ParticipantMessage}), `'exit'` and `'error'`. */
  readonly events: EventEmitter
  send(message: ParticipantRound): void
  /** Kills it (a thread: terminate; a process: SIGKILL) and resolves once it is gone. */
  kill(): Promise<unknown>
  /** What it printed, for failure messages (a thread prints to the test's own output). */
  output(): string
}

/** A started participant, ready for rounds. */
interface Participant {
  /** Runs a round; resolves with what its requests got. */
  round(round: ParticipantRound): Promise<Done>
  kill(): Promise<unknown>
}

function startThread(input: ParticipantInput): Promise<Started> {
  const worker = new Worker(BOOT, { workerData: { ...input, file: BODY } })
  return Promise.resolve({
    events: worker,
    send: (message) => {
      worker.postMessage(message)
    },
    kill: () => worker.terminate(),
    output: () => '',
  })
}

async function startChildProcess(input: ParticipantInput): Promise<Started> {
  const started = await startProcess(
    process.execPath,
    [...sourceEntryArgs(BODY), JSON.stringify(input)],
    { ipc: true },
  )
  return {
    events: started.child,
    send: (message) => started.child.send(message),
    kill: () => started.stop('SIGKILL'),
    output: () => started.output(),
  }
}

/** The participant's next message of `type`; rejects when it exits or fails first. */
function nextMessage<T extends ParticipantMessage['type']>(
  started: Started,
  type: T,
): Promise<Extract<ParticipantMessage, { type: T }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: ParticipantMessage): void => {
      if (message.type !== type) return
      off()
      resolve(message as Extract<ParticipantMessage, { type: T }>)
    }
    const onExit = (code: number | null, signal?: NodeJS.Signals | null): void => {
      off()
      const status = String(signal ?? code)
      reject(new Error(`the participant exited (${status}) before '${type}': ${started.output()}`))
    }
    const onError = (error: Error): void => {
      off()
      reject(error)
    }
    const off = (): void => {
      started.events.off('message', onMessage).off('exit', onExit).off('error', onError)
    }
    started.events.on('message', onMessage).on('exit', onExit).on('error', onError)
  })
}

/**
 * Refresh once across processes (issue 33 item 6): worker threads, then child processes, each
 * with its own client and Redis connection, share one token through a RedisTokenStore, against an
 * oidc-provider that rotates refresh tokens and revokes the whole grant when one is used twice.
 */
describe('a token shared through a RedisTokenStore', () => {
  let op: TestProvider
  let redis: Redis
  const keyPrefix = redisKeyPrefix('oauth2-shared-refresh')
  const refreshes = { success: 0, lastSuccessAt: 0, error: [] as string[] }
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
      if (ctx.oidc.params?.grant_type !== 'refresh_token') return
      refreshes.success++
      refreshes.lastSuccessAt = performance.now()
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
    await client.close()
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

  describe.each([
    { kind: 'worker threads', start: startThread },
    { kind: 'child processes', start: startChildProcess },
  ])('by $kind', ({ start }) => {
    /**
     * Four participants for both tests (starting one costs most of the time): the first test
     * uses them all, the second three, and kills one of them.
     */
    let participants: Participant[] = []

    /** Starts a participant; resolves once it is ready for rounds. */
    async function startParticipant() {
      const started = await start({
        issuer: op.issuer,
        clientId: 'web-app',
        clientSecret: WEB_SECRET,
        redisUrl: sharedRedisUrl(),
        keyPrefix,
        leaseTtlMs: LEASE_TTL_MS,
      })
      const ready = nextMessage(started, 'ready')
      participants.push({
        round: (round) => {
          const done = nextMessage(started, 'done')
          // A participant killed on purpose never reports: not an unhandled rejection.
          done.catch(() => {})
          started.send(round)
          return done
        },
        kill: () => started.kill(),
      })
      await ready
    }

    beforeAll(async () => {
      await Promise.all([1, 2, 3, 4].map(() => startParticipant()))
    })

    afterAll(async () => {
      await Promise.all(participants.map((participant) => participant.kill()))
      participants = []
    })

    it('refreshes exactly once for four of them with five concurrent requests each, all served', async () => {
      const { key, accessToken } = await storeExpiredToken()
      const before = refreshes.success
      const results = await Promise.all(
        participants.map((participant) => participant.round({ key, concurrency: 5 })),
      )
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

    it('takes over after the lease TTL when the lease holder is killed with its refresh in flight', async () => {
      const { key } = await storeExpiredToken()
      const before = refreshes.success
      const [holder, ...waiters] = participants.slice(1)
      let held!: () => void
      let dropped!: () => void
      let open!: () => void
      const heldAt = new Promise<void>((resolve) => (held = resolve))
      const droppedAt = new Promise<void>((resolve) => (dropped = resolve))
      gate = { held, dropped, open: new Promise<void>((resolve) => (open = resolve)) }
      try {
        void holder?.round({ key, concurrency: 1 })
        await heldAt
        // The holder took the lease and its refresh reached the server.
        const heldTime = performance.now()
        const done = waiters.map((waiter) => waiter.round({ key, concurrency: 3 }))
        await holder?.kill()
        await droppedAt
        gate = undefined
        open()
        const results = await Promise.all(done)
        expect(refreshes.error).toEqual([])
        expect(refreshes.success - before).toBe(1)
        // The waiters refreshed only once the dead holder's lease ran out (its TTL counts from
        // a little before its request was held).
        expect(refreshes.lastSuccessAt - heldTime).toBeGreaterThan(LEASE_TTL_MS / 2)
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
})
