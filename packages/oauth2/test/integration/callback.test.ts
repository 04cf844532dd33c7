import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Client, OAuth2Error, pkce } from '@gatehouse/oauth2'
import {
  authorize,
  authorizeFormPost,
  REDIRECT_URI,
  startProvider,
  WEB_SECRET,
  type TestProvider,
} from '../support/oidc-provider.js'
import { argError } from '../support/expect.js'

/** Callback validation (issue 33 item 1) against oidc-provider, which sends `iss` (RFC 9207). */
describe('authCode.getTokenFromCallback against oidc-provider', () => {
  let op: TestProvider
  let client: Client

  beforeAll(async () => {
    op = await startProvider()
    client = await Client.discover(op.issuer, 'web-app', WEB_SECRET, {
      redirect_uri: REDIRECT_URI,
      requirePkce: true,
    })
  })

  afterAll(async () => {
    await op.stop()
  })

  /** A fresh authorization request; `extra` adds parameters (response_mode, ...). */
  function request(extra: Record<string, string> = {}) {
    const { code_verifier, code_challenge, code_challenge_method } = pkce()
    const state = crypto.randomUUID()
    const nonce = crypto.randomUUID()
    const url = client.authCode.authorizeUrl({
      scope: 'openid',
      state,
      nonce,
      code_challenge,
      code_challenge_method,
      ...extra,
    })
    return { url, checks: { state, nonce, codeVerifier: code_verifier } }
  }

  /** The callback URL the browser is sent to, with `edit` applied to its query. */
  async function callbackUrl(url: string, edit: (query: URLSearchParams) => void = () => {}) {
    const query = await authorize(url)
    edit(query)
    return `${REDIRECT_URI}?${query.toString()}`
  }

  const rejection = (promise: Promise<unknown>) =>
    promise.then(
      () => {
        throw new Error('resolved')
      },
      (error: unknown) => error as OAuth2Error,
    )

  it('validates iss and state, exchanges the code with the verifier and checks the ID token nonce', async () => {
    expect(client.options.metadata?.authorization_response_iss_parameter_supported).toBe(true)
    const { url, checks } = request()
    const callback = await callbackUrl(url)
    expect(new URL(callback).searchParams.get('iss')).toBe(op.issuer)
    const token = await client.authCode.getTokenFromCallback(callback, checks)
    expect(token.token).not.toBe('')
    const claims = await token.idToken({ nonce: checks.nonce })
    expect(claims.sub).toBe('alice')
  })

  it('accepts a response_mode=form_post body (URLSearchParams)', async () => {
    const { url, checks } = request({ response_mode: 'form_post' })
    const body = await authorizeFormPost(url)
    expect(body.get('iss')).toBe(op.issuer)
    const token = await client.authCode.getTokenFromCallback(body, checks)
    expect(token.params.id_token).toEqual(expect.any(String))
  })

  it('refuses a wrong state (state_mismatch) before anything is exchanged, and a callback without state', async () => {
    const { url, checks } = request()
    const callback = await callbackUrl(url)
    const wrong = await rejection(
      client.authCode.getTokenFromCallback(callback, { ...checks, state: `${checks.state}x` }),
    )
    expect(wrong).toBeInstanceOf(OAuth2Error)
    expect(wrong.code).toBe('state_mismatch')
    // The code was not spent: the right state still completes.
    await client.authCode.getTokenFromCallback(callback, checks)
    const stripped = new URL(callback)
    stripped.searchParams.delete('state')
    expect((await rejection(client.authCode.getTokenFromCallback(stripped, checks))).code).toBe(
      'state_mismatch',
    )
    expect(
      (await rejection(client.authCode.getTokenFromCallback(callback, { ...checks, state: null })))
        .code,
    ).toBe('state_mismatch')
  })

  it('refuses a wrong iss and a missing one, since the server says it sends it (RFC 9207)', async () => {
    const { url, checks } = request()
    const forged = await callbackUrl(url, (query) => {
      query.set('iss', 'https://attacker.example')
    })
    const wrong = await rejection(client.authCode.getTokenFromCallback(forged, checks))
    expect(wrong.code).toBe('issuer_mismatch')
    expect(wrong.description).toContain('https://attacker.example')
    const missing = new URL(forged)
    missing.searchParams.delete('iss')
    expect((await rejection(client.authCode.getTokenFromCallback(missing, checks))).code).toBe(
      'issuer_mismatch',
    )
  })

  it('refuses a callback without code, with a duplicated code, or with tokens', async () => {
    const { url, checks } = request()
    const callback = await callbackUrl(url)
    const withoutCode = new URL(callback)
    withoutCode.searchParams.delete('code')
    const noCode = await rejection(client.authCode.getTokenFromCallback(withoutCode, checks))
    expect(noCode.code).toBe('invalid_callback')
    expect(noCode.description).toBe('the authorization response has no code')
    const twice = new URL(callback)
    twice.searchParams.append('code', 'other')
    expect((await rejection(client.authCode.getTokenFromCallback(twice, checks))).code).toBe(
      'invalid_callback',
    )
    const implicit = new URL(callback)
    implicit.searchParams.set('access_token', 'injected')
    expect((await rejection(client.authCode.getTokenFromCallback(implicit, checks))).code).toBe(
      'invalid_callback',
    )
  })

  it("turns the server's error response into its OAuth2Error (a user refusing consent)", async () => {
    const { url, checks } = request()
    op.denyNext()
    const callback = await callbackUrl(url)
    const error = await rejection(client.authCode.getTokenFromCallback(callback, checks))
    expect(error).toBeInstanceOf(OAuth2Error)
    expect(error.code).toBe('access_denied')
    expect(error.description).toBe('End-User aborted interaction')
  })

  it('keeps an HTML error_description as inert text, and refuses an error that is not an error code', async () => {
    const { url, checks } = request()
    op.denyNext()
    const html = `<img src=x onerror="alert(1)">\r\n${'A'.repeat(2000)}<script>`
    const forged = await callbackUrl(url, (query) => {
      query.set('error_description', html)
      query.set('error_uri', 'javascript:alert(1)')
    })
    const error = await rejection(client.authCode.getTokenFromCallback(forged, checks))
    expect(error.code).toBe('access_denied')
    expect(error.description?.startsWith('<img src=x onerror="alert(1)">')).toBe(true)
    expect(error.description?.length).toBeLessThanOrEqual(513)
    expect(error.description).not.toMatch(/[\r\n]/)
    expect(error.errorUri).toBe('javascript:alert(1)')
    const badCode = new URL(forged)
    badCode.searchParams.set('error', '<b>denied</b>"')
    expect((await rejection(client.authCode.getTokenFromCallback(badCode, checks))).code).toBe(
      'invalid_callback',
    )
  })

  it('refuses a nonce that differs from the ID token one (invalid_id_token)', async () => {
    const { url, checks } = request()
    const callback = await callbackUrl(url)
    const error = await rejection(
      client.authCode.getTokenFromCallback(callback, { ...checks, nonce: 'another-nonce' }),
    )
    expect(error.code).toBe('invalid_id_token')
  })

  it('checks its arguments', async () => {
    const { checks } = request()
    await expect(client.authCode.getTokenFromCallback('/callback?code=x', checks)).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"callback" must be the absolute URL'),
    )
    await expect(
      client.authCode.getTokenFromCallback(`${REDIRECT_URI}?code=x`, {
        codeVerifier: checks.codeVerifier,
      } as never),
    ).rejects.toThrow(argError('ERR_INVALID_ARG_VALUE', '"checks.state" is required'))
    await expect(
      client.authCode.getTokenFromCallback(`${REDIRECT_URI}?code=x`, {
        ...checks,
        sate: 'x',
      } as never),
    ).rejects.toThrow(argError('ERR_INVALID_ARG_VALUE', '"checks.sate" is not understood'))
    await expect(
      client.authCode.getTokenFromCallback(`${REDIRECT_URI}?code=x`, { state: checks.state }),
    ).rejects.toThrow(argError('ERR_INVALID_ARG_VALUE', '"checks.codeVerifier" is required'))
  })
})
