/**
 * A protected resource (an MCP server's HTTP endpoint, in spirit) for the tests of the resource
 * chain: it answers `401` with `WWW-Authenticate: Bearer resource_metadata="…"` (RFC 9728 §5.1),
 * serves its metadata at `/.well-known/oauth-protected-resource/mcp`, and accepts JWT access
 * tokens of its authorization server whose `aud` is the resource: Bearer, or DPoP-bound (`cnf.jkt`)
 * with a valid DPoP proof (RFC 9449 §7: `htm`, `htu`, `ath`, the key's thumbprint). It also serves
 * a client ID metadata document at `/client.json`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createHash } from 'node:crypto'
import { startHttpServer } from '@gatehouse/testing'
import {
  calculateJwkThumbprint,
  createRemoteJWKSet,
  decodeProtectedHeader,
  EmbeddedJWK,
  jwtVerify,
  type JWK,
} from 'jose'

export interface ProtectedResource {
  /** The origin, `http://127.0.0.1:<port>`. */
  readonly origin: string
  /** The resource identifier: `<origin>/mcp`. */
  readonly resource: string
  /** The URL of the client ID metadata document it serves. */
  readonly clientDocument: string
  /** Requests answered 200, with the scheme they came with. */
  readonly accepted: { scheme: string; sub: string; jti: string }[]
  /** Makes the resource refuse this token id (`jti`) with `error="invalid_token"` from now on. */
  revoke(jti: string): void
  close(): Promise<void>
}

/** Starts the resource; `issuer` is its authorization server, `redirectUri` the client's. */
export async function startProtectedResource(
  issuer: () => string,
  redirectUri: string,
): Promise<ProtectedResource> {
  const accepted: { scheme: string; sub: string; jti: string }[] = []
  const revoked = new Set<string>()
  let origin = ''
  const resource = () => `${origin}/mcp`
  const metadataUrl = () => `${origin}/.well-known/oauth-protected-resource/mcp`
  let jwks: ReturnType<typeof createRemoteJWKSet> | undefined

  const json = (res: ServerResponse, status: number, body: unknown, headers = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers })
    res.end(JSON.stringify(body))
  }
  const challenge = (res: ServerResponse, error?: string) => {
    const params = [
      `resource_metadata="${metadataUrl()}"`,
      'scope="mcp:tools"',
      ...(error === undefined ? [] : [`error="${error}"`]),
    ]
    res.writeHead(401, { 'www-authenticate': `Bearer ${params.join(', ')}` })
    res.end()
  }

  /** The token's claims when the request carries a token and proof the resource accepts. */
  async function authorize(req: IncomingMessage): Promise<Record<string, unknown> | string> {
    const [scheme = '', token = ''] = (req.headers.authorization ?? '').split(' ')
    if (token === '') return 'none'
    jwks ??= createRemoteJWKSet(new URL(`${issuer()}/jwks`))
    let claims: Record<string, unknown>
    try {
      ;({ payload: claims } = await jwtVerify(token, jwks, {
        issuer: issuer(),
        audience: resource(),
      }))
    } catch {
      return 'invalid_token'
    }
    if (revoked.has(String(claims.jti))) return 'invalid_token'
    const cnf = claims.cnf as { jkt?: string } | undefined
    if (cnf?.jkt === undefined) return scheme === 'Bearer' ? claims : 'invalid_token'
    const proof = req.headers.dpop
    if (scheme !== 'DPoP' || typeof proof !== 'string') return 'invalid_token'
    try {
      const { payload, protectedHeader } = await jwtVerify(proof, EmbeddedJWK, { typ: 'dpop+jwt' })
      const url = new URL(req.url ?? '/', origin)
      const ath = createHash('sha256').update(token).digest('base64url')
      const jkt = await calculateJwkThumbprint(protectedHeader.jwk as JWK)
      if (
        payload.htm !== req.method ||
        payload.htu !== `${url.origin}${url.pathname}` ||
        payload.ath !== ath ||
        jkt !== cnf.jkt ||
        decodeProtectedHeader(proof).alg === 'none'
      ) {
        return 'invalid_token'
      }
    } catch {
      return 'invalid_token'
    }
    return { ...claims, scheme: 'DPoP' }
  }

  const server = await startHttpServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname
    if (path === '/.well-known/oauth-protected-resource/mcp') {
      json(res, 200, {
        resource: resource(),
        authorization_servers: [issuer()],
        scopes_supported: ['mcp:tools'],
        bearer_methods_supported: ['header'],
        dpop_signing_alg_values_supported: ['ES256'],
      })
      return
    }
    if (path === '/client.json') {
      json(res, 200, {
        client_id: `${origin}/client.json`,
        client_name: 'Test MCP client',
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      })
      return
    }
    if (path === '/other') {
      // Points at the metadata of /mcp, which does not describe /other.
      challenge(res)
      return
    }
    if (path !== '/mcp' && !path.startsWith('/mcp/')) {
      res.writeHead(404).end()
      return
    }
    authorize(req).then(
      (result) => {
        if (typeof result === 'string') {
          challenge(res, result === 'none' ? undefined : result)
          return
        }
        const scheme = typeof result.scheme === 'string' ? result.scheme : 'Bearer'
        accepted.push({ scheme, sub: String(result.sub), jti: String(result.jti) })
        json(res, 200, { ok: true, path, scheme, sub: result.sub })
      },
      (error: unknown) => {
        res.writeHead(500).end(String(error))
      },
    )
  })
  origin = server.url
  return {
    origin,
    resource: resource(),
    clientDocument: `${origin}/client.json`,
    accepted,
    revoke(jti) {
      revoked.add(jti)
    },
    close: () => server.close(),
  }
}
