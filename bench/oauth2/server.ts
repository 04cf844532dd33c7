/**
 * The benchmark's token + resource server (plain node:http, keep-alive), run in its own process so
 * the client process is what is measured. Prints `listening <port>` when ready.
 *
 * POST /oauth/token  -> a client-credentials token response (checks Basic auth and grant_type)
 * GET  /resource     -> a small JSON document (checks the Bearer token)
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/** Checks HTTP Basic client credentials, form-decoding id and secret (RFC 6749 §2.3.1). */
function authenticated(header: string | undefined): boolean {
  if (header?.startsWith('Basic ') !== true) return false
  const [id = '', secret = ''] = Buffer.from(header.slice(6), 'base64')
    .toString()
    .split(':')
    .map((part) => decodeURIComponent(part.replaceAll('+', ' ')))
  return id === 'bench-client' && secret === 'bench-secret'
}
const TOKEN = JSON.stringify({
  access_token: 'bench-access-token',
  token_type: 'Bearer',
  expires_in: 3600,
  scope: 'api',
})
const RESOURCE = JSON.stringify({ id: 42, name: 'resource', tags: ['a', 'b'] })

const server = createServer((req, res) => {
  const chunks: Buffer[] = []
  req.on('data', (chunk: Buffer) => chunks.push(chunk))
  req.on('end', () => {
    if (req.method === 'POST' && req.url === '/oauth/token') {
      const body = Buffer.concat(chunks).toString()
      if (
        !authenticated(req.headers.authorization) ||
        !body.includes('grant_type=client_credentials')
      ) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}')
        return
      }
      res
        .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
        .end(TOKEN)
      return
    }
    if (req.method === 'GET' && req.url === '/resource') {
      if (req.headers.authorization !== 'Bearer bench-access-token') {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_token"}')
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(RESOURCE)
      return
    }
    res.writeHead(404).end()
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${String((server.address() as AddressInfo).port)}\n`)
})
process.on('SIGTERM', () => {
  server.closeAllConnections()
  server.close()
})
