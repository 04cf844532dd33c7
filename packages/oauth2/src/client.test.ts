import { inspect } from 'node:util'
import { decodeProtectedHeader, exportJWK, generateKeyPair, jwtVerify } from 'jose'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { argError } from '../test/support/expect.js'
import { FakeServer } from '../test/support/fake-server.js'
import { AccessToken } from './access-token.js'
import { Client } from './client.js'
import { ConnectionError, OAuth2Error, TimeoutError } from './error.js'
import { SnakyHash } from './snaky-hash.js'
import { FakeClock } from '@gatehouse/testing'

describe('Client construction', () => {
  it('applies the gem defaults', () => {
    const client = new Client('id', 'secret')
    expect(client.options).toMatchObject({
      authorizeUrl: 'oauth/authorize',
      tokenUrl: 'oauth/token',
      revokeUrl: 'oauth/revoke',
      tokenMethod: 'post',
      authScheme: 'basic_auth',
      raiseErrors: true,
      maxRedirects: 5,
      requirePkce: false,
    })
    expect(client.id).toBe('id')
    expect(client.secret).toBe('secret')
  })

  it('does not mutate the options it is given', () => {
    const options = Object.freeze({ site: 'https://a.example', connectionOpts: Object.freeze({}) })
    expect(() => new Client('id', 's', options)).not.toThrow()
  })

  it('rejects bad arguments with coded TypeErrors naming the argument', () => {
    expect(() => new Client(1 as unknown as string, 's')).toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"clientId"'),
    )
    expect(() => new Client('id', 5 as unknown as string)).toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"clientSecret"'),
    )
    expect(() => new Client('id', 's', 'x' as never)).toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"options"'),
    )
    expect(() => new Client('id', 's', { authScheme: 'digest' as never })).toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"options.authScheme" must be one of'),
    )
    expect(() => new Client('id', 's', { tokenMethod: 'put' as never })).toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"options.tokenMethod"'),
    )
    expect(() => new Client('id', 's', { maxRedirects: -1 })).toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"options.maxRedirects"'),
    )
    expect(() => new Client('id', 's', { site: 'not a url' })).toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"options.site"'),
    )
    expect(() => new Client('id', 's', { connectionOpts: { timeout: 0 } })).toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"options.connectionOpts.timeout"'),
    )
    expect(() => new Client('id', 's', { logger: {} as never })).toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"options.logger" must be a value with debug() and warn()'),
    )
    expect(
      () => new Client('id', 's', { privateKey: { key: 'k', algorithm: 'none' as never } }),
    ).toThrow(argError('ERR_INVALID_ARG_VALUE', '"options.privateKey.algorithm"'))
  })

  it('never shows the secret or keys through util.inspect or JSON.stringify', () => {
    const client = new Client('my-id', 'super-secret-value', {
      site: 'https://a.example',
      authScheme: 'private_key_jwt',
      privateKey: { key: '-----BEGIN PRIVATE KEY-----\nKEYDATA', algorithm: 'RS256' },
      connectionOpts: {
        tls: { cert: 'CERT', key: 'TLS-KEY-DATA' },
        headers: { 'X-Api-Key': 'APIKEY-SECRET' },
        proxy: 'http://proxy-user:PROXY-PASSWORD@proxy.example:3128',
      },
    })
    for (const text of [inspect(client, { depth: 10 }), JSON.stringify(client)]) {
      expect(text).toContain('my-id')
      expect(text).toContain('[FILTERED]')
      expect(text).toContain('X-Api-Key')
      expect(text).toContain('proxy.example:3128')
      expect(text).not.toContain('super-secret-value')
      expect(text).not.toContain('KEYDATA')
      expect(text).not.toContain('TLS-KEY-DATA')
      expect(text).not.toContain('APIKEY-SECRET')
      expect(text).not.toContain('PROXY-PASSWORD')
    }
  })
})

