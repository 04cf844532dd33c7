/**
 * A worker thread of the shared refresh test: its own client and Redis connection, a token read
 * from the RedisTokenStore, and `concurrency` requests to UserInfo through `token.fetch` once the
 * test says go. Imports the package's sources (workers do not get the dev-source condition).
 */
import { parentPort, workerData } from 'node:worker_threads'
import { Redis } from 'ioredis'
import { AccessToken, Client, RedisTokenStore } from '../../src/index.js'

export interface WorkerInput {
  readonly issuer: string
  readonly clientId: string
  readonly clientSecret: string
  readonly redisUrl: string
  readonly keyPrefix: string
  readonly key: string
  readonly concurrency: number
  readonly leaseTtlMs: number
}

export type WorkerMessage =
  | { readonly type: 'ready' }
  | {
      readonly type: 'done'
      readonly statuses: number[]
      readonly errors: string[]
      readonly accessToken: string
    }

const input = workerData as WorkerInput & { file: string }
const port = parentPort
if (port === null) throw new Error('not a worker')
const redis = new Redis(input.redisUrl)
const client = await Client.discover(input.issuer, input.clientId, input.clientSecret)
const store = new RedisTokenStore(redis, { keyPrefix: input.keyPrefix })
const token = await AccessToken.fromStore(client, {
  store,
  key: input.key,
  leaseTtlMs: input.leaseTtlMs,
  pollIntervalMs: 20,
})
const userinfo = String(client.options.userinfoUrl)
const go = new Promise((resolve) => port.once('message', resolve))
port.postMessage({ type: 'ready' } satisfies WorkerMessage)
await go
const results = await Promise.allSettled(
  Array.from({ length: input.concurrency }, () => token.fetch(userinfo)),
)
port.postMessage({
  type: 'done',
  statuses: results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.status] : [])),
  errors: results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : [])),
  accessToken: token.token,
} satisfies WorkerMessage)
await redis.quit()
await client.close()
