/**
 * The inbox's web side: the pages (`pages.ts`), their script (`client.ts`) and a JSON API for
 * tests and scripts, on loopback only.
 *
 * Routes: `GET /` (list; `?q=` searches), `GET /mails/<id>` (one mail; `?view=html|text|headers|
 * source`), `GET /inbox.js`; `GET /api/mails` (`?q=`), `DELETE /api/mails` (all),
 * `GET|DELETE /api/mails/<id>`, `GET /api/mails/<id>/source` (`message/rfc822`),
 * `GET /api/events` (Server-Sent Events: `{ type: 'added', mail, count }`,
 * `{ type: 'deleted', id, count }`, `{ type: 'cleared', count }`).
 *
 * Only requests whose `Host` is a loopback name with the inbox's port are answered (a page on a
 * rebound DNS name cannot read the mails), and a request that carries an `Origin` must come from
 * the inbox itself (another site cannot delete mails or hold event streams open).
 *
 * @module
 */
import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { CLIENT_SCRIPT } from './client.js'
import { listPage, mailPage, notFoundPage, viewsOf } from './pages.js'
import type { MailStore } from './store.js'

/** Options of {@link startInboxWeb}. */
export interface InboxWebOptions {
  readonly store: MailStore
  /** @default '127.0.0.1' */
  readonly host?: string
  /** @default 0 (a free port) */
  readonly port?: number
  /** Most event streams (`/api/events`) open at once; more are answered 503. @default 32 */
  readonly maxEventStreams?: number
}

/** A running inbox page. */
export interface InboxWeb {
  /** `http://<host>:<port>/`. */
  readonly url: string
  readonly port: number
  close(): Promise<void>
}

/** The pages' policy: the inbox's own script only; mail images may load. */
const PAGE_CSP =
  "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; frame-src 'self' about:; img-src * data:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'"

/** Everything that is not a page: nothing runs, nothing loads. */
const DATA_CSP = "default-src 'none'; frame-ancestors 'none'; sandbox"

interface Answer {
  readonly status: number
  readonly type: string
  readonly body: string
  readonly headers?: Readonly<Record<string, string>>
}

const json = (status: number, value: unknown): Answer => ({
  status,
  type: 'application/json; charset=utf-8',
  body: JSON.stringify(value),
})
const html = (status: number, body: string): Answer => ({
  status,
  type: 'text/html; charset=utf-8',
  body,
})

function send(res: ServerResponse, answer: Answer): void {
  res.writeHead(answer.status, {
    'content-type': answer.type,
    'cache-control': 'no-store',
    'content-security-policy': answer.type.startsWith('text/html') ? PAGE_CSP : DATA_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    ...answer.headers,
  })
  res.end(answer.body)
}

/**
 * The `Host` values the page answers: the loopback names with its port (`127.0.0.1:<port>`,
 * `localhost:<port>`, `[::1]:<port>`) and the address it listens on. Any other name is refused,
 * so that a page on a rebound DNS name (an attacker's name resolving to 127.0.0.1) cannot read
 * the mails, sign-in links included.
 */
export function allowedHosts(host: string, port: number): ReadonlySet<string> {
  const p = String(port)
  const names = [`127.0.0.1:${p}`, `localhost:${p}`, `[::1]:${p}`]
  if (!['0.0.0.0', '::', ''].includes(host)) {
    names.push(`${host.includes(':') ? `[${host}]` : host}:${p}`)
  }
  return new Set(names.map((name) => name.toLowerCase()))
}

