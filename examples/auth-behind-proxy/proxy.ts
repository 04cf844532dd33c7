/**
 * A small reverse proxy in front of several auth instances, as a load balancer would be: each
 * request goes to the next instance in turn (round robin), with `X-Real-IP` set to the client's
 * address (overwriting whatever the client sent, so no client can choose its own rate limit
 * budget) and `X-Upstream` on the answer naming the instance that served it. An instance that
 * cannot be reached is skipped for that request.
 *
 * Run: `AUTH_UPSTREAMS=127.0.0.1:9998,127.0.0.1:9997 PROXY_PORT=9999 node --conditions=dev-source --import tsx examples/auth-behind-proxy/proxy.ts`
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'

/** Options of {@link startProxy}. */
export interface ProxyOptions {
  /** The instances, `host:port`, tried in turn. */
  readonly upstreams: readonly string[]
  /** @default 9999; 0 picks a free port */
  readonly port?: number
}

/** Headers that describe one connection, never forwarded (RFC 9110 §7.6.1). */
const HOP_BY_HOP = ['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']

/** Starts the proxy; `close()` stops it. */
export async function startProxy(
  options: ProxyOptions,
): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  if (options.upstreams.length === 0) throw new Error('at least one upstream is needed')
  let next = 0

  function forward(request: IncomingMessage, body: Buffer, upstream: string) {
    const headers = {
      ...Object.fromEntries(
        Object.entries(request.headers).filter(([name]) => !HOP_BY_HOP.includes(name)),
      ),
      'x-real-ip': request.socket.remoteAddress ?? '',
    }
    return new Promise<{
      status: number
      headers: Record<string, string | string[]>
      body: Buffer
    }>((resolve, reject) => {
      const outgoing = httpRequest(
        `http://${upstream}${request.url ?? '/'}`,
        { method: request.method, headers },
        (answer) => {
          const chunks: Buffer[] = []
          answer.on('data', (chunk: Buffer) => chunks.push(chunk))
          answer.on('end', () => {
            const out: Record<string, string | string[]> = {}
            for (const [name, value] of Object.entries(answer.headers)) {
              if (value !== undefined && !HOP_BY_HOP.includes(name)) out[name] = value
            }
            out['x-upstream'] = upstream
            resolve({ status: answer.statusCode ?? 502, headers: out, body: Buffer.concat(chunks) })
          })
          answer.on('error', reject)
        },
      )
      outgoing.on('error', reject)
      outgoing.end(body)
    })
  }

  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = Buffer.concat(chunks)
      const turn = next
      next = (next + 1) % options.upstreams.length
      const attempt = async (tries: number): Promise<void> => {
        try {
          const upstream = options.upstreams[(turn + tries) % options.upstreams.length] ?? ''
          const answer = await forward(request, body, upstream)
          response.writeHead(answer.status, answer.headers).end(answer.body)
        } catch {
          if (tries + 1 < options.upstreams.length) await attempt(tries + 1)
          else response.writeHead(502, { 'content-type': 'text/plain' }).end('no upstream answered')
        }
      }
      void attempt(0)
    })
  })
  await new Promise<void>((resolve) => server.listen(options.port ?? 9999, '127.0.0.1', resolve))
  return {
    server,
    url: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`,
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const upstreams = (process.env.AUTH_UPSTREAMS ?? '127.0.0.1:9998,127.0.0.1:9997')
    .split(',')
    .map((upstream) => upstream.trim())
    .filter((upstream) => upstream !== '')
  const proxy = await startProxy({ upstreams, port: Number(process.env.PROXY_PORT ?? '9999') })
  process.stdout.write(`proxy on ${proxy.url} → ${upstreams.join(', ')}\n`)
}
