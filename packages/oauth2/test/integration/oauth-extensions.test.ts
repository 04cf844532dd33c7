/**
 * DPoP, pushed authorization requests, the device flow, token exchange and self-refreshing tokens
 * against a real oidc-provider (DPoP nonces required, device codes living 30 s), journeys completed
 * headlessly.
 */
import { FakeClock } from '@gatehouse/testing'
import { generateKeyPair } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  AccessToken,
  Client,
  OAuth2Error,
  pkce,
  TOKEN_TYPES,
  type ClientOptionsFor,
  type DPoPKeyPair,
} from '@gatehouse/oauth2'
import { SteppingClock } from '../support/stepping-clock.js'
import {
  answerDevice,
  authorize,
  DEVICE_CODE_TTL,
  DPOP_SECRET,
  GATEWAY_SECRET,
  PAR_SECRET,
  REDIRECT_URI,
  startProvider,
  WEB_SECRET,
  type TestProvider,
} from '../support/oidc-provider.js'

describe('against a real oidc-provider: DPoP, PAR, device flow, token exchange, self-refresh', () => {
  let op: TestProvider

  beforeAll(async () => {
    op = await startProvider()
  })

  afterAll(async () => {
    await op.stop()
  })

  /** Authorization code + PKCE through the given authorization URL builder; returns the code. */
  async function signIn(
    client: Client,
    url: (params: Record<string, string>) => string | Promise<string>,
  ) {
    const { code_verifier, code_challenge, code_challenge_method } = pkce()
    const state = crypto.randomUUID()
    const callback = await authorize(
      await url({
        scope: 'openid offline_access',
        prompt: 'consent',
        state,
        code_challenge,
        code_challenge_method,
      }),
    )
    expect(callback.get('state')).toBe(state)
    const code = callback.get('code')
    if (code === null) throw new Error(`no code in callback: ${callback.toString()}`)
    return client.authCode.getToken(code, { code_verifier })
  }

  it('discovers the PAR and device endpoints and the DPoP algorithms', async () => {
    const client = await Client.discover(op.issuer, 'web-app', WEB_SECRET, { dpop: true })
    expect(client.options).toMatchObject({
      pushedAuthorizationRequestUrl: `${op.issuer}/request`,
      deviceAuthorizationUrl: `${op.issuer}/device/auth`,
      requirePar: false,
      dpop: { algorithm: 'ES256' },
    })
    expect(client.options.metadata?.dpop_signing_alg_values_supported).toContain('ES256')
  })

  describe('DPoP (RFC 9449)', () => {
    let keyPair: DPoPKeyPair

    beforeAll(async () => {
      keyPair = await generateKeyPair('ES256')
    })

    const dpopClient = () =>
      Client.discover(op.issuer, 'dpop-app', DPOP_SECRET, {
        redirect_uri: REDIRECT_URI,
        dpop: { keyPair },
      })

    it('gets a DPoP-bound token through the server nonce, uses it for UserInfo and refreshes it', async () => {
      const client = await dpopClient()
      const token = await signIn(client, (p) => client.authCode.authorizeUrl(p))
      expect(token.params.token_type).toBe('DPoP')
      expect(token.dpopBound).toBe(true)

      const info = await client.introspectToken(token.token, 'access_token')
      expect(info.parsed).toMatchObject({
        active: true,
        token_type: 'DPoP',
        cnf: { jkt: await client.dpopJkt() },
      })

      const claims = await client.userinfo(token)
      expect(claims.sub).toBe('alice')

      const next = await token.refresh()
      expect(next.dpopBound).toBe(true)
      expect(next.token).not.toBe(token.token)
      expect((await client.userinfo(next)).sub).toBe('alice')
    })

    it('resends a resource request with the nonce of the resource server, and the bound token fails as a bearer token', async () => {
      const client = await dpopClient()
      const token = await signIn(client, (p) => client.authCode.authorizeUrl(p))
      // A client that never met the server has no nonce: UserInfo answers use_dpop_nonce first.
      const fresh = await dpopClient()
      const restored = AccessToken.fromHash(fresh, token.toHash())
      const response = await restored.fetch(String(fresh.options.userinfoUrl))
      expect(response.status).toBe(200)
      expect(response.parsed).toMatchObject({ sub: 'alice' })

      const asBearer = await client.request('get', String(client.options.userinfoUrl), {
        headers: { authorization: `Bearer ${token.token}` },
        raiseErrors: false,
      })
      expect(asBearer.status).toBe(401)
    })

    it('refuses to send the bound token from a client without the key', async () => {
      const client = await dpopClient()
      const token = await signIn(client, (p) => client.authCode.authorizeUrl(p))
      const plain = await Client.discover(op.issuer, 'dpop-app', DPOP_SECRET)
      const restored = AccessToken.fromHash(plain, token.toHash())
      await expect(plain.userinfo(restored)).rejects.toMatchObject({ code: 'dpop_key_required' })
    })

    it('binds the token of a pushed authorization request made with DPoP', async () => {
      const client = await dpopClient()
      const token = await signIn(client, (p) => client.authCode.pushAuthorizationRequest(p))
      expect(token.dpopBound).toBe(true)
      expect((await client.userinfo(token)).sub).toBe('alice')
    })
  })

  describe('pushed authorization requests (RFC 9126)', () => {
    const parClient = (options: ClientOptionsFor<true> = {}) =>
      Client.discover(op.issuer, 'par-app', PAR_SECRET, {
        redirect_uri: REDIRECT_URI,
        requirePkce: true,
        ...options,
      })

    it('signs in through a pushed request; requirePar refuses the plain authorization URL', async () => {
      const client = await parClient({ requirePar: true })
      expect(() => client.authCode.authorizeUrl({ scope: 'openid' })).toThrow(
        expect.objectContaining({ code: 'par_required' }),
      )
      let url = ''
      const token = await signIn(client, async (p) => {
        url = await client.authCode.pushAuthorizationRequest({ ...p, nonce: 'n-1' })
        return url
      })
      expect(new URL(url).searchParams.get('request_uri')).toMatch(
        /^urn:ietf:params:oauth:request_uri:/,
      )
      expect([...new URL(url).searchParams.keys()].sort()).toEqual(['client_id', 'request_uri'])
      const claims = await token.idToken({ nonce: 'n-1' })
      expect(claims.sub).toBe('alice')
    })

    it('meets the server refusing a plain authorization request for a PAR-only client', async () => {
      const client = await parClient()
      const { code_challenge, code_challenge_method } = pkce()
      const callback = await authorize(
        client.authCode.authorizeUrl({ scope: 'openid', code_challenge, code_challenge_method }),
      )
      expect(callback.get('error')).toBe('invalid_request')
    })

    it("passes the server's error through", async () => {
      const client = await parClient()
      const { code_challenge, code_challenge_method } = pkce()
      await expect(
        client.authCode.pushAuthorizationRequest({
          scope: 'openid',
          code_challenge,
          code_challenge_method,
          redirect_uri: 'https://evil.example/cb',
        }),
      ).rejects.toMatchObject({
        code: 'invalid_request',
        description: expect.stringContaining('redirect_uri') as unknown,
        response: { status: 400 },
      })
    })
  })

  describe('device authorization grant (RFC 8628)', () => {
    const tvClient = (clock: SteppingClock) =>
      Client.discover(op.issuer, 'tv-app', undefined, { authScheme: 'request_body', clock })

    it('polls through authorization_pending until the user approves on the second device', async () => {
      const clock = new SteppingClock(Date.now())
      const client = await tvClient(clock)
      const device = await client.deviceCode.start({ scope: 'openid offline_access' })
      expect(device.user_code).toMatch(/^[A-Z]{4}-[A-Z]{4}$/)
      expect(device.verification_uri).toBe(`${op.issuer}/device`)
      expect(device.expires_in).toBe(DEVICE_CODE_TTL)
      expect(device.interval).toBe(5) // oidc-provider sends none: the RFC's default
      // The user approves while the device waits before its second poll.
      clock.onSleep = async (index) => {
        if (index === 1) {
          expect(await answerDevice(String(device.verification_uri_complete), 'approve')).toContain(
            'Sign-in Success',
          )
        }
      }
      const token = await device.poll()
      expect(clock.sleeps).toEqual([5000, 5000])
      expect(token.refreshToken).toEqual(expect.any(String))
      expect((await token.idToken()).sub).toBe('alice')
    })

    it('ends with access_denied when the user aborts', async () => {
      const clock = new SteppingClock(Date.now())
      const client = await tvClient(clock)
      const device = await client.deviceCode.start({ scope: 'openid' })
      clock.onSleep = async (index) => {
        if (index === 0) await answerDevice(String(device.verification_uri_complete), 'deny')
      }
      const error = await device.poll().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OAuth2Error)
      expect(error).toMatchObject({ code: 'access_denied', response: { status: 400 } })
    })

    it('stops at expires_in when nobody answers', async () => {
      const clock = new SteppingClock(Date.now())
      const client = await tvClient(clock)
      const device = await client.deviceCode.start({ scope: 'openid' })
      await expect(device.poll()).rejects.toMatchObject({ code: 'expired_token' })
      expect(clock.sleeps).toEqual(Array.from({ length: DEVICE_CODE_TTL / 5 }, () => 5000))
    })
  })

  describe('token exchange (RFC 8693)', () => {
    it("exchanges a user's access token for one to call another service; issued_token_type kept", async () => {
      const web = await Client.discover(op.issuer, 'web-app', WEB_SECRET, {
        redirect_uri: REDIRECT_URI,
      })
      const userToken = await signIn(web, (p) => web.authCode.authorizeUrl(p))
      const gateway = await Client.discover(op.issuer, 'gateway', GATEWAY_SECRET)
      const exchanged = await gateway.tokenExchange.getToken({
        subjectToken: userToken,
        audience: 'billing',
      })
      expect(exchanged.params.issued_token_type).toBe(TOKEN_TYPES.access_token)
      expect(exchanged.token).not.toBe(userToken.token)
      const info = await gateway.introspectToken(exchanged.token)
      expect(info.parsed).toMatchObject({ active: true, client_id: 'gateway', scope: 'api' })

      await expect(
        gateway.tokenExchange.getToken({
          subjectToken: 'not-a-token',
          subjectTokenType: TOKEN_TYPES.access_token,
          audience: 'billing',
        }),
      ).rejects.toMatchObject({ code: 'invalid_grant' })
      await expect(
        gateway.tokenExchange.getToken({ subjectToken: userToken, audience: 'unknown' }),
      ).rejects.toMatchObject({ code: 'invalid_target' })
    })
  })

  describe('self-refreshing token', () => {
    it('refreshes before expiry on the client clock, and once on a 401 invalid_token', async () => {
      const clock = new FakeClock(Date.now())
      const client = await Client.discover(op.issuer, 'web-app', WEB_SECRET, {
        redirect_uri: REDIRECT_URI,
        clock,
      })
      const first = await signIn(client, (p) => client.authCode.authorizeUrl(p))
      const saved: string[] = []
      const token = new AccessToken(client, first.token, {
        ...first.toHash(),
        expiresLatency: 60,
        onRefresh: (t: AccessToken) => {
          saved.push(t.token)
        },
      })
      const me = String(client.options.userinfoUrl)
      expect((await token.fetch(me)).parsed).toMatchObject({ sub: 'alice' })
      expect(saved).toEqual([])

      clock.advance(3_540_000) // expires_in 3600 minus the 60 s of latency
      expect(token.expired()).toBe(true)
      expect((await token.fetch(me)).parsed).toMatchObject({ sub: 'alice' })
      expect(saved).toEqual([token.token])
      expect(token.token).not.toBe(first.token)

      // A token the server no longer knows: 401 Bearer error="invalid_token", refresh, resend.
      const stale = new AccessToken(client, 'unknown-token', {
        refresh_token: token.refreshToken,
        onRefresh: (t: AccessToken) => {
          saved.push(t.token)
        },
      })
      const response = await stale.fetch(me)
      expect(response.parsed).toMatchObject({ sub: 'alice' })
      expect(saved).toHaveLength(2)
      expect(stale.token).not.toBe('unknown-token')
    })
  })
})
