/**
 * The backend behind Envoy in this example: answers every request with who asked for what.
 *
 * Run: `node --conditions=dev-source --import tsx examples/envoy-ratelimit/backend.ts`
 * (`BACKEND_PORT`, default 8000).
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'

/** Starts the backend on `port` (0: a free one). */
export async function startBackend(port = 8000): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    const user = request.headers['x-user-id']
    response
      .writeHead(200, { 'content-type': 'application/json' })
      .end(
        JSON.stringify({ hello: typeof user === 'string' ? user : 'anonymous', path: request.url }),
      )
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  return { server, url: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}` }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const backend = await startBackend(Number(process.env.BACKEND_PORT ?? '8000'))
  process.stdout.write(`backend on ${backend.url}\n`)
}
