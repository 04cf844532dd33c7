/**
 * The inbox's web side: a page listing the kept mails (newest first) and a page per mail that
 * renders its HTML in a sandboxed frame (no scripts; links open in the whole window), plus the
 * same as JSON for tests and scripts.
 *
 * Routes: `GET /` (list), `GET /mails/<id>` (one mail), `GET /api/mails`,
 * `GET /api/mails/<id>`, `DELETE /api/mails`.
 *
 * @module
 */
import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { MailStore, ReceivedMail } from './store.js'

/** Options of {@link startInboxWeb}. */
export interface InboxWebOptions {
  readonly store: MailStore
  /** @default '127.0.0.1' */
  readonly host?: string
  /** @default 0 (a free port) */
  readonly port?: number
}

/** A running inbox page. */
export interface InboxWeb {
  /** `http://<host>:<port>/`. */
  readonly url: string
  readonly port: number
  close(): Promise<void>
}

const escapeHtml = (value: string): string =>
  value.replace(
    /[&<>"']/g,
    (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch] ?? ch,
  )

const STYLE = `body{font:15px/1.4 system-ui,sans-serif;margin:0;color:#222}
header{background:#1f2937;color:#fff;padding:.6em 1em}header a{color:#fff}
table{border-collapse:collapse;width:100%}td,th{padding:.45em 1em;border-bottom:1px solid #e5e7eb;text-align:left}
tr:hover{background:#f3f4f6}.meta{padding:.6em 1em;border-bottom:1px solid #e5e7eb}
iframe{border:0;width:100%;height:calc(100vh - 9em)}pre{padding:1em;white-space:pre-wrap}`

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>${STYLE}</style></head><body><header><a href="/">Gatehouse mail inbox</a></header>${body}</body></html>`
}

function listPage(store: MailStore): string {
  const rows = store
    .list()
    .map(
      (m) =>
        `<tr><td><a href="/mails/${String(m.id)}">${escapeHtml(m.subject || '(no subject)')}</a></td>` +
        `<td>${escapeHtml(m.from)}</td><td>${escapeHtml(m.to.join(', '))}</td>` +
        `<td><time datetime="${m.receivedAt}">${m.receivedAt.replace('T', ' ').slice(0, 19)}</time></td></tr>`,
    )
    .join('')
  const body = rows
    ? `<table><thead><tr><th>Subject</th><th>From</th><th>To</th><th>Received (UTC)</th></tr></thead><tbody>${rows}</tbody></table>`
    : `<p class="meta">No mail yet. Mails sent to the SMTP server appear here (the last ${String(store.limit)} are kept).</p>`
  return page('Mail inbox', body)
}

/**
 * The mail's HTML for the frame: links open in the whole window (`<base target="_top">`); the
 * frame's sandbox lets no script run.
 */
function framed(mail: ReceivedMail): string {
  return `<base target="_top">${mail.html}`
}

function mailPage(mail: ReceivedMail): string {
  const content = mail.html
    ? `<iframe title="Mail body" sandbox="allow-top-navigation-by-user-activation allow-popups allow-popups-to-escape-sandbox" srcdoc="${escapeHtml(framed(mail))}"></iframe>`
    : `<pre>${escapeHtml(mail.text)}</pre>`
  return page(
    mail.subject,
    `<div class="meta"><h2>${escapeHtml(mail.subject || '(no subject)')}</h2>
<div>From: ${escapeHtml(mail.from)}</div><div>To: ${escapeHtml(mail.to.join(', '))}</div>
<div>Received: ${escapeHtml(mail.receivedAt)}</div></div>${content}`,
  )
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, {
    'content-type': `${type}; charset=utf-8`,
    'cache-control': 'no-store',
    // The page itself runs no script and is never framed by another site.
    'content-security-policy':
      "default-src 'none'; style-src 'unsafe-inline'; frame-src 'self' about:; img-src * data:; frame-ancestors 'none'; base-uri 'self'",
    'x-content-type-options': 'nosniff',
  })
  res.end(body)
}

type Answer = readonly [status: number, type: string, body: string]

const json = (status: number, value: unknown): Answer => [
  status,
  'application/json',
  JSON.stringify(value),
]

/** The answer to one request (the routes in the module's notes). */
function route(store: MailStore, method: string, url: string): Answer {
  const path = new URL(url, 'http://inbox').pathname
  const api = path.startsWith('/api/')
  if (method === 'GET' && path === '/') return [200, 'text/html', listPage(store)]
  if (method === 'GET' && path === '/api/mails') return json(200, store.list())
  if (method === 'DELETE' && path === '/api/mails') {
    store.clear()
    return json(200, {})
  }
  const id = /^\/(?:api\/)?mails\/([0-9]{1,15})$/.exec(path)?.[1]
  if (method !== 'GET' || id === undefined) return json(404, { error: 'not found' })
  const mail = store.get(Number(id))
  if (!mail) {
    return api
      ? json(404, { error: 'no such mail' })
      : [404, 'text/html', page('Not found', '<p class="meta">No such mail.</p>')]
  }
  return api ? json(200, mail) : [200, 'text/html', mailPage(mail)]
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

/**
 * Starts the inbox page.
 *
 * @throws {Error} When the port cannot be listened on.
 */
export async function startInboxWeb(options: InboxWebOptions): Promise<InboxWeb> {
  const { store } = options
  const host = options.host ?? '127.0.0.1'
  let hosts: ReadonlySet<string> = new Set()
  const server = createServer((req, res) => {
    if (!hosts.has((req.headers.host ?? '').toLowerCase())) {
      send(
        res,
        403,
        'text/plain',
        `Host not allowed: open ${[...hosts].map((h) => `http://${h}/`).join(' or ')}\n`,
      )
      return
    }
    const [status, type, body] = route(store, req.method ?? 'GET', req.url ?? '/')
    send(res, status, type, body)
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
