import { AccessToken, Client, OAuth2Error } from '@gatehouse/oauth2'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { systemClock } from '@gatehouse/auth'
import { startTestServer, type TestServer } from '../helpers.js'

/**
 * Black-box tests: the server driven through our own OAuth 2.0 client, which speaks RFC 6749
 * form-encoded grants (`username`/`password`, `refresh_token`) with HTTP Basic client credentials,
 * the way any standard OAuth 2.0 client would.
 */
describe('@gatehouse/oauth2 against the server', () => {
  let server: TestServer
  let client: Client

  beforeAll(async () => {
    server = await startTestServer('oauth2', {}, systemClock)
    await server.listen()
    client = new Client('any-client', 'any-secret', { site: server.url, tokenUrl: '/token' })
    const created = await server.request('POST', '/admin/users', {
      token: server.serviceKey,
      body: { email: 'oauth2@example.com', password: 'secret123', email_confirm: true },
    })
    expect(created.statusCode).toBe(200)
  })
  afterAll(async () => {
    await server.close()
  })

  it('signs in with the password grant, reads /user with the token, and refreshes it', async () => {
    const token = await client.password.getToken('oauth2@example.com', 'secret123')
    expect(token).toBeInstanceOf(AccessToken)
    expect(token.token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/)
    expect(token.refreshToken).toEqual(expect.any(String))
    expect(token.expiresIn).toBe(3600)
    expect(token.expired()).toBe(false)
    expect(token.params.token_type).toBe('bearer')

    const me = await token.get('/user')
    expect(me.status).toBe(200)
    expect(me.parsed).toMatchObject({ email: 'oauth2@example.com', role: 'authenticated' })

    const refreshed = await token.refresh()
    // Rotation: a new refresh token. (The access token may equal the old one when both are issued
    // in the same second for the same session: its claims are the same.)
    expect(refreshed.refreshToken).toEqual(expect.any(String))
    expect(refreshed.refreshToken).not.toBe(token.refreshToken)
    const again = await refreshed.get('/user')
    expect(again.parsed).toMatchObject({ email: 'oauth2@example.com' })
  })

  it('refuses the refresh token of a signed-out session with invalid_grant', async () => {
    const token = await client.password.getToken('oauth2@example.com', 'secret123')
    const logout = await token.post('/logout', { params: { scope: 'local' } })
    expect(logout.status).toBe(204)
    const error = await token.refresh().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OAuth2Error)
    expect((error as OAuth2Error).code).toBe('invalid_grant')
  })

  it('answers wrong credentials with an RFC 6749 invalid_grant error', async () => {
    const error = await client.password
      .getToken('oauth2@example.com', 'wrong')
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OAuth2Error)
    const oauthError = error as OAuth2Error
    expect(oauthError.code).toBe('invalid_grant')
    expect(oauthError.response?.status).toBe(400)
    expect(oauthError.description).toBe('Invalid login credentials')
  })
})
