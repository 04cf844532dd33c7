/**
 * A hook endpoint for tests: an HTTP server on loopback that checks each request's Standard
 * Webhooks signature with the `standardwebhooks` package (as a hook author would), records the
 * payloads and answers what the test says.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http'
import { startHttpServer } from '@gatehouse/testing'
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

/** Starts a fake hook endpoint checking signatures with {@link HOOK_SECRET}. */
export async function startFakeHook(): Promise<FakeHook> {
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
        payload = verifier.verify(body, req.headers as Record<string, string>) as HookPayload
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
