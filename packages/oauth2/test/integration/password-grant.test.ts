/**
 * What oidc-provider lacks, against a small local authorization + resource server: the password
 * grant, token requests by GET / query string / JSON body (the gem's `token_method` and JSON
 * encoding), a refresh response without a refresh token, and a resource server reading the token
 * from the header, the query or the body.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AccessToken, Client, OAuth2Error } from '@gatehouse/oauth2'

const USERS = new Map([['ann', 'correct horse']])
const CLIENT = { id: 'app', secret: 'app secret' }

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

function startServer(): Promise<{ url: string; server: Server; revoked: Set<string> }> {
  const accessTokens = new Map<string, string>()
  const refreshTokens = new Map<string, string>()
  const revoked = new Set<string>()
  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://local')
      const raw = await readBody(req)
      const isJson = (req.headers['content-type'] ?? '').startsWith('application/json')
      const body: Record<string, string> = isJson
        ? (JSON.parse(raw || '{}') as Record<string, string>)
        : Object.fromEntries(new URLSearchParams(raw))
      const params = { ...Object.fromEntries(url.searchParams), ...body }
      const send = (status: number, payload: object) => {
        res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' })
        res.end(JSON.stringify(payload))
      }
      if (url.pathname === '/oauth/token' || url.pathname === '/oauth/revoke') {
        const basic = Buffer.from(
          (req.headers.authorization ?? '').replace(/^Basic /, ''),
          'base64',
        ).toString()
        const [id = '', secret = ''] = basic
          .split(':')
          .map((p) => decodeURIComponent(p.replaceAll('+', ' ')))
        if (id !== CLIENT.id || secret !== CLIENT.secret) {
          send(401, { error: 'invalid_client' })
          return
        }
        if (url.pathname === '/oauth/revoke') {
          if (params.token !== undefined) revoked.add(params.token)
          res.writeHead(200).end()
          return
        }
        let user: string | undefined
        if (params.grant_type === 'password') {
          if (USERS.get(params.username ?? '') === params.password) user = params.username
        } else if (params.grant_type === 'refresh_token') {
          user = refreshTokens.get(params.refresh_token ?? '')
        } else {
          send(400, { error: 'unsupported_grant_type' })
          return
        }
        if (user === undefined) {
          send(400, { error: 'invalid_grant', error_description: 'bad credentials' })
          return
        }
        const access = randomUUID()
        accessTokens.set(access, user)
        // Refresh responses leave the refresh token out: the client keeps the old one.
        const refresh = params.grant_type === 'password' ? randomUUID() : undefined
        if (refresh !== undefined) refreshTokens.set(refresh, user)
        send(200, {
          access_token: access,
          token_type: 'bearer',
          expires_in: 120,
          refresh_token: refresh,
          scope: params.scope,
        })
        return
      }
      if (url.pathname === '/api/me') {
        const bearer = (req.headers.authorization ?? '').replace(/^Bearer /, '')
        const token = bearer || params.access_token || ''
        const user = accessTokens.get(token)
        if (user === undefined || revoked.has(token)) {
          send(401, { error: 'invalid_token' })
          return
        }
        send(200, {
          userName: user,
          via: bearer ? 'header' : url.searchParams.has('access_token') ? 'query' : 'body',
        })
        return
      }
      send(404, { error: 'not_found' })
    })()
  })
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo
      resolve({ url: `http://127.0.0.1:${String(port)}`, server, revoked })
    })
  })
}

describe('password grant and gem-style token requests against a local server', () => {
  let local: Awaited<ReturnType<typeof startServer>>
  let client: Client

  beforeAll(async () => {
    local = await startServer()
    client = new Client(CLIENT.id, CLIENT.secret, { site: local.url })
  })

  afterAll(async () => {
    local.server.closeAllConnections()
    await new Promise<void>((resolve) => {
      local.server.close(() => {
        resolve()
      })
    })
  })

  it('gets a token with the password grant and uses it in every mode', async () => {
    const token = await client.password.getToken('ann', 'correct horse', { scope: 'profile' })
    expect(token.params).toMatchObject({ token_type: 'bearer', scope: 'profile' })
    expect((await token.get('/api/me')).parsed).toMatchObject({ user_name: 'ann', via: 'header' })
    const query = new AccessToken(client, token.token, { mode: 'query' })
    expect((await query.get('/api/me')).parsed).toMatchObject({ via: 'query' })
    const body = new AccessToken(client, token.token, { mode: 'body' })
    expect((await body.post('/api/me')).parsed).toMatchObject({ via: 'body' })
  })

  it('rejects a wrong password with invalid_grant', async () => {
    await expect(client.password.getToken('ann', 'wrong')).rejects.toMatchObject({
      code: 'invalid_grant',
      message:
        'invalid_grant: bad credentials\n{"error":"invalid_grant","error_description":"bad credentials"}',
    })
  })

  it('keeps the old refresh token when the refresh response has none', async () => {
    const token = await client.password.getToken('ann', 'correct horse')
    const refreshed = await token.refresh()
    expect(refreshed.token).not.toBe(token.token)
    expect(refreshed.refreshToken).toBe(token.refreshToken)
    const again = await refreshed.refresh()
    expect((await again.get('/api/me')).status).toBe(200)
  })

  it('sends token requests by GET, by POST with a query string, and as JSON', async () => {
    const viaGet = new Client(CLIENT.id, CLIENT.secret, { site: local.url, tokenMethod: 'get' })
    expect((await viaGet.password.getToken('ann', 'correct horse')).token).not.toBe('')
    const viaQuery = new Client(CLIENT.id, CLIENT.secret, {
      site: local.url,
      tokenMethod: 'post_with_query_string',
    })
    expect((await viaQuery.password.getToken('ann', 'correct horse')).token).not.toBe('')
    const json = await client.password.getToken('ann', 'correct horse', {
      headers: { 'Content-Type': 'application/json' },
    })
    expect(json.token).not.toBe('')
  })

  it('revokes with the gem query-string method and the token stops working', async () => {
    const token = await client.password.getToken('ann', 'correct horse')
    await client.revokeToken(token.token, 'access_token', { tokenMethod: 'post_with_query_string' })
    expect(local.revoked.has(token.token)).toBe(true)
    const error = await token.get('/api/me').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OAuth2Error)
    expect(error).toMatchObject({ code: 'invalid_token', response: { status: 401 } })
  })
})
