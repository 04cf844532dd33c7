import { EmbeddedJWK, jwtVerify } from 'jose'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { argError } from '../../test/support/expect.js'
import { FakeServer } from '../../test/support/fake-server.js'
import { Client } from '../client.js'
import { OAuth2Error } from '../error.js'
import { pkce } from '../pkce.js'

describe('pushed authorization requests (RFC 9126)', () => {
  let server: FakeServer

  const parClient = (options: ConstructorParameters<typeof Client>[2] = {}) =>
    new Client('client-1', 'secret', {
      site: server.url,
      authorizeUrl: '/authorize',
      pushedAuthorizationRequestUrl: '/par',
      redirect_uri: 'https://app.example/cb',
      ...options,
    })

  const created = { status: 201, body: { request_uri: 'urn:example:abc', expires_in: 60 } }

  beforeEach(async () => {
    server = await FakeServer.start()
  })

  afterEach(async () => {
    await server.close()
    server.assertDone()
  })

  it('posts the authorization parameters with client authentication and returns the request_uri URL', async () => {
    server.on('POST', '/par', created)
    const { code_challenge, code_challenge_method } = pkce()
    const url = await parClient().authCode.pushAuthorizationRequest({
      scope: 'openid api',
      state: 's1',
      code_challenge,
      code_challenge_method,
      headers: { 'X-Request-Id': 'r1' },
    })
    expect(url).toBe(`${server.url}/authorize?client_id=client-1&request_uri=urn%3Aexample%3Aabc`)
    const request = server.last()
    expect(request.headers.authorization).toBe(
      `Basic ${Buffer.from('client-1:secret').toString('base64')}`,
    )
    expect(request.headers['x-request-id']).toBe('r1')
    expect(request.headers['content-type']).toBe('application/x-www-form-urlencoded')
    expect(request.form).toEqual({
      client_id: 'client-1',
      code_challenge,
      code_challenge_method: 'S256',
      redirect_uri: 'https://app.example/cb',
      response_type: 'code',
      scope: 'openid api',
      state: 's1',
    })
  })

  it('authenticates per authScheme (request_body) and lets caller params win', async () => {
    server.on('POST', '/par', created)
    await parClient({ authScheme: 'request_body' }).authCode.pushAuthorizationRequest({
      redirect_uri: 'https://other.example/cb',
    })
    expect(server.last().form).toMatchObject({
      client_id: 'client-1',
      client_secret: 'secret',
      redirect_uri: 'https://other.example/cb',
    })
    expect(server.last().headers.authorization).toBeUndefined()
  })

  it('carries a DPoP proof for the PAR endpoint when the client has DPoP (RFC 9449 §10.1)', async () => {
    server.on('POST', '/par', created)
    await parClient({ dpop: true }).authCode.pushAuthorizationRequest()
    const { payload } = await jwtVerify(String(server.last().headers.dpop), EmbeddedJWK, {
      typ: 'dpop+jwt',
    })
    expect(payload).toMatchObject({ htm: 'POST', htu: `${server.url}/par` })
  })

  it('requirePar refuses authorizeUrl with par_required, and PAR still works', async () => {
    server.on('POST', '/par', created)
    const client = parClient({ requirePar: true })
    const error = (() => {
      try {
        return client.authCode.authorizeUrl({ scope: 'openid' })
      } catch (e) {
        return e
      }
    })()
    expect(error).toBeInstanceOf(OAuth2Error)
    expect(error).toMatchObject({
      code: 'par_required',
      description: expect.stringContaining(
        'client.authCode.pushAuthorizationRequest(params)',
      ) as unknown,
    })
    expect(await client.authCode.pushAuthorizationRequest()).toContain('request_uri=')
    expect(() => parClient({ requirePar: 'yes' as never })).toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"options.requirePar" must be a boolean'),
    )
  })

  it('applies requirePkce before sending anything', async () => {
    const client = parClient({ requirePkce: true })
    await expect(client.authCode.pushAuthorizationRequest({ scope: 'x' })).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"params.code_challenge" is required (requirePkce)'),
    )
    await expect(client.authCode.pushAuthorizationRequest('x' as never)).rejects.toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"params" must be an object'),
    )
  })

  it("throws the server's error whatever raiseErrors, and never follows a redirect", async () => {
    server.on('POST', '/par', {
      status: 400,
      body: { error: 'invalid_request', error_description: 'bad scope' },
    })
    server.on('POST', '/par', { status: 307, headers: { location: '/elsewhere' } })
    const client = parClient({ raiseErrors: false })
    await expect(client.authCode.pushAuthorizationRequest()).rejects.toMatchObject({
      code: 'invalid_request',
      description: 'bad scope',
    })
    await expect(client.authCode.pushAuthorizationRequest()).rejects.toMatchObject({
      code: 'redirect_not_followed',
      description: expect.stringContaining('set pushedAuthorizationRequestUrl') as unknown,
    })
  })

  it.each([
    [{ expires_in: 60 }, 'has no request_uri string'],
    [{ request_uri: '', expires_in: 60 }, 'has no request_uri string'],
    [{ request_uri: 'urn:x' }, 'has no positive expires_in number'],
    [{ request_uri: 'urn:x', expires_in: '60' }, 'has no positive expires_in number'],
    [['urn:x'], 'is not a JSON object'],
    ['not json', 'is not a JSON object'],
  ])(
    'refuses the pushed authorization response %j: invalid_par_response',
    async (body, problem) => {
      server.on('POST', '/par', {
        status: 201,
        headers: { 'content-type': 'application/json' },
        body: typeof body === 'string' ? `"${body}"` : body,
      })
      await expect(parClient().authCode.pushAuthorizationRequest()).rejects.toMatchObject({
        code: 'invalid_par_response',
        description: `the pushed authorization response ${problem} (RFC 9126 §2.2)`,
      })
    },
  )

  it('refuses invalid JSON with invalid_par_response', async () => {
    server.on('POST', '/par', {
      status: 201,
      headers: { 'content-type': 'application/json' },
      body: '{"request_uri":',
    })
    await expect(parClient().authCode.pushAuthorizationRequest()).rejects.toMatchObject({
      code: 'invalid_par_response',
      description: expect.stringContaining('is not JSON') as unknown,
    })
  })

  it('needs the PAR endpoint: invalid_metadata naming the option', async () => {
    const client = new Client('client-1', 'secret', { site: server.url })
    await expect(client.authCode.pushAuthorizationRequest()).rejects.toMatchObject({
      code: 'invalid_metadata',
      description:
        'the client has no pushed authorization request endpoint: use Client.discover() or set options.pushedAuthorizationRequestUrl',
    })
  })
})