/** Why a request is refused before routing, or `undefined` when it may go on. */
function refusal(req: IncomingMessage, hosts: ReadonlySet<string>): string | undefined {
  const host = (req.headers.host ?? '').toLowerCase()
  const open = [...hosts].map((h) => `http://${h}/`).join(' or ')
  if (!hosts.has(host)) return `Host not allowed: open ${open}\n`
  const origin = req.headers.origin
  if (origin !== undefined && !hosts.has(origin.toLowerCase().replace(/^http:\/\//, ''))) {
    return `Origin not allowed: only pages of ${open} may call the inbox\n`
  }
  return undefined
}

const MAIL_PATH = /^\/(api\/)?mails\/([0-9]{1,15})(\/source)?$/

/** The answer to one request other than the event stream (the routes in the module's notes). */
function route(store: MailStore, method: string, url: URL): Answer {
  const path = url.pathname
  const query = url.searchParams.get('q') ?? ''
  if (method === 'GET' && path === '/') {
    return html(
      200,
      listPage({ mails: store.list(query), query, count: store.size, limit: store.limit }),
    )
  }
  if (method === 'GET' && path === '/inbox.js') {
    return { status: 200, type: 'text/javascript; charset=utf-8', body: CLIENT_SCRIPT }
  }
  if (path === '/api/mails') {
    if (method === 'GET') return json(200, store.list(query))
    if (method === 'DELETE') {
      store.clear()
      return json(200, {})
    }
  }
  const [, api, idText, source] = MAIL_PATH.exec(path) ?? []
  if (idText === undefined || (method !== 'GET' && !(method === 'DELETE' && api && !source))) {
    return json(404, { error: 'not found' })
  }
  const id = Number(idText)
  const mail = store.get(id)
  if (!mail) {
    return api
      ? json(404, { error: 'no such mail' })
      : html(
          404,
          notFoundPage('No such mail: it was deleted, or pushed out by newer ones.', store.size),
        )
  }
  if (method === 'DELETE') {
    store.delete(id)
    return json(200, {})
  }
  if (source) {
    return {
      status: 200,
      type: 'message/rfc822',
      body: store.source(id) ?? '',
      headers: { 'content-disposition': `attachment; filename="mail-${String(id)}.eml"` },
    }
  }
  if (api) return json(200, mail)
  const views = viewsOf(mail)
  const asked = url.searchParams.get('view')
  const view = views.find((v) => v === asked) ?? views[0] ?? 'text'
  return html(200, mailPage(mail, view, store.source(id) ?? '', store.size))
}

/** Keeps `res` open as an event stream of the store's changes, each with the new count. */
function streamEvents(store: MailStore, req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  })
  res.write('retry: 1000\n\n')
  const unsubscribe = store.subscribe((event) => {
    res.write(`data: ${JSON.stringify({ ...event, count: store.size })}\n\n`)
  })
  req.once('close', unsubscribe)
}

/**
 * Starts the inbox page.
 *
 * @throws {Error} When the port cannot be listened on.
 */
export async function startInboxWeb(options: InboxWebOptions): Promise<InboxWeb> {
  const { store } = options
  const host = options.host ?? '127.0.0.1'
  const maxEventStreams = options.maxEventStreams ?? 32
  let hosts: ReadonlySet<string> = new Set()
  let eventStreams = 0
  const server = createServer((req, res) => {
    const refused = refusal(req, hosts)
    if (refused !== undefined) {
      send(res, { status: 403, type: 'text/plain; charset=utf-8', body: refused })
      return
    }
    const method = req.method ?? 'GET'
    const url = new URL(req.url ?? '/', 'http://inbox')
    if (url.pathname === '/api/events' && method === 'GET') {
      if (eventStreams >= maxEventStreams) {
        send(res, json(503, { error: 'too many event streams open' }))
        return
      }
      eventStreams++
      req.once('close', () => eventStreams--)
      streamEvents(store, req, res)
      return
    }
    send(res, route(store, method, url))
  })
  server.listen(options.port ?? 0, host)
  await Promise.race([
    once(server, 'listening'),
    once(server, 'error').then(([error]) => Promise.reject(error as Error)),
  ])
  const { port } = server.address() as AddressInfo
  hosts = allowedHosts(host, port)
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${String(port)}/`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => {
          resolve()
        })
      }),
  }
}
