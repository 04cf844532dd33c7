import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Client, OAuth2Error, pkce } from '@gatehouse/oauth2'
import {
  authorize,
  REDIRECT_URI,
  startProvider,
  type TestProvider,
} from '../support/oidc-provider.js'
import { argError } from '../support/expect.js'

const INITIAL_ACCESS_TOKEN = 'initial-access-token-0123456789-0123456789'

/** Dynamic client registration (issue 33 item 4, RFC 7591) against oidc-provider. */
describe('Client.register against oidc-provider', () => {
  let op: TestProvider

  beforeAll(async () => {
    op = await startProvider({
      configure(configuration) {
        configuration.features = {
          ...configuration.features,
          registration: { enabled: true, initialAccessToken: INITIAL_ACCESS_TOKEN },
        }
      },
    })
  })

  afterAll(async () => {
    await op.stop()
  })

  it('registers a confidential client and signs in with the issued credentials', async () => {
    const { client, registration } = await Client.register(
      op.issuer,
      {
        client_name: 'Registered app',
        redirect_uris: [REDIRECT_URI],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
      { initialAccessToken: INITIAL_ACCESS_TOKEN, requirePkce: true },
    )
    expect(registration.client_id).toEqual(expect.any(String))
    expect(client.id).toBe(registration.client_id)
    expect(client.secret).toBe(registration.client_secret)
    expect(registration.client_secret_expires_at).toBe(0)
    expect(registration.registration_access_token).toEqual(expect.any(String))
    expect(registration.registration_client_uri).toBe(`${op.issuer}/reg/${registration.client_id}`)
    expect(client.options.authScheme).toBe('basic_auth')
    expect(client.options.redirect_uri).toBe(REDIRECT_URI)
    expect(client.tokenUrl()).toBe(`${op.issuer}/token`)
    const { code_verifier, code_challenge, code_challenge_method } = pkce()
    const url = client.authCode.authorizeUrl({
      scope: 'openid',
      state: 'st',
      code_challenge,
      code_challenge_method,
    })
    const token = await client.authCode.getTokenFromCallback(
      `${REDIRECT_URI}?${(await authorize(url)).toString()}`,
      { state: 'st', codeVerifier: code_verifier },
    )
    expect(token.token).not.toBe('')
  })

  it('registers a public client (token_endpoint_auth_method none) as authScheme none', async () => {
    const { client, registration } = await Client.register(
      op.issuer,
      {
        redirect_uris: [REDIRECT_URI],
        token_endpoint_auth_method: 'none',
        application_type: 'native',
      },
      { initialAccessToken: INITIAL_ACCESS_TOKEN },
    )
    expect(registration.client_secret).toBeUndefined()
    expect(client.secret).toBeUndefined()
    expect(client.options.authScheme).toBe('none')
    expect(client.options.requirePkce).toBe(true)
  })

  it("passes the server's refusals on: no initial access token, bad metadata", async () => {
    const unauthorized = await Client.register(op.issuer, { redirect_uris: [REDIRECT_URI] }).catch(
      (error: unknown) => error as OAuth2Error,
    )
    expect(unauthorized).toBeInstanceOf(OAuth2Error)
    expect(unauthorized).toMatchObject({ code: 'invalid_token' })
    const badRedirect = await Client.register(
      op.issuer,
      { redirect_uris: ['not a url'] },
      { initialAccessToken: INITIAL_ACCESS_TOKEN },
    ).then(
      () => undefined,
      (error: unknown) => error as OAuth2Error,
    )
    expect(badRedirect).toBeInstanceOf(OAuth2Error)
    expect(badRedirect?.code).toBe('invalid_redirect_uri')
    expect(badRedirect?.description).toBe('redirect_uris must only contain valid uris')
  })

  it('checks its arguments', async () => {
    await expect(Client.register(op.issuer, 'x' as never)).rejects.toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"clientMetadata" must be an object'),
    )
    await expect(
      Client.register(op.issuer, {}, { initialAccessToken: 1 as never }),
    ).rejects.toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"options.initialAccessToken" must be a string'),
    )
    await expect(
      Client.register(op.issuer, {}, { initalAccessToken: 'x' } as never),
    ).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"options.initalAccessToken" is not understood'),
    )
  })
})
