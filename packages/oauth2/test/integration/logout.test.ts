import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Client, pkce } from '@gatehouse/oauth2'
import {
  Browser,
  REDIRECT_URI,
  startProvider,
  type TestProvider,
} from '../support/oidc-provider.js'
import { argError } from '../support/expect.js'

const SIGNED_OUT = `${REDIRECT_URI}/signed-out`

/** RP-initiated logout (issue 33 item 3) against oidc-provider's end_session_endpoint. */
describe('client.endSessionUrl against oidc-provider', () => {
  let op: TestProvider

  beforeAll(async () => {
    op = await startProvider({
      clients: [
        {
          client_id: 'logout-app',
          client_secret: 'logout-secret-0123456789-0123456789',
          redirect_uris: [REDIRECT_URI],
          post_logout_redirect_uris: [SIGNED_OUT],
          grant_types: ['authorization_code'],
          response_types: ['code'],
        },
      ],
    })
  })

  afterAll(async () => {
    await op.stop()
  })

  it('signs the user out at the provider and comes back with the state', async () => {
    const client = await Client.discover(
      op.issuer,
      'logout-app',
      'logout-secret-0123456789-0123456789',
      {
        redirect_uri: REDIRECT_URI,
      },
    )
    expect(client.options.endSessionUrl).toBe(`${op.issuer}/session/end`)
    const browser = new Browser()
    const { code_verifier, code_challenge, code_challenge_method } = pkce()
    const signIn = await browser.open(
      client.authCode.authorizeUrl({
        scope: 'openid',
        state: 's',
        code_challenge,
        code_challenge_method,
      }),
    )
    const token = await client.authCode.getTokenFromCallback(signIn.url, {
      state: 's',
      codeVerifier: code_verifier,
    })
    const idToken = String(token.params.id_token)

    const url = new URL(
      client.endSessionUrl({
        idTokenHint: idToken,
        postLogoutRedirectUri: SIGNED_OUT,
        state: 'bye',
        params: { ui_locales: 'en' },
      }),
    )
    expect(url.origin + url.pathname).toBe(`${op.issuer}/session/end`)
    expect(Object.fromEntries(url.searchParams)).toEqual({
      client_id: 'logout-app',
      id_token_hint: idToken,
      post_logout_redirect_uri: SIGNED_OUT,
      state: 'bye',
      ui_locales: 'en',
    })
    // The provider asks for confirmation (a form with a CSRF token bound to the session).
    const confirm = await browser.open(url)
    const action = /<form id="op.logoutForm" method="post" action="([^"]+)">/.exec(
      confirm.body,
    )?.[1]
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm.body)?.[1]
    expect(action).toBeDefined()
    const back = await browser.open(new URL(action ?? '', op.issuer), {
      xsrf: xsrf ?? '',
      logout: 'yes',
    })
    expect(back.url.origin + back.url.pathname).toBe(SIGNED_OUT)
    expect(back.url.searchParams.get('state')).toBe('bye')
    // Signed out: the next authorization request needs a login again (the session is gone).
    const again = await browser.open(
      client.authCode.authorizeUrl({
        scope: 'openid',
        prompt: 'none',
        state: 't',
        code_challenge,
        code_challenge_method,
      }),
    )
    expect(again.url.searchParams.get('error')).toBe('login_required')
  })

  it('needs an end session endpoint and checks its options', () => {
    const plain = new Client('id', 'secret', { site: 'https://as.example' })
    expect(() => plain.endSessionUrl()).toThrow(
      expect.objectContaining({ code: 'invalid_metadata' }) as Error,
    )
    const configured = new Client('id', 'secret', {
      site: 'https://as.example',
      endSessionUrl: '/logout',
    })
    expect(configured.endSessionUrl()).toBe('https://as.example/logout?client_id=id')
    expect(configured.endSessionUrl({ clientId: 'other', state: 'x y' })).toBe(
      'https://as.example/logout?client_id=other&state=x%20y',
    )
    expect(() => configured.endSessionUrl({ postLogoutRedirectUri: '/relative' })).toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"options.postLogoutRedirectUri" must be an absolute URL'),
    )
    expect(() => configured.endSessionUrl({ id_token_hint: 'x' } as never)).toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"options.id_token_hint" is not understood'),
    )
  })
})
