/**
 * A strict fake HTTP server for unit tests: every request must match a registered expectation
 * (method + path), unmatched requests get a 599 and fail {@link FakeServer.assertDone}, as do
 * expectations never used (oauth4webapi's `disableNetConnect` + `assertNoPendingInterceptors`).
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http'
import { createServer as createHttpsServer, type ServerOptions } from 'node:https'
import type { AddressInfo } from 'node:net'

/** A request the fake received. */
export interface RecordedRequest {
  method: string
  /** Path and query as sent. */
  url: string
  path: string
  query: URLSearchParams
  headers: IncomingHttpHeaders
  body: string
  /** The body parsed as a form. */
  form: Record<string, string>
  /** The TLS client certificate subject CN, if any. */
  peerCN?: string
}

/** What the fake answers. An object body is sent as JSON. */
export interface FakeReply {
  status?: number
  headers?: Record<string, string>
  body?: string | object
}

type Handler = FakeReply | ((request: RecordedRequest) => FakeReply | Promise<FakeReply>)

interface Expectation {
  method: string
  path: string
  handler: Handler
  remaining: number
}

export class FakeServer {
  readonly requests: RecordedRequest[] = []
  readonly unmatched: string[] = []
  readonly #expectations: Expectation[] = []
  readonly #server: Server
  url = ''

  private constructor(server: Server) {
    this.#server = server
  }

  /** Starts an HTTP (or, with `tls`, HTTPS) fake on a random loopback port. */
  static async start(tls?: ServerOptions): Promise<FakeServer> {
    const holder: { fake?: FakeServer } = {}
    const listener = (req: IncomingMessage, res: ServerResponse) => {
      void holder.fake?.handle(req, res)
    }
    const server = tls === undefined ? createServer(listener) : createHttpsServer(tls, listener)
    const fake = new FakeServer(server)
    holder.fake = fake
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    fake.url = `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${String(port)}`
    return fake
  }

  /** Expects `times` requests `method path` (path without query) and answers with `handler`. */
  on(method: string, path: string, handler: Handler, times = 1): this {
    this.#expectations.push({ method: method.toUpperCase(), path, handler, remaining: times })
    return this
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const body = Buffer.concat(chunks).toString('utf8')
    const url = new URL(req.url ?? '/', 'http://fake')
    const socket = req.socket as { getPeerCertificate?: () => { subject?: { CN?: string } } }
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      path: (req.url ?? '/').split('?')[0] ?? '/',
      query: url.searchParams,
      headers: req.headers,
      body,
      form: Object.fromEntries(new URLSearchParams(body)),
      peerCN: socket.getPeerCertificate?.().subject?.CN,
    }
    this.requests.push(recorded)
    const expectation = this.#expectations.find(
      (e) => e.remaining > 0 && e.method === recorded.method && e.path === recorded.path,
    )
    if (expectation === undefined) {
      this.unmatched.push(`${recorded.method} ${recorded.url}`)
      res.writeHead(599, { 'content-type': 'text/plain' }).end('unexpected request')
      return
    }
    expectation.remaining--
    try {
      const reply =
        typeof expectation.handler === 'function'
          ? await expectation.handler(recorded)
          : expectation.handler
      const isJson = typeof reply.body === 'object'
      const text = isJson ? JSON.stringify(reply.body) : (reply.body ?? '')
      res.writeHead(reply.status ?? 200, {
        ...(isJson ? { 'content-type': 'application/json' } : {}),
        ...reply.headers,
      })
      res.end(text)
    } catch (error) {
      this.unmatched.push(`${recorded.method} ${recorded.url}: handler threw ${String(error)}`)
      res.writeHead(599).end()
    }
  }

  /** The last request received. */
  last(): RecordedRequest {
    const request = this.requests.at(-1)
    if (request === undefined) throw new Error('no request received')
    return request
  }

  /** Throws when a request was unexpected or an expectation is still pending. */
  assertDone(): void {
    const pending = this.#expectations
      .filter((e) => e.remaining > 0)
      .map((e) => `${e.method} ${e.path} (${String(e.remaining)} left)`)
    if (this.unmatched.length > 0 || pending.length > 0) {
      throw new Error(
        `fake server: unexpected [${this.unmatched.join('; ')}], pending [${pending.join('; ')}]`,
      )
    }
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections()
    await new Promise<void>((resolve) => {
      this.#server.close(() => {
        resolve()
      })
    })
  }
}
