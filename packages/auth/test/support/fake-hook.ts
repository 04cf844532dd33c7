/**
 * A hook endpoint for tests: an HTTP server on loopback that checks each request's Standard
 * Webhooks signature with the `standardwebhooks` package (as a hook author would), records the
 * payloads and answers what the test says.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http'
import { createTestSchema, startHttpServer } from '@gatehouse/testing'
import pg from 'pg'
import { Webhook } from 'standardwebhooks'

/** The `HOOK_<NAME>_SECRETS` value tests use, and the key it carries. */
export const HOOK_SECRET = 'v1,whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'

/** A payload the hook received (signature verified). */
export type HookPayload = Record<string, unknown> & {
  metadata: { uuid: string; time: string; name: string; ip_address?: string }
}

/** How the fake answers a payload: a JSON body (status 200), or `null` for 204. */
export type HookResponder = (payload: HookPayload) => unknown

/** A running fake hook; see {@link startFakeHook}. */
export interface FakeHook {
  /** `http://127.0.0.1:<port>/hook`: the `HOOK_<NAME>_URI`. */
  readonly url: string
  /** Every verified payload, oldest first. */
  readonly payloads: HookPayload[]
  /** Requests whose signature did not verify (should stay 0). */
  readonly unsigned: IncomingHttpHeaders[]
  /** What the hook answers; the default accepts with `{}`. */
  respond: HookResponder
  /** The `count`-th payload (1-based), once it has come. */
  payload(count: number): Promise<HookPayload>
  close(): Promise<void>
}

/**
 * Checks a Standard Webhooks request as `Webhook.verify` does, with the timestamp's five minutes
 * of tolerance taken from `nowMs` instead of the real clock (a server on an injected clock signs
 * with its time).
 */
function verifyAt(
  verifier: Webhook,
  body: string,
  headers: IncomingHttpHeaders,
  nowMs: number,
): HookPayload {
  const id = headers['webhook-id']
  const timestamp = Number(headers['webhook-timestamp'])
  const signatures = String(headers['webhook-signature'] ?? '').split(' ')
  if (typeof id !== 'string' || !Number.isInteger(timestamp)) throw new Error('missing headers')
  if (Math.abs(nowMs / 1000 - timestamp) > 300) throw new Error('timestamp out of tolerance')
  if (!signatures.includes(verifier.sign(id, new Date(timestamp * 1000), body))) {
    throw new Error('no matching signature')
  }
  return JSON.parse(body) as HookPayload
}

/**
 * Starts a fake hook endpoint checking signatures with {@link HOOK_SECRET}.
 *
 * @param clock The server's clock, when it is not the real one: webhook timestamps are checked
 *   against it.
 */
export async function startFakeHook(clock?: { now(): number }): Promise<FakeHook> {
  const verifier = new Webhook(HOOK_SECRET.slice('v1,'.length))
  const payloads: HookPayload[] = []
  const unsigned: IncomingHttpHeaders[] = []
  const waiters = new Set<() => void>()
  const fake = {
    payloads,
    unsigned,
    respond: (() => ({})) as HookResponder,
    async payload(count: number): Promise<HookPayload> {
      for (;;) {
        const found = payloads[count - 1]
        if (found) return found
        await new Promise<void>((resolve) => waiters.add(resolve))
      }
    },
  }
  const reply = (res: ServerResponse, body: unknown) => {
    if (body === null) res.writeHead(204).end()
    else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body))
  }
  const server = await startHttpServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      let payload: HookPayload
      try {
        payload =
          clock === undefined
            ? (verifier.verify(body, req.headers as Record<string, string>) as HookPayload)
            : verifyAt(verifier, body, req.headers, clock.now())
      } catch {
        unsigned.push(req.headers)
        res.writeHead(401).end()
        return
      }
      payloads.push(payload)
      reply(res, fake.respond(payload))
      for (const wake of waiters) wake()
      waiters.clear()
    })
  })
  return Object.assign(fake, { url: `${server.url}/hook`, close: () => server.close() })
}

/**
 * The settings of one hook: `AUTHSVC_HOOK_<STEM>_ENABLED`, `_URI` and, for an HTTP URI,
 * `_SECRETS` ({@link HOOK_SECRET}).
 *
 * @param stem `CUSTOM_ACCESS_TOKEN`, `SEND_EMAIL`, ….
 */
export function hookEnv(stem: string, uri: string): Record<string, string> {
  const name = `AUTHSVC_HOOK_${stem}`
  return {
    [`${name}_ENABLED`]: 'true',
    [`${name}_URI`]: uri,
    ...(uri.startsWith('http') ? { [`${name}_SECRETS`]: HOOK_SECRET } : {}),
  }
}

/** A schema of hook functions created by {@link createHookSchema}. */
export interface HookSchema {
  /** The schema's name (`pg-functions://postgres/<name>/<function>`). */
  readonly name: string
  /** An open connection to the database (with `search_path` on the schema). */
  readonly client: pg.Client
  /** The `pg-functions://` URI of one of its functions. */
  uri(fn: string): string
  /** Closes the connection and drops the schema. */
  close(): Promise<void>
}

/**
 * Creates a schema of its own and runs `sql(name)` in it: the hook functions (and tables) a test
 * points `pg-functions://` hooks at.
 */
export async function createHookSchema(
  label: string,
  sql: (schema: string) => string,
): Promise<HookSchema> {
  const schema = await createTestSchema(label)
  const client = new pg.Client({ connectionString: schema.url })
  await client.connect()
  try {
    await client.query(sql(schema.name))
  } catch (error) {
    await client.end()
    await schema.drop()
    throw error
  }
  return {
    name: schema.name,
    client,
    uri: (fn) => `pg-functions://postgres/${schema.name}/${fn}`,
    async close() {
      await client.end()
      await schema.drop()
    },
  }
}