describe('URL building', () => {
  it('reports a URL the WHATWG parser refuses as an argument error naming its option', async () => {
    const client = new Client('id', 's', { site: 'https://auth.example', tokenUrl: 'http://[x' })
    expect(() => client.tokenUrl()).toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"options.tokenUrl" is not a valid absolute URL'),
    )
    await expect(client.request('get', 'https://[x/')).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"url" is not a valid absolute URL'),
    )
    client.site = 'not a url'
    expect(() => client.authorizeUrl()).toThrow(
      argError('ERR_INVALID_ARG_VALUE', `"site" must be an absolute URL (got 'not a url')`),
    )
  })

  it('puts relative URLs under the site path, leading-slash URLs at the host root, absolute URLs as given', () => {
    const nested = new Client('id', 's', { site: 'https://auth.example/tenant' })
    expect(nested.tokenUrl()).toBe('https://auth.example/tenant/oauth/token')
    const slash = new Client('id', 's', { site: 'https://auth.example/tenant', tokenUrl: '/token' })
    expect(slash.tokenUrl()).toBe('https://auth.example/token')
    const absolute = new Client('id', 's', {
      site: 'https://auth.example',
      tokenUrl: 'https://other.example/t',
    })
    expect(absolute.tokenUrl()).toBe('https://other.example/t')
  })

  it('builds authorize URLs with client_id, response_type, redirect_uri, sorted keys and %20 spaces', () => {
    const client = new Client('client id', 's', {
      site: 'https://auth.example/base/',
      redirect_uri: 'https://app.example/cb',
    })
    expect(client.authCode.authorizeUrl({ scope: 'openid profile', state: 'a!b' })).toBe(
      'https://auth.example/base/oauth/authorize?client_id=client%20id&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&response_type=code&scope=openid%20profile&state=a%21b',
    )
    expect(client.implicit.authorizeUrl({ redirect_uri: 'https://other/cb' })).toBe(
      'https://auth.example/base/oauth/authorize?client_id=client%20id&redirect_uri=https%3A%2F%2Fother%2Fcb&response_type=token',
    )
    expect(client.authorizeUrl()).toBe(
      'https://auth.example/base/oauth/authorize?redirect_uri=https%3A%2F%2Fapp.example%2Fcb',
    )
  })

  it('keeps query parameters already in the endpoint URL', () => {
    const client = new Client('id', 's', {
      site: 'https://a.example',
      authorizeUrl: '/auth?tenant=t1&z=1',
    })
    expect(client.authCode.authorizeUrl({ z: '2' })).toBe(
      'https://a.example/auth?client_id=id&response_type=code&tenant=t1&z=2',
    )
  })

  it('refuses client_secret in authorization URLs and enforces requirePkce', () => {
    const client = new Client('id', 's', { site: 'https://a.example', requirePkce: true })
    expect(() => client.authCode.authorizeUrl({ client_secret: 'x' })).toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"params.client_secret"'),
    )
    expect(() => client.implicit.authorizeUrl({ client_secret: 'x' })).toThrow(TypeError)
    expect(() => client.authCode.authorizeUrl({ state: 's' })).toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"params.code_challenge" is required'),
    )
    expect(() =>
      client.authCode.authorizeUrl({ code_challenge: 'c', code_challenge_method: 'plain' }),
    ).toThrow(argError('ERR_INVALID_ARG_VALUE', '"params.code_challenge_method"'))
    expect(
      client.authCode.authorizeUrl({ code_challenge: 'c', code_challenge_method: 'S256' }),
    ).toContain('code_challenge=c&code_challenge_method=S256')
  })

  it.each([
    ['//evil.example/t'],
    ['/\\evil.example/t'],
    ['/\t/evil.example/t'],
    ['/\n/evil.example/t'],
    ['\\\\evil.example/t'],
    ['\\/evil.example/t'],
    [' //evil.example/t'],
    ['\t//evil.example/t'],
  ])('keeps %j on the site origin, normalising as WHATWG URL does', (path) => {
    const client = new Client('id', 's', {
      site: 'https://auth.example/base',
      tokenUrl: path,
      authorizeUrl: path,
    })
    expect(new URL(client.tokenUrl()).origin).toBe('https://auth.example')
    expect(new URL(client.authorizeUrl()).origin).toBe('https://auth.example')
    expect(
      new URL(new Client('id', 's', { site: 'https://auth.example', revokeUrl: path }).revokeUrl())
        .origin,
    ).toBe('https://auth.example')
  })

  it('follows a changed site', () => {
    const client = new Client('id', 's', { site: 'https://a.example' })
    expect(client.tokenUrl()).toBe('https://a.example/oauth/token')
    client.site = 'https://b.example/x'
    expect(client.tokenUrl()).toBe('https://b.example/x/oauth/token')
    expect(client.tokenUrl({ a: '1' })).toBe('https://b.example/x/oauth/token?a=1')
    expect(() => {
      client.site = 5 as never
    }).toThrow(argError('ERR_INVALID_ARG_TYPE', '"site"'))
  })

  it('needs a site for relative URLs', () => {
    expect(() => new Client('id', 's').tokenUrl()).toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"site"'),
    )
  })
})

