import { decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  Client,
  CLIENT_ASSERTION_TYPE,
  pkce,
  type ClientOptionsFor,
  type HttpRequest,
} from '@gatehouse/oauth2'
import {
  authorize,
  REDIRECT_URI,
  startProvider,
  type TestProvider,
} from '../support/oidc-provider.js'
import { argError } from '../support/expect.js'

const JWT_SECRET = 'client-secret-jwt-0123456789-0123456789-0123456789'

/** Client authentication `client_secret_jwt` and `none` (issue 33 item 2) against oidc-provider. */
describe('client_secret_jwt and public clients against oidc-provider', () => {
  let op: TestProvider

  beforeAll(async () => {
    op = await startProvider({
      clients: [
        {
          client_id: 'secret-jwt-client',
          client_secret: JWT_SECRET,
          redirect_uris: [],
          grant_types: ['client_credentials'],
          response_types: [],
          token_endpoint_auth_method: 'client_secret_jwt',
          token_endpoint_auth_signing_alg: 'HS256',
          scope: 'api',
        },
        {
          client_id: 'spa',
          redirect_uris: [REDIRECT_URI],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
        },
      ],
    })
  })

  afterAll(async () => {
    await op.stop()
  })

  /** A client whose requests are recorded as sent. */
  function recording(
    clientId: string,
    secret: string | undefined,
    options: ClientOptionsFor<true>,
  ) {
    const sent: HttpRequest[] = []
    const client = Client.discover(op.issuer, clientId, secret, options, (connection) => {
      connection.use(async (request, next) => {
        sent.push({ ...request, headers: { ...request.headers } })
        return next(request)
      })
    })
    return { client, sent }
  }

  it('client_secret_jwt: an HS256 assertion over the secret, fresh for every request', async () => {
    const { client: pending, sent } = recording('secret-jwt-client', JWT_SECRET, {
      authScheme: 'client_secret_jwt',
    })
    const client = await pending
    const token = await client.clientCredentials.getToken({ scope: 'api' })
    expect(token.token).not.toBe('')
    const introspected = await client.introspectToken(token.token, 'access_token')
    expect((introspected.parsed as { active: boolean }).active).toBe(true)
    const bodies = sent
      .filter((request) => request.method === 'POST')
      .map((request) => new URLSearchParams(String(request.body)))
    expect(bodies).toHaveLength(2)
    const assertions = bodies.map((body) => {
      expect(body.get('client_assertion_type')).toBe(CLIENT_ASSERTION_TYPE)
      expect(body.has('client_secret')).toBe(false)
      return body.get('client_assertion') ?? ''
    })
    expect(decodeProtectedHeader(assertions[0] ?? '')).toMatchObject({ alg: 'HS256', typ: 'JWT' })
    const { payload } = await jwtVerify(assertions[0] ?? '', new TextEncoder().encode(JWT_SECRET), {
      issuer: 'secret-jwt-client',
      subject: 'secret-jwt-client',
      audience: `${op.issuer}/token`,
    })
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(60)
    expect(decodeJwt(assertions[1] ?? '').jti).not.toBe(payload.jti)
    expect(sent.every((request) => request.headers.authorization === undefined)).toBe(true)
  })

  it('client_secret_jwt with the wrong secret is invalid_client', async () => {
    const client = await Client.discover(op.issuer, 'secret-jwt-client', `${JWT_SECRET}x`, {
      authScheme: 'client_secret_jwt',
    })
    await expect(client.clientCredentials.getToken({ scope: 'api' })).rejects.toMatchObject({
      code: 'invalid_client',
    })
  })

  it('none: a public client signs in with PKCE and refreshes, sending only client_id', async () => {
    const { client: pending, sent } = recording('spa', undefined, {
      authScheme: 'none',
      redirect_uri: REDIRECT_URI,
    })
    const client = await pending
    expect(client.options.requirePkce).toBe(true)
    expect(() => client.authCode.authorizeUrl({ scope: 'openid', state: 's' })).toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"params.code_challenge" is required'),
    )
    const { code_verifier, code_challenge, code_challenge_method } = pkce()
    const url = client.authCode.authorizeUrl({
      scope: 'openid offline_access',
      prompt: 'consent',
      state: 's1',
      code_challenge,
      code_challenge_method,
    })
    const token = await client.authCode.getTokenFromCallback(
      `${REDIRECT_URI}?${(await authorize(url)).toString()}`,
      { state: 's1', codeVerifier: code_verifier },
    )
    expect(token.refreshToken).toEqual(expect.any(String))
    const refreshed = await token.refresh()
    expect(refreshed.token).not.toBe(token.token)
    const posts = sent.filter((request) => request.method === 'POST')
    expect(posts).toHaveLength(2)
    for (const request of posts) {
      expect(request.headers.authorization).toBeUndefined()
      const body = new URLSearchParams(String(request.body))
      expect(body.get('client_id')).toBe('spa')
      expect(body.has('client_secret')).toBe(false)
      expect(body.has('client_assertion')).toBe(false)
    }
  })

  it('refuses a public client with a secret or without PKCE, and client_secret_jwt without a secret', () => {
    expect(() => new Client('spa', 'secret', { authScheme: 'none' })).toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"clientSecret" must not be set with authScheme \'none\''),
    )
    expect(() => new Client('spa', undefined, { authScheme: 'none', requirePkce: false })).toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"options.requirePkce" cannot be false'),
    )
    expect(() => new Client('c', undefined, { authScheme: 'client_secret_jwt' })).toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"clientSecret" is required with authScheme'),
    )
  })
})
