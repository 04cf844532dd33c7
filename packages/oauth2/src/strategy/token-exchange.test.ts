import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { argError } from '../../test/support/expect.js'
import { FakeServer } from '../../test/support/fake-server.js'
import { AccessToken } from '../access-token.js'
import { Client } from '../client.js'
import { TOKEN_EXCHANGE_GRANT_TYPE, TOKEN_TYPES } from './token-exchange.js'

const ISSUED = {
  access_token: 'exchanged',
  issued_token_type: TOKEN_TYPES.access_token,
  token_type: 'Bearer',
  expires_in: 60,
}

describe('token exchange (RFC 8693)', () => {
  let server: FakeServer
  let client: Client

  beforeEach(async () => {
    server = await FakeServer.start()
    client = new Client('gateway', 'gateway-secret', { site: server.url })
  })

  afterEach(async () => {
    await server.close()
    server.assertDone()
  })

  it('has the RFC URNs as constants', () => {
    expect(TOKEN_EXCHANGE_GRANT_TYPE).toBe('urn:ietf:params:oauth:grant-type:token-exchange')
    expect(TOKEN_TYPES).toEqual({
      access_token: 'urn:ietf:params:oauth:token-type:access_token',
      refresh_token: 'urn:ietf:params:oauth:token-type:refresh_token',
      id_token: 'urn:ietf:params:oauth:token-type:id_token',
      saml1: 'urn:ietf:params:oauth:token-type:saml1',
      saml2: 'urn:ietf:params:oauth:token-type:saml2',
      jwt: 'urn:ietf:params:oauth:token-type:jwt',
    })
    expect(Object.isFrozen(TOKEN_TYPES)).toBe(true)
  })

  it('sends the RFC parameters with client authentication and keeps issued_token_type on the token', async () => {
    server.on('POST', '/oauth/token', { body: ISSUED })
    const token = await client.tokenExchange.getToken(
      {
        subjectToken: 'user-token',
        subjectTokenType: TOKEN_TYPES.access_token,
        actorToken: 'service-jwt',
        actorTokenType: TOKEN_TYPES.jwt,
        requestedTokenType: TOKEN_TYPES.access_token,
        audience: ['billing', 'ledger'],
        resource: 'https://billing.example/api',
        scope: 'invoices:read',
      },
      { headers: { 'X-Tenant': 't1' }, tenant: 't1' },
    )
    const request = server.last()
    expect(request.headers.authorization).toMatch(/^Basic /)
    expect(request.headers['x-tenant']).toBe('t1')
    expect(request.body).toBe(
      [
        'actor_token=service-jwt',
        `actor_token_type=${encodeURIComponent(TOKEN_TYPES.jwt)}`,
        'audience=billing',
        'audience=ledger',
        `grant_type=${encodeURIComponent(TOKEN_EXCHANGE_GRANT_TYPE)}`,
        `requested_token_type=${encodeURIComponent(TOKEN_TYPES.access_token)}`,
        `resource=${encodeURIComponent('https://billing.example/api')}`,
        'scope=invoices%3Aread',
        'subject_token=user-token',
        `subject_token_type=${encodeURIComponent(TOKEN_TYPES.access_token)}`,
        'tenant=t1',
      ].join('&'),
    )
    expect(token.token).toBe('exchanged')
    expect(token.params.issued_token_type).toBe(TOKEN_TYPES.access_token)
    expect(token.toHash().issued_token_type).toBe(TOKEN_TYPES.access_token)
  })

  it('takes AccessTokens as subject and actor (type access_token by default) and N_A tokens', async () => {
    server.on('POST', '/oauth/token', {
      body: { ...ISSUED, issued_token_type: TOKEN_TYPES.jwt, token_type: 'N_A' },
    })
    const subject = new AccessToken(client, 'subject-at')
    const actor = new AccessToken(client, 'actor-at')
    const token = await client.tokenExchange.getToken({
      subjectToken: subject,
      actorToken: actor,
      requestedTokenType: TOKEN_TYPES.jwt,
    })
    expect(server.last().form).toMatchObject({
      subject_token: 'subject-at',
      subject_token_type: TOKEN_TYPES.access_token,
      actor_token: 'actor-at',
      actor_token_type: TOKEN_TYPES.access_token,
    })
    expect(token.params).toMatchObject({ issued_token_type: TOKEN_TYPES.jwt, token_type: 'N_A' })
  })

  it('refuses a response without issued_token_type (or sets it as response.error with raiseErrors false)', async () => {
    const { issued_token_type: _type, ...withoutType } = ISSUED
    server.on('POST', '/oauth/token', { body: withoutType }, 2)
    const request = { subjectToken: 'a', subjectTokenType: TOKEN_TYPES.id_token }
    await expect(client.tokenExchange.getToken(request)).rejects.toMatchObject({
      code: 'invalid_token_response',
      description: 'the token exchange response has no issued_token_type (RFC 8693 §2.2.1)',
    })
    const lenient = new Client('gateway', 's', { site: server.url, raiseErrors: false })
    const token = await lenient.tokenExchange.getToken(request)
    expect(token?.response?.error?.code).toBe('invalid_token_response')
  })

  it("passes the server's error through (invalid_target)", async () => {
    server.on('POST', '/oauth/token', {
      status: 400,
      body: { error: 'invalid_target', error_description: 'unknown audience' },
    })
    await expect(
      client.tokenExchange.getToken({
        subjectToken: 'a',
        subjectTokenType: TOKEN_TYPES.access_token,
        audience: 'nowhere',
      }),
    ).rejects.toMatchObject({ code: 'invalid_target', description: 'unknown audience' })
  })

  it.each([
    ['x', 'ERR_INVALID_ARG_TYPE', '"request" must be an object'],
    [{}, 'ERR_INVALID_ARG_TYPE', '"request.subjectToken" must be a string or an AccessToken'],
    [{ subjectToken: '' }, 'ERR_INVALID_ARG_VALUE', '"request.subjectToken" must not be empty'],
    [
      { subjectToken: 'a' },
      'ERR_INVALID_ARG_VALUE',
      '"request.subjectTokenType" is required with a string subjectToken',
    ],
    [
      { subjectToken: 'a', subjectTokenType: 'access_token' },
      'ERR_INVALID_ARG_VALUE',
      '"request.subjectTokenType" must be a URI such as TOKEN_TYPES.access_token',
    ],
    [
      { subjectToken: 'a', subjectTokenType: TOKEN_TYPES.jwt, actorToken: 'b' },
      'ERR_INVALID_ARG_VALUE',
      '"request.actorTokenType" is required with a string actorToken',
    ],
    [
      { subjectToken: 'a', subjectTokenType: TOKEN_TYPES.jwt, actorTokenType: TOKEN_TYPES.jwt },
      'ERR_INVALID_ARG_VALUE',
      '"request.actorTokenType" must not be given without actorToken',
    ],
    [
      { subjectToken: 'a', subjectTokenType: TOKEN_TYPES.jwt, resource: 'billing' },
      'ERR_INVALID_ARG_VALUE',
      '"request.resource" must hold absolute URIs without a fragment',
    ],
    [
      { subjectToken: 'a', subjectTokenType: TOKEN_TYPES.jwt, audience: [''] },
      'ERR_INVALID_ARG_TYPE',
      '"request.audience" must be a non-empty string or an array of them',
    ],
    [
      { subjectToken: 'a', subject_token_type: TOKEN_TYPES.jwt },
      'ERR_INVALID_ARG_VALUE',
      '"request.subject_token_type" is spelled subjectTokenType here',
    ],
    [
      { subjectToken: 'a', subjectTokenType: TOKEN_TYPES.jwt, tenant: 't' },
      'ERR_INVALID_ARG_VALUE',
      '"request.tenant" is not a token exchange field',
    ],
  ])('refuses %j before sending', async (request, code, message) => {
    await expect(client.tokenExchange.getToken(request as never)).rejects.toThrow(
      argError(code as 'ERR_INVALID_ARG_VALUE', message),
    )
  })
})