describe('Client#request', () => {
  let server: FakeServer
  let other: FakeServer
  let client: Client

  beforeEach(async () => {
    server = await FakeServer.start()
    other = await FakeServer.start()
    client = new Client('id', 'secret', { site: `${server.url}/api` })
  })

  afterEach(async () => {
    await Promise.all([server.close(), other.close()])
    server.assertDone()
    other.assertDone()
  })

  it('sends params, headers and a form body; parses the JSON response', async () => {
    server.on('POST', '/api/things', { status: 201, body: { thingId: 7 } })
    const response = await client.request('post', 'things', {
      params: { b: '2', a: 'x y' },
      headers: { 'X-Trace': 't1' },
      body: { name: 'n', tags: ['a', 'b'] },
    })
    expect(response.status).toBe(201)
    expect(response.parsed).toEqual(new SnakyHash({ thing_id: 7 }))
    expect(response.headers['content-type']).toBe('application/json')
    const req = server.last()
    expect(req.url).toBe('/api/things?a=x%20y&b=2')
    expect(req.headers['x-trace']).toBe('t1')
    expect(req.headers['content-type']).toBe('application/x-www-form-urlencoded')
    expect(req.body).toBe('name=n&tags=a&tags=b')
  })

  it('encodes object bodies as JSON when the Content-Type says so or the builder asks for JSON', async () => {
    server.on('PUT', '/api/a', { body: '' }).on('PATCH', '/api/b', { body: '' })
    await client.request('put', 'a', {
      headers: { 'Content-Type': 'application/json' },
      body: { x: 1 },
    })
    expect(server.last().body).toBe('{"x":1}')
    const jsonClient = new Client('id', 's', { site: `${server.url}/api` }, (c) =>
      c.request('json'),
    )
    await jsonClient.request('PATCH', 'b', { body: { y: [1] } })
    expect(server.last().headers['content-type']).toBe('application/json')
    expect(server.last().body).toBe('{"y":[1]}')
  })

  it('sends connectionOpts headers and runs builder middleware in order', async () => {
    server.on('GET', '/api/m', { body: 'ok', headers: { 'content-type': 'text/plain' } })
    const seen: string[] = []
    const c = new Client(
      'id',
      's',
      { site: `${server.url}/api`, connectionOpts: { headers: { 'User-Agent': 'gh' } } },
      (b) =>
        b
          .use(async (req, next) => {
            seen.push('outer')
            req.headers['x-mw'] = '1'
            const res = await next(req)
            return { ...res, body: `${res.body}!` }
          })
          .use(async (req, next) => {
            seen.push('inner')
            return next(req)
          }),
    )
    const response = await c.request('get', 'm')
    expect(response.body).toBe('ok!')
    expect(seen).toEqual(['outer', 'inner'])
    expect(server.last().headers['user-agent']).toBe('gh')
    expect(server.last().headers['x-mw']).toBe('1')
  })

  it('uses an injected fetch', async () => {
    server.on('GET', '/api/f', { body: { ok: true } })
    const calls: string[] = []
    const c = new Client('id', 's', {
      site: `${server.url}/api`,
      fetch: async (url, init) => {
        calls.push(`${init.method} ${url}`)
        return fetch(url, init)
      },
    })
    expect((await c.request('get', 'f')).parsed).toEqual(new SnakyHash({ ok: true }))
    expect(calls).toEqual([`GET ${server.url}/api/f`])
  })

  it.each([301, 302, 307])('follows %i keeping the verb and body', async (status) => {
    server.on('POST', '/api/old', { status, headers: { location: '/api/new?x=1' } })
    server.on('POST', '/api/new', (req) => ({ body: { got: req.body, q: req.query.get('x') } }))
    const response = await client.request('post', 'old', { body: 'a=1' })
    expect(response.parsed).toEqual(new SnakyHash({ got: 'a=1', q: '1' }))
  })

  it('turns a 303 into a GET without body', async () => {
    server.on('POST', '/api/form', { status: 303, headers: { location: 'done' } })
    server.on('GET', '/api/done', (req) => ({
      body: { body: req.body, type: req.headers['content-type'] ?? null },
    }))
    const response = await client.request('post', 'form', { body: { a: '1' } })
    expect(response.parsed).toEqual(new SnakyHash({ body: '', type: null }))
  })

  it('keeps Authorization on same-origin redirects and drops it on cross-origin ones', async () => {
    server.on('GET', '/api/a', { status: 302, headers: { location: `${server.url}/api/b` } })
    server.on('GET', '/api/b', { status: 302, headers: { location: `${other.url}/c` } })
    other.on('GET', '/c', { body: 'end', headers: { 'content-type': 'text/plain' } })
    await client.request('get', 'a', { headers: { AUTHORIZATION: 'Bearer t' } })
    expect(server.requests.map((r) => r.headers.authorization)).toEqual(['Bearer t', 'Bearer t'])
    expect(other.last().headers.authorization).toBeUndefined()
  })

  it('keeps a protocol-relative Location on the current origin', async () => {
    server.on('GET', '/api/a', { status: 302, headers: { location: `//evil.example/x` } })
    server.on('GET', '///evil.example/x', { body: 'stayed' })
    expect((await client.request('get', 'a')).body).toBe('stayed')
  })

  it.each([['/\\'], ['/\t/'], ['\\\\'], ['\\/']])(
    'keeps a Location of %j + host on the current origin (WHATWG normalisation)',
    async (prefix) => {
      const host = new URL(other.url).host
      server.on('GET', '/api/a', { status: 302, headers: { location: `${prefix}${host}/x` } })
      server.on('GET', `///${host}/x`, { body: 'stayed' })
      expect((await client.request('get', 'a')).body).toBe('stayed')
    },
  )

  it('keeps a request path of /\\host on the site origin', async () => {
    const host = new URL(other.url).host
    server.on('GET', `///${host}/x`, { body: 'stayed' })
    expect((await client.request('get', `/\\${host}/x`)).body).toBe('stayed')
  })

  it('returns the 3xx once maxRedirects is reached, and 308 as is', async () => {
    const c = new Client('id', 's', { site: server.url, maxRedirects: 1 })
    server.on('GET', '/r1', { status: 302, headers: { location: '/r2' } })
    server.on('GET', '/r2', { status: 302, headers: { location: '/r3' } })
    expect((await c.request('get', '/r1')).status).toBe(302)
    server.on('GET', '/p', { status: 308, headers: { location: '/q' } })
    expect((await c.request('get', '/p')).status).toBe(308)
  })

  it('throws missing_location for a redirect without a Location or with an invalid one', async () => {
    server.on('GET', '/api/r', { status: 301 })
    await expect(client.request('get', 'r')).rejects.toMatchObject({
      name: 'OAuth2Error',
      code: 'missing_location',
      message: 'Got 301 status code, but no Location header was present',
    })
    server.on('GET', '/api/bad', { status: 302, headers: { location: 'http://[::1' } })
    await expect(client.request('get', 'bad')).rejects.toMatchObject({
      name: 'OAuth2Error',
      code: 'missing_location',
      message: 'Got 302 status code, but the Location header is not a valid URL',
    })
  })

  it('throws OAuth2Error for 400-599, or sets response.error with raiseErrors false', async () => {
    const body = { error: 'invalid_token', error_description: 'expired' }
    server.on('GET', '/api/e', { status: 401, body }, 3)
    const error = await client.request('get', 'e').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OAuth2Error)
    expect(error).toMatchObject({
      code: 'invalid_token',
      description: 'expired',
      response: { status: 401 },
    })
    const response = await client.request('get', 'e', { raiseErrors: false })
    expect(response.status).toBe(401)
    expect(response.error?.code).toBe('invalid_token')
    const lenient = new Client('id', 's', { site: `${server.url}/api`, raiseErrors: false })
    expect((await lenient.request('get', 'e')).error).toBeInstanceOf(OAuth2Error)
  })

  it('throws unhandled_status outside 200-599 regardless of raiseErrors', async () => {
    server.on('GET', '/api/odd', { status: 600 })
    await expect(client.request('get', 'odd', { raiseErrors: false })).rejects.toMatchObject({
      code: 'unhandled_status',
      message: 'Unhandled status code value of 600',
    })
  })

  it('maps connection failures to ConnectionError', async () => {
    const closed = await FakeServer.start()
    await closed.close()
    const c = new Client('id', 's', { site: closed.url })
    await expect(c.request('get', '/x')).rejects.toBeInstanceOf(ConnectionError)
    const viaFetch = new Client('id', 's', { site: closed.url, fetch })
    await expect(viaFetch.request('get', '/x')).rejects.toBeInstanceOf(ConnectionError)
  })

  it('maps timeouts to TimeoutError (undici and fetch)', async () => {
    // The time is the subject here: the answer comes 400 ms late, after the 50 ms timeout.
    server.on(
      'GET',
      '/api/slow',
      () =>
        new Promise((resolve) =>
          setTimeout(() => {
            resolve({ body: 'late' })
          }, 400),
        ),
      2,
    )
    const c = new Client('id', 's', { site: `${server.url}/api`, connectionOpts: { timeout: 50 } })
    await expect(c.request('get', 'slow')).rejects.toBeInstanceOf(TimeoutError)
    const f = new Client('id', 's', {
      site: `${server.url}/api`,
      fetch,
      connectionOpts: { timeout: 50 },
    })
    await expect(f.request('get', 'slow')).rejects.toBeInstanceOf(TimeoutError)
  })

  it('rejects bad arguments', async () => {
    await expect(client.request('fetch' as never, 'x')).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"verb"'),
    )
    await expect(client.request('get', 5 as never)).rejects.toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"url"'),
    )
    await expect(client.request('get', 'x', { params: { a: {} } })).rejects.toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"params.a"'),
    )
  })
})

