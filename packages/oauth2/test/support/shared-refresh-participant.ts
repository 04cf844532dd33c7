/**
 * One participant of the shared refresh test, run as a worker thread (through worker-boot.mjs,
 * input in `workerData`) or as a child process (through tsx, input as JSON in its first argument,
 * messages over its IPC channel): its own client and Redis connection, and for each round the test
 * asks for, the token read from the RedisTokenStore under the round's key and `concurrency`
 * requests to UserInfo through `token.fetch`. It runs rounds until the test ends it. Imports the
 * package's sources (worker threads do not get the dev-source condition).
 */
import { on } from 'node:events'
import { parentPort, workerData } from 'node:worker_threads'
import { Redis } from 'ioredis'
import { AccessToken, Client, RedisTokenStore } from '../../src/index.js'

export interface ParticipantInput {
  readonly issuer: string
  readonly clientId: string
  readonly clientSecret: string
  readonly redisUrl: string
  readonly keyPrefix: string
  readonly leaseTtlMs: number
}

/** What the test asks for: read the token under `key` and send `concurrency` requests with it. */
export interface ParticipantRound {
  readonly key: string
  readonly concurrency: number
}

/** What a participant tells the test: it is ready for rounds, then what a round's requests got. */
export type ParticipantMessage =
  | { readonly type: 'ready' }
  | {
      readonly type: 'done'
      readonly statuses: number[]
      readonly errors: string[]
      readonly accessToken: string
    }

/** The way to the test: a worker thread's port, or a child process's IPC channel. */
interface Channel {
  readonly input: ParticipantInput
  readonly send: (message: ParticipantMessage) => void
  readonly rounds: AsyncIterable<[ParticipantRound]>
}

function channel(): Channel {
  const port = parentPort
  if (port !== null) {
    return {
      input: workerData as ParticipantInput,
      send: (message) => {
        port.postMessage(message)
      },
      rounds: on(port, 'message') as AsyncIterable<[ParticipantRound]>,
    }
  }
  const send = process.send?.bind(process)
  if (send === undefined) throw new Error('started neither as a worker thread nor with IPC')
  return {
    input: JSON.parse(process.argv[2] ?? '') as ParticipantInput,
    send: (message) => {
      send(message)
    },
    rounds: on(process, 'message') as AsyncIterable<[ParticipantRound]>,
  }
}

const { input, send, rounds } = channel()
const redis = new Redis(input.redisUrl)
const client = await Client.discover(input.issuer, input.clientId, input.clientSecret)
const store = new RedisTokenStore(redis, { keyPrefix: input.keyPrefix })
const userinfo = String(client.options.userinfoUrl)
send({ type: 'ready' })
for await (const [{ key, concurrency }] of rounds) {
  const token = await AccessToken.fromStore(client, {
    store,
    key,
    leaseTtlMs: input.leaseTtlMs,
    pollIntervalMs: 20,
  })
  const results = await Promise.allSettled(
    Array.from({ length: concurrency }, () => token.fetch(userinfo)),
  )
  send({
    type: 'done',
    statuses: results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.status] : [])),
    errors: results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : [])),
    accessToken: token.token,
  })
}
