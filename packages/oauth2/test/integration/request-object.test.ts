import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, type JWK } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Client, OAuth2Error, pkce } from '@gatehouse/oauth2'
import {
  authorize,
  Browser,
  REDIRECT_URI,
  startProvider,
  type TestProvider,
} from '../support/oidc-provider.js'
import { argError } from '../support/expect.js'

/** JWT-secured authorization requests (issue 33 item 8, RFC 9101) against oidc-provider. */
describe('request objects (JAR) against oidc-provider', () => {
  let op: TestProvider
  let key: JWK

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256', { extractable: true })
    key = { ...(await exportJWK(pair.privateKey)), kid: 'jar-key' }
    const { d: _private, ...publicKey } = key
    op = await startProvider({
      clients: [
        {
          client_id: 'jar-app',
          redirect_uris: [REDIRECT_URI],
          grant_types: ['authorization_code'],
          response_types: ['code'],
          token_endpoint_auth_method: 'private_key_jwt',
          token_endpoint_auth_signing_alg: 'ES256',
          request_object_signing_alg: 'ES256',
          jwks: { keys: [{ ...publicKey, alg: 'ES256', use: 'sig' }] },
        },
      ],
      configure(configuration) {
        configuration.features = {
          ...configuration.features,
          requestObjects: { enabled: true, requireSignedRequestObject: true },
        }
      },
    })
  })

  afterAll(async () => {
    await op.stop()
  })

  const jarClient = () =>
    Client.discover(op.issuer, 'jar-app', undefined, {
      redirect_uri: REDIRECT_URI,
      authScheme: 'private_key_jwt',
      privateKey: { key, algorithm: 'ES256', kid: 'jar-key' },
    })

  it('discovers require_signed_request_object and refuses plain authorization URLs', async () => {
    const client = await jarClient()
    expect(client.options.requireSignedRequestObject).toBe(true)
    const error = (() => {
      try {
        client.authCode.authorizeUrl({ scope: 'openid' })
      } catch (e) {
        return e as OAuth2Error
      }
      throw new Error('no error')
    })()
    expect(error).toBeInstanceOf(OAuth2Error)
    expect(error.code).toBe('request_object_required')
  })

  it('signs the request with the private_key_jwt key; the server accepts it and the code flow completes', async () => {
    const client = await jarClient()
    const { code_verifier, code_challenge, code_challenge_method } = pkce()
    const nonce = crypto.randomUUID()
    const url = new URL(
      await client.authCode.authorizeUrl({
        scope: 'openid',
        state: 'jar-state',
        nonce,
        code_challenge,
        code_challenge_method,
        requestObject: true,
      }),
    )
    expect([...url.searchParams.keys()].sort()).toEqual(['client_id', 'request'])
    const request = url.searchParams.get('request') ?? ''
    expect(decodeProtectedHeader(request)).toEqual({
      alg: 'ES256',
      kid: 'jar-key',
      typ: 'oauth-authz-req+jwt',
    })
    const claims = decodeJwt(request)
    expect(claims).toMatchObject({
      iss: 'jar-app',
      aud: op.issuer,
      client_id: 'jar-app',
      response_type: 'code',
      redirect_uri: REDIRECT_URI,
      scope: 'openid',
      state: 'jar-state',
      nonce,
      code_challenge,
    })
    expect((claims.exp ?? 0) - (claims.nbf ?? 0)).toBe(300)
    expect(claims.requestObject).toBeUndefined()
    const callback = await authorize(url.href)
    const token = await client.authCode.getTokenFromCallback(
      `${REDIRECT_URI}?${callback.toString()}`,
      { state: 'jar-state', nonce, codeVerifier: code_verifier },
    )
    expect(token.token).not.toBe('')
  })

  it('pushes a signed request object (PAR + JAR) when the server requires one', async () => {
    const client = await jarClient()
    const { code_verifier, code_challenge, code_challenge_method } = pkce()
    const url = await client.authCode.pushAuthorizationRequest({
      scope: 'openid',
      state: 'par-jar',
      code_challenge,
      code_challenge_method,
    })
    expect(new URL(url).searchParams.get('request_uri')).toMatch(
      /^urn:ietf:params:oauth:request_uri:/,
    )
    const callback = await authorize(url)
    const token = await client.authCode.getTokenFromCallback(
      `${REDIRECT_URI}?${callback.toString()}`,
      { state: 'par-jar', codeVerifier: code_verifier },
    )
    expect(token.token).not.toBe('')
  })

  it('a request object signed with another key is refused by the server', async () => {
    const other = await generateKeyPair('ES256', { extractable: true })
    const client = await Client.discover(op.issuer, 'jar-app', undefined, {
      redirect_uri: REDIRECT_URI,
      authScheme: 'private_key_jwt',
      privateKey: { key: other.privateKey, algorithm: 'ES256', kid: 'jar-key' },
    })
    const { code_challenge, code_challenge_method } = pkce()
    const page = await new Browser().open(
      await client.authCode.authorizeUrl({
        scope: 'openid',
        state: 'forged',
        code_challenge,
        code_challenge_method,
        requestObject: true,
      }),
    )
    expect(page.url.searchParams.get('code')).toBeNull()
    expect(`${page.url.href} ${page.body}`).toContain('invalid_request_object')
  })

  it('needs a private key to sign', async () => {
    const client = new Client('jar-app', 'secret', { site: op.issuer, authorizeUrl: '/auth' })
    await expect(client.authCode.authorizeUrl({ requestObject: true })).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"options.privateKey" is required to sign request objects'),
    )
    expect(() => client.authCode.authorizeUrl({ requestObject: 'yes' } as never)).toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"params.requestObject" must be a boolean'),
    )
  })
})