describe('Client#getToken and client authentication', () => {
  let server: FakeServer
  const tokenBody = {
    access_token: 'at',
    token_type: 'Bearer',
    expires_in: 3600,
    refresh_token: 'rt',
  }

  beforeEach(async () => {
    server = await FakeServer.start()
  })

  afterEach(async () => {
    await server.close()
    server.assertDone()
  })

  it('posts a form with HTTP Basic (form-encoded per RFC 6749 §2.3.1) and builds the token', async () => {
    server.on('POST', '/oauth/token', { body: tokenBody })
    const client = new Client('id:1', 'a+b%2Fc d', { site: server.url })
    const token = await client.getToken({ grant_type: 'client_credentials', scope: 'a b' })
    expect(token.token).toBe('at')
    expect(token.refreshToken).toBe('rt')
    expect(token.params).toEqual({ token_type: 'Bearer' })
    expect(token.response?.status).toBe(200)
    const req = server.last()
    expect(req.body).toBe('grant_type=client_credentials&scope=a%20b')
    expect(req.headers['content-type']).toBe('application/x-www-form-urlencoded')
    expect(Buffer.from(req.headers.authorization!.slice(6), 'base64').toString()).toBe(
      'id%3A1:a%2Bb%252Fc+d',
    )
  })

  it("raises the error of a 200 that carries one and no token (GitHub's, Slack's)", async () => {
    server.on('POST', '/oauth/token', {
      body: { error: 'bad_verification_code', error_description: 'The code is incorrect.' },
    })
    server.on('POST', '/oauth/token', { body: { ok: false, error: 'invalid_code' } })
    const client = new Client('id', 'secret', { site: server.url })
    await expect(client.authCode.getToken('c')).rejects.toMatchObject({
      name: 'OAuth2Error',
      code: 'bad_verification_code',
      description: 'The code is incorrect.',
    })
    await expect(client.authCode.getToken('c')).rejects.toMatchObject({ code: 'invalid_code' })
  })

  it('sends raw Basic credentials with basicAuthEncoding raw (the gem)', async () => {
    server.on('POST', '/oauth/token', { body: tokenBody })
    const client = new Client('id', 'a+b c', { site: server.url, basicAuthEncoding: 'raw' })
    await client.clientCredentials.getToken()
    expect(server.last().headers.authorization).toBe(
      `Basic ${Buffer.from('id:a+b c').toString('base64')}`,
    )
  })

  it('lets a caller Authorization header win over Basic', async () => {
    server.on('POST', '/oauth/token', { body: tokenBody })
    const client = new Client('id', 's', { site: server.url })
    await client.clientCredentials.getToken({ headers: { Authorization: 'Custom x' } })
    expect(server.last().headers.authorization).toBe('Custom x')
  })

  it('request_body sends client_id and client_secret in the form (caller params win)', async () => {
    server.on('POST', '/oauth/token', { body: tokenBody }, 2)
    const client = new Client('id', 'sec', { site: server.url, authScheme: 'request_body' })
    await client.clientCredentials.getToken({ resource: 'https://api.example' })
    expect(server.last().form).toEqual({
      client_id: 'id',
      client_secret: 'sec',
      grant_type: 'client_credentials',
      resource: 'https://api.example',
    })
    expect(server.last().headers.authorization).toBeUndefined()
    await client.clientCredentials.getToken({ client_id: 'other' })
    expect(server.last().form.client_id).toBe('other')
  })

  it('tls_client_auth sends only client_id', async () => {
    server.on('POST', '/oauth/token', { body: tokenBody })
    const client = new Client('id', 'sec', { site: server.url, authScheme: 'tls_client_auth' })
    await client.clientCredentials.getToken()
    expect(server.last().form).toEqual({ client_id: 'id', grant_type: 'client_credentials' })
    expect(server.last().headers.authorization).toBeUndefined()
  })

  it('private_key_jwt builds the RFC 7523 §2.2 client assertion', async () => {
    server.on('POST', '/oauth/token', { body: tokenBody })
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true })
    const clock = new FakeClock(Date.UTC(2030, 0, 1))
    const client = new Client('cid', undefined, {
      site: server.url,
      authScheme: 'private_key_jwt',
      privateKey: { key: await exportJWK(privateKey), algorithm: 'ES256', kid: 'k1' },
      clock,
    })
    await client.clientCredentials.getToken()
    const form = server.last().form
    expect(form.client_assertion_type).toBe(
      'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    )
    expect(decodeProtectedHeader(form.client_assertion!)).toMatchObject({ alg: 'ES256', kid: 'k1' })
    const { payload } = await jwtVerify(form.client_assertion!, publicKey, {
      currentDate: new Date(clock.now()),
    })
    expect(payload).toMatchObject({
      iss: 'cid',
      sub: 'cid',
      aud: `${server.url}/oauth/token`,
      iat: clock.nowSeconds(),
    })
    expect(payload.exp).toBe(clock.nowSeconds() + 60)
    expect(typeof payload.jti).toBe('string')
    expect(server.last().headers.authorization).toBeUndefined()
  })

  it('private_key_jwt without a key needs a caller assertion', async () => {
    server.on('POST', '/oauth/token', { body: tokenBody })
    const client = new Client('cid', undefined, { site: server.url, authScheme: 'private_key_jwt' })
    await expect(client.clientCredentials.getToken()).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"options.privateKey"'),
    )
    await client.clientCredentials.getToken({
      client_assertion: 'mine',
      client_assertion_type: 'x',
    })
    expect(server.last().form).toMatchObject({
      client_assertion: 'mine',
      client_assertion_type: 'x',
    })
  })

  it('sends params in the query for tokenMethod get and post_with_query_string', async () => {
    server
      .on('GET', '/oauth/token', { body: tokenBody })
      .on('POST', '/oauth/token', { body: tokenBody })
    const client = new Client('id', 's', { site: server.url, tokenMethod: 'get' })
    await client.clientCredentials.getToken({ scope: 'x' })
    expect(server.requests[0]!.url).toBe('/oauth/token?grant_type=client_credentials&scope=x')
    await client.clientCredentials.getToken({ tokenMethod: 'post_with_query_string' })
    expect(server.last().method).toBe('POST')
    expect(server.last().url).toBe('/oauth/token?grant_type=client_credentials')
    expect(server.last().body).toBe('')
  })

  it('sends JSON when the caller sets Content-Type: application/json; reserved keys never go on the wire', async () => {
    server.on('POST', '/oauth/token', { body: tokenBody })
    const client = new Client('id', 's', { site: server.url })
    await client.getToken({
      grant_type: 'x',
      headers: { 'Content-Type': 'application/json' },
      snaky: true,
      parse: 'json',
      tokenName: 'access_token',
    })
    expect(JSON.parse(server.last().body)).toEqual({ grant_type: 'x' })
  })

  it('lets accessTokenOpts override response fields, and reads tokenName from params', async () => {
    server.on(
      'POST',
      '/oauth/token',
      { body: { accessToken: 'camel', custom_token: 'ct', expires_in: 10 } },
      2,
    )
    const client = new Client('id', 's', { site: server.url })
    const a = await client.getToken({ grant_type: 'x' }, { expires_in: 99, mode: 'query' })
    expect(a.token).toBe('camel')
    expect(a.expiresIn).toBe(99)
    expect(a.mode).toBe('query')
    const b = await client.getToken({ grant_type: 'x', tokenName: 'customToken' })
    expect(b.token).toBe('ct')
    expect(b.params.access_token).toBe('camel')
  })

  it('keeps provider keys with snaky false and uses snakyHashClass', async () => {
    class Mine extends SnakyHash {}
    server.on('POST', '/oauth/token', { body: { accessToken: 'x', extraField: 1 } }, 2)
    const client = new Client('id', 's', { site: server.url })
    const plain = await client.getToken({ grant_type: 'x', snaky: false })
    expect(plain.token).toBe('x')
    expect(plain.params).toEqual({ extraField: 1 })
    const mine = await client.getToken({ grant_type: 'x', snakyHashClass: Mine })
    expect(mine.response?.parsed).toBeInstanceOf(Mine)
  })

  it('parses form token responses', async () => {
    server.on('POST', '/oauth/token', {
      body: 'access_token=f&expires_in=60',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    const token = await new Client('id', 's', { site: server.url }).getToken({ grant_type: 'x' })
    expect(token.token).toBe('f')
    expect(token.expiresIn).toBe(60)
  })

  it.each([
    ['HTML', '<html>no</html>', 'text/html'],
    ['a JSON array', '[1,2]', 'application/json'],
    ['an empty JSON object', '{}', 'application/json'],
    ['invalid JSON', '{"access_token":', 'application/json'],
  ])('throws invalid_token_response with the body for %s', async (_name, body, type) => {
    server.on('POST', '/oauth/token', { body, headers: { 'content-type': type } })
    const error = await new Client('id', 's', { site: server.url })
      .getToken({ grant_type: 'x' })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OAuth2Error)
    expect(error).toMatchObject({ code: 'invalid_token_response', body })
    expect((error as Error).message).toContain(body)
  })

  it('with raiseErrors false, returns a token whose response carries the server error (the gem)', async () => {
    const body = { error: 'invalid_grant', error_description: 'bad code' }
    server.on('POST', '/oauth/token', { status: 400, body }, 2)
    const warnings: string[] = []
    const client = new Client('id', 's', {
      site: server.url,
      raiseErrors: false,
      logger: { debug: () => undefined, warn: (m) => warnings.push(m) },
    })
    const token = await client.authCode.getToken('bad')
    expect(token).toBeInstanceOf(AccessToken)
    expect(token?.token).toBe('')
    expect(token?.params).toEqual(body)
    expect(token?.response?.status).toBe(400)
    expect(token?.response?.error).toBeInstanceOf(OAuth2Error)
    expect(token?.response?.error).toMatchObject({ code: 'invalid_grant', description: 'bad code' })
    const viaGetToken = await client.getToken({ grant_type: 'client_credentials' })
    expect(viaGetToken?.response?.error?.code).toBe('invalid_grant')
    expect(warnings).toEqual([])
  })

  it.each([
    ['HTML', 200, '<html>no</html>', 'text/html'],
    ['a JSON array', 200, '[1,2]', 'application/json'],
    ['an empty JSON object', 200, '{}', 'application/json'],
    ['invalid JSON', 200, '{"access_token":', 'application/json'],
    ['a 503 with an HTML body', 503, '<h1>down</h1>', 'text/html'],
  ])(
    'with raiseErrors false, resolves undefined for %s (the gem returns nil)',
    async (_name, status, body, type) => {
      server.on('POST', '/oauth/token', { status, body, headers: { 'content-type': type } })
      const client = new Client('id', 's', { site: server.url, raiseErrors: false })
      await expect(client.clientCredentials.getToken()).resolves.toBeUndefined()
    },
  )

  it('with raiseErrors false, revocation and introspection return the error response', async () => {
    const body = { error: 'invalid_client' }
    server.on('POST', '/oauth/revoke', { status: 401, body })
    server.on('POST', '/oauth/introspect', { status: 401, body })
    const client = new Client('id', 's', { site: server.url, raiseErrors: false })
    const revoked = await client.revokeToken('tok')
    expect(revoked.status).toBe(401)
    expect(revoked.error?.code).toBe('invalid_client')
    const introspected = await client.introspectToken('tok')
    expect(introspected.error?.code).toBe('invalid_client')
  })

  it('revokes with a form POST (RFC 7009) or the gem query string', async () => {
    server.on('POST', '/oauth/revoke', { status: 200 }, 2)
    const client = new Client('id', 's', { site: server.url })
    const response = await client.revokeToken('tok', 'refresh_token', { extra: '1' })
    expect(response.status).toBe(200)
    expect(server.last().form).toEqual({
      extra: '1',
      token: 'tok',
      token_type_hint: 'refresh_token',
    })
    expect(server.last().headers.authorization).toMatch(/^Basic /)
    await client.revokeToken('tok', undefined, { tokenMethod: 'post_with_query_string' })
    expect(server.last().url).toBe('/oauth/revoke?token=tok')
  })

  it('introspects with client authentication', async () => {
    server.on('POST', '/oauth/introspect', { body: { active: true, scope: 'a' } })
    const response = await new Client('id', 's', { site: server.url }).introspectToken(
      'tok',
      'access_token',
    )
    expect(response.parsed).toEqual(new SnakyHash({ active: true, scope: 'a' }))
    expect(server.last().form).toEqual({ token: 'tok', token_type_hint: 'access_token' })
  })
})

