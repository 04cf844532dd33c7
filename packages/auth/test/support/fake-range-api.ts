/**
 * A local Pwned Passwords range API (`GET /range/<5 hex>`), as api.pwnedpasswords.com speaks it:
 * `text/plain`, one `SUFFIX:COUNT` line per known hash of the prefix, CRLF between lines, and
 * with `Add-Padding: true` extra random suffixes carrying count 0.
 */
import { createHash, randomBytes } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { startHttpServer } from '@gatehouse/testing'

/** A request the fake received. */
export interface RangeRequest {
  readonly prefix: string
  readonly headers: IncomingHttpHeaders
}

/**
 * How the fake answers: the real protocol, not at all, an HTML page with status 200, a body
 * larger than any real answer, or HTTP 503.
 */
export type RangeMode = 'ok' | 'hang' | 'garbage' | 'huge' | 'unavailable'

/** A running fake, see {@link startFakeRangeApi}. */
export interface FakeRangeApi {
  /** `http://127.0.0.1:<port>`: the `PASSWORD_HIBP_API_URL`. */
  readonly url: string
  /** Every request received, oldest first. */
  readonly requests: RangeRequest[]
  mode: RangeMode
  /** Makes `password` known, `count` times. */
  addPwned(password: string, count?: number): void
  close(): Promise<void>
}

/** Padding lines added per answer when asked (the real service pads to 800 to 1 000 lines). */
const PADDING_LINES = 50

/** The upper-case hex SHA-1 of a password. */
export function sha1Hex(password: string): string {
  return createHash('sha1').update(password, 'utf8').digest('hex').toUpperCase()
}

/** Starts the fake on a random loopback port. */
export async function startFakeRangeApi(): Promise<FakeRangeApi> {
  const known = new Map<string, number>()
  const requests: RangeRequest[] = []
  const fake = { mode: 'ok' as RangeMode, requests }
  const server = await startHttpServer((request, response) => {
    const match = /^\/range\/([0-9A-Fa-f]{5})$/.exec(request.url ?? '')
    if (request.method !== 'GET' || !match?.[1]) {
      response.writeHead(404).end()
      return
    }
    const prefix = match[1].toUpperCase()
    requests.push({ prefix, headers: request.headers })
    if (fake.mode === 'hang') return // close() drops the connection
    if (fake.mode === 'unavailable') {
      response.writeHead(503, { 'content-type': 'text/plain' }).end('Service Unavailable')
      return
    }
    if (fake.mode === 'garbage') {
      response
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<html><body>Blocked</body></html>')
      return
    }
    const lines: string[] = []
    for (const [hash, count] of known) {
      if (hash.startsWith(prefix)) lines.push(`${hash.slice(5)}:${String(count)}`)
    }
    if (fake.mode === 'huge') {
      // Valid lines, but far more than any real range: 20 000 × 40 bytes.
      for (let i = 0; i < 20_000; i++) lines.push(`${randomSuffix()}:1`)
    } else if (request.headers['add-padding'] === 'true') {
      for (let i = 0; i < PADDING_LINES; i++) lines.push(`${randomSuffix()}:0`)
    }
    lines.sort()
    response.writeHead(200, { 'content-type': 'text/plain' }).end(lines.join('\r\n'))
  })
  return Object.assign(fake, {
    url: server.url,
    addPwned(password: string, count = 3) {
      known.set(sha1Hex(password), count)
    },
    close: () => server.close(),
  })
}

function randomSuffix(): string {
  return randomBytes(18).toString('hex').slice(0, 35).toUpperCase()
}
