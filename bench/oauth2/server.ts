/**
 * The benchmark's token + resource server (plain node:http, keep-alive), run in its own process so
 * the client process is what is measured. Prints `listening <port>` when ready.
 *
 * POST /oauth/token   -> a client-credentials token response (checks Basic auth and grant_type)
 * GET  /resource      -> a small JSON document (checks the Bearer token)
 * GET  /dpop-resource -> the same document for `Authorization: DPoP bench-dpop-token` with a DPoP
 *                        proof (RFC 9449 §7.1): typ, alg, htm, htu, ath, iat, a jti not seen
 *                        lately; the signature of the first 200 proofs of each key is verified
 *                        too (then only the claims, so the server stays cheap next to the
 *                        measured client on a shared machine)
 */
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto'
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
const DPOP_TOKEN = 'bench-dpop-token'
const ATH = createHash('sha256').update(DPOP_TOKEN).digest('base64url')
/** Per protected header (constant for a key): its public key and how many proofs were verified. */
const keys = new Map<string, { key: KeyObject; verified: number }>()
/** jti values seen lately (a bounded replay check). */
let seenJti = new Set<string>()

/** Checks a DPoP proof for `GET <url>` with the bench token; returns what is wrong, if anything. */
function dpopProblem(proof: string | string[] | undefined, url: string): string | undefined {
  if (typeof proof !== 'string') return 'no DPoP proof'
  const [h = '', p = '', sig = ''] = proof.split('.')
  let entry = keys.get(h)
  if (entry === undefined) {
    const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as {
      typ?: string
      alg?: string
      jwk?: Record<string, string>
    }
    if (header.typ !== 'dpop+jwt' || header.alg !== 'ES256' || header.jwk === undefined)
      return 'bad header'
    entry = { key: createPublicKey({ key: header.jwk, format: 'jwk' }), verified: 0 }
    keys.set(h, entry)
  }
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>
  if (claims.htm !== 'GET' || claims.htu !== url || claims.ath !== ATH) return 'bad claims'
  if (typeof claims.iat !== 'number' || Math.abs(claims.iat - Date.now() / 1000) > 60)
    return 'bad iat'
  if (typeof claims.jti !== 'string' || seenJti.has(claims.jti)) return 'replayed jti'
  if (seenJti.size >= 100_000) seenJti = new Set()
  seenJti.add(claims.jti)
  if (entry.verified < 200) {
    entry.verified++
    const ok = verify(
      'sha256',
      Buffer.from(`${h}.${p}`),
      { key: entry.key, dsaEncoding: 'ieee-p1363' },
      Buffer.from(sig, 'base64url'),
    )
    if (!ok) return 'bad signature'
  }
  return undefined
}

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
    if (req.method === 'GET' && req.url === '/dpop-resource') {
      const problem =
        req.headers.authorization === `DPoP ${DPOP_TOKEN}`
          ? dpopProblem(req.headers.dpop, `http://${String(req.headers.host)}/dpop-resource`)
          : 'not DPoP'
      if (problem !== undefined) {
        res
          .writeHead(401, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: 'invalid_token', error_description: problem }))
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(RESOURCE)
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