describe('redirects never replay credentials', () => {
  let server: FakeServer
  let other: FakeServer

  beforeEach(async () => {
    server = await FakeServer.start()
    other = await FakeServer.start()
  })

  afterEach(async () => {
    await Promise.all([server.close(), other.close()])
    // `other` has no expectations: any request that reached it fails here.
    server.assertDone()
    other.assertDone()
  })

  it.each([301, 302, 303, 307, 308])(
    'does not follow a %i from the token endpoint, cross-origin or not: redirect_not_followed',
    async (status) => {
      server.on('POST', '/oauth/token', { status, headers: { location: `${other.url}/steal` } })
      server.on('POST', '/oauth/token', { status, headers: { location: '/oauth/token2' } })
      const client = new Client('id', 'CLIENT-SECRET', {
        site: server.url,
        authScheme: 'request_body',
      })
      for (let i = 0; i < 2; i++) {
        const error = await client.password.getToken('ann', 'PW').catch((e: unknown) => e)
        expect(error).toBeInstanceOf(OAuth2Error)
        expect(error).toMatchObject({ code: 'redirect_not_followed', response: { status } })
        expect((error as OAuth2Error).description).toContain('tokenUrl')
      }
    },
  )

  it('does not follow redirects of refresh, revocation and introspection; with raiseErrors false returns the 3xx with response.error', async () => {
    const location = { location: `${other.url}/steal` }
    server.on('POST', '/oauth/token', { status: 307, headers: location }, 2)
    server.on('POST', '/oauth/revoke', { status: 307, headers: location }, 2)
    server.on('POST', '/oauth/introspect', { status: 302, headers: location }, 2)
    const strict = new Client('id', 's', { site: server.url })
    await expect(
      new AccessToken(strict, 'at', { refresh_token: 'RT' }).refresh(),
    ).rejects.toMatchObject({ code: 'redirect_not_followed' })
    await expect(strict.revokeToken('tok')).rejects.toMatchObject({
      code: 'redirect_not_followed',
    })
    await expect(strict.introspectToken('tok')).rejects.toMatchObject({
      code: 'redirect_not_followed',
    })
    const lenient = new Client('id', 's', { site: server.url, raiseErrors: false })
    await expect(lenient.clientCredentials.getToken()).resolves.toBeUndefined()
    const revoked = await lenient.revokeToken('tok')
    expect(revoked.status).toBe(307)
    expect(revoked.error?.code).toBe('redirect_not_followed')
    const introspected = await lenient.introspectToken('tok')
    expect(introspected.status).toBe(302)
    expect(introspected.error?.code).toBe('redirect_not_followed')
  })

  it('strips Authorization, Proxy-Authorization, cookies, configured and caller headers on a cross-origin hop', async () => {
    const client = new Client('id', 's', {
      site: server.url,
      connectionOpts: { headers: { 'X-Api-Key': 'key', 'User-Agent': 'ua' } },
    })
    server.on('GET', '/a', { status: 302, headers: { location: '/b' } })
    server.on('GET', '/b', { status: 302, headers: { location: `${other.url}/c` } })
    other.on('GET', '/c', { body: 'end', headers: { 'content-type': 'text/plain' } })
    const token = new AccessToken(client, 'AT')
    const response = await token.get('/a', {
      headers: {
        'Proxy-Authorization': 'Basic cHJveHk=',
        Cookie: 'sid=1',
        'X-Custom': 'c',
      },
    })
    expect(response.body).toBe('end')
    for (const request of server.requests) {
      expect(request.headers).toMatchObject({
        authorization: 'Bearer AT',
        'proxy-authorization': 'Basic cHJveHk=',
        cookie: 'sid=1',
        'x-api-key': 'key',
        'x-custom': 'c',
      })
    }
    const crossed = other.last().headers
    for (const name of [
      'authorization',
      'proxy-authorization',
      'cookie',
      'x-api-key',
      'x-custom',
    ]) {
      expect(crossed[name]).toBeUndefined()
    }
  })

  it('turns a cross-origin 303 into a bare GET', async () => {
    server.on('POST', '/form', { status: 303, headers: { location: `${other.url}/done` } })
    other.on('GET', '/done', { body: 'ok', headers: { 'content-type': 'text/plain' } })
    const client = new Client('id', 's', { site: server.url })
    await client.request('post', '/form', {
      body: { secret_field: 'S' },
      headers: { Authorization: 'Bearer AT' },
    })
    expect(other.last().body).toBe('')
    expect(other.last().headers.authorization).toBeUndefined()
    expect(other.last().headers['content-type']).toBeUndefined()
  })

  it.each([301, 302, 307])(
    'does not carry a body (here the token in body mode) to another origin on a %i',
    async (status) => {
      server.on('POST', '/api', { status, headers: { location: `${other.url}/api` } }, 2)
      const client = new Client('id', 's', { site: server.url })
      const token = new AccessToken(client, 'BODY-TOKEN', { mode: 'body' })
      const error = await token.post('/api', { body: { a: '1' } }).catch((e: unknown) => e)
      expect(error).toMatchObject({ code: 'redirect_not_followed', response: { status } })
      const lenient = new Client('id', 's', { site: server.url, raiseErrors: false })
      const response = await new AccessToken(lenient, 'BODY-TOKEN', { mode: 'body' }).post('/api')
      expect(response.status).toBe(status)
      expect(response.error?.code).toBe('redirect_not_followed')
    },
  )

  it('does not follow a Location that is not http(s)', async () => {
    server.on('GET', '/a', { status: 302, headers: { location: 'file:///etc/passwd' } })
    const client = new Client('id', 's', { site: server.url })
    await expect(client.request('get', '/a')).rejects.toMatchObject({
      code: 'redirect_not_followed',
    })
  })
})

describe('debug logging', () => {
  let server: FakeServer

  beforeEach(async () => {
    server = await FakeServer.start()
  })

  afterEach(async () => {
    vi.unstubAllEnvs()
    await server.close()
    server.assertDone()
  })

  const capture = () => {
    const lines: string[] = []
    return {
      lines,
      logger: { debug: (m: string) => lines.push(m), warn: (m: string) => lines.push(`WARN ${m}`) },
    }
  }

  it('logs nothing unless OAUTH_DEBUG is true', async () => {
    vi.stubEnv('OAUTH_DEBUG', 'false')
    server.on('POST', '/oauth/token', { body: { access_token: 'at' } })
    const { lines, logger } = capture()
    await new Client('id', 's', { site: server.url, logger }).clientCredentials.getToken()
    expect(lines).toEqual([])
  })

  it('logs requests and responses with filtered secrets in headers, query, form and JSON', async () => {
    vi.stubEnv('OAUTH_DEBUG', 'TRUE')
    server.on('POST', '/oauth/token', {
      body: {
        access_token: 'AT-SECRET',
        refresh_token: 'RT-SECRET',
        nested: { id_token: 'ID-SECRET' },
        scope: 'api',
      },
    })
    server.on('GET', '/oauth/token', { body: 'ok', headers: { 'content-type': 'text/plain' } })
    const { lines, logger } = capture()
    const client = new Client('id', 'CLIENT-SECRET', {
      site: server.url,
      logger,
      authScheme: 'request_body',
    })
    await client.password.getToken('ann', 'PASSWORD-SECRET', {
      code_verifier: 'CV-SECRET',
      device_code: 'DC-SECRET',
      subject_token: 'ST-SECRET',
      actor_token: 'ACT-SECRET',
    })
    await client.request('get', '/oauth/token', { params: { token: 'Q-SECRET', keep: 'visible' } })
    const text = lines.join('\n')
    expect(text).toContain('request: POST')
    expect(text).toContain('response: Status 200')
    expect(text).toContain('scope')
    expect(text).toContain('keep=visible')
    expect(text).toContain('[FILTERED]')
    for (const secret of [
      'AT-SECRET',
      'RT-SECRET',
      'ID-SECRET',
      'CLIENT-SECRET',
      'CV-SECRET',
      'Q-SECRET',
      'DC-SECRET',
      'ST-SECRET',
      'ACT-SECRET',
    ]) {
      expect(text).not.toContain(secret)
    }
  })

  it('filters password, code, client_assertion, proxy-authorization, cookies, URL userinfo, configured headers and Location secrets', async () => {
    vi.stubEnv('OAUTH_DEBUG', 'true')
    server.on('POST', '/oauth/token', { body: { access_token: 'AT-SECRET' } }, 3)
    server.on('GET', '/r', {
      status: 302,
      headers: {
        location: '/cb?code=LOC-CODE-SECRET&state=visible-state#access_token=FRAG-SECRET',
        'set-cookie': 'sid=SETCOOKIE-SECRET; HttpOnly',
      },
    })
    server.on('GET', '/cb', {
      body: '{"access_token":"TEXT-JSON-SECRET","scope":"visible-scope"}',
      headers: { 'content-type': 'text/plain' },
    })
    server.on('GET', '/u', {
      body: 'access_token=TEXT-FORM-SECRET&expires=3600',
      headers: { 'content-type': 'text/plain; charset=utf-8' },
    })
    const { lines, logger } = capture()
    const client = new Client('id', 'BASIC-SECRET', {
      site: server.url,
      logger,
      connectionOpts: { headers: { 'X-Api-Key': 'APIKEY-SECRET' } },
    })
    await client.password.getToken('ann', 'PW-SECRET')
    await client.authCode.getToken('CODE-SECRET', { code_verifier: 'CV-SECRET' })
    await client.getToken({
      grant_type: 'client_credentials',
      client_assertion: 'CA-SECRET',
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    })
    await client.request('get', '/r', {
      headers: {
        'Proxy-Authorization': 'Basic PROXY-SECRET',
        Cookie: 'sid=COOKIE-SECRET',
        'X-Trace': 'visible-trace',
      },
    })
    const { host } = new URL(server.url)
    await client.request('get', `http://USERNAME-SECRET:USERINFO-SECRET@${host}/u`)
    const text = lines.join('\n')
    for (const visible of ['username=ann', 'visible-trace', 'visible-state', 'visible-scope']) {
      expect(text).toContain(visible)
    }
    for (const secret of [
      'BASIC-SECRET',
      'AT-SECRET',
      'PW-SECRET',
      'CODE-SECRET',
      'CV-SECRET',
      'CA-SECRET',
      'PROXY-SECRET',
      'COOKIE-SECRET',
      'SETCOOKIE-SECRET',
      'LOC-CODE-SECRET',
      'FRAG-SECRET',
      'TEXT-JSON-SECRET',
      'TEXT-FORM-SECRET',
      'USERNAME-SECRET',
      'USERINFO-SECRET',
      'APIKEY-SECRET',
    ]) {
      expect(text).not.toContain(secret)
    }
  })

  it('filters DPoP proofs and DPoP Authorization headers', async () => {
    vi.stubEnv('OAUTH_DEBUG', 'true')
    server.on('POST', '/oauth/token', {
      body: { access_token: 'DPOP-AT-SECRET', token_type: 'DPoP' },
    })
    server.on('GET', '/r', { body: {} })
    const { lines, logger } = capture()
    const client = new Client('id', 's', { site: server.url, logger, dpop: true })
    const token = await client.clientCredentials.getToken()
    await token.get('/r')
    const text = lines.join('\n')
    expect(text).toContain(`"dpop":"[FILTERED]"`)
    expect(text).not.toContain('DPOP-AT-SECRET')
    expect(text).not.toMatch(/eyJ/) // no JWS (proof) in the output
  })

  it('accepts any logger with callable debug and warn: a function with those methods, a class instance', async () => {
    vi.stubEnv('OAUTH_DEBUG', 'true')
    server.on('GET', '/a', { body: 'ok', headers: { 'content-type': 'text/plain' } }, 2)
    const lines: string[] = []
    const fnLogger = Object.assign(() => undefined, {
      debug: (m: string) => lines.push(`fn ${m}`),
      warn: (m: string) => lines.push(`fn WARN ${m}`),
    })
    await new Client('id', 's', { site: server.url, logger: fnLogger }).request('get', '/a')
    class Sink {
      readonly #prefix = 'cls'
      debug(m: string) {
        lines.push(`${this.#prefix} ${m}`)
      }
      warn(m: string) {
        lines.push(`${this.#prefix} WARN ${m}`)
      }
    }
    await new Client('id', 's', { site: server.url, logger: new Sink() }).request('get', '/a')
    expect(lines).toContain(`fn request: GET ${server.url}/a`)
    expect(lines).toContain(`cls request: GET ${server.url}/a`)
    for (const bad of [{}, { debug() {} }, () => undefined, null, 'console']) {
      expect(() => new Client('id', 's', { logger: bad as never })).toThrow(
        argError(
          'ERR_INVALID_ARG_TYPE',
          '"options.logger" must be a value with debug() and warn()',
        ),
      )
    }
  })

  it('filters Authorization and configured keys', async () => {
    vi.stubEnv('OAUTH_DEBUG', 'true')
    const { configure } = await import('./config.js')
    const previous = configure({ filteredDebugKeys: ['password'], filteredLabel: '<hidden>' })
    try {
      server.on('POST', '/oauth/token', { body: { access_token: 'AT-SECRET' } })
      const { lines, logger } = capture()
      await new Client('id', 'BASIC-SECRET', { site: server.url, logger }).password.getToken(
        'ann',
        'PW-SECRET',
      )
      const text = lines.join('\n')
      expect(text).toContain('<hidden>')
      expect(text).toContain('username=ann')
      expect(text).not.toMatch(/PW-SECRET|AT-SECRET|Basic /)
    } finally {
      configure(previous)
    }
  })
})
