/**
 * The `id_token` grant against an issuer that changes under it: a key rotation (the JWKS
 * refetched for an unknown `kid`, at most once per cooldown), tokens from the future, and an
 * issuer whose discovery document is over the response cap. Tokens are hand-signed by a fake
 * issuer playing Google (the happy paths with real issuers are in `id-token-grant.test.ts`).
 */
import { FakeClock, startHttpServer, type TestHttpServer } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../helpers.js'
import { startFakeIssuer, type FakeIssuer } from '../support/fake-id-token-issuer.js'

/** The settings of a provider whose issuer (or realm) is `url`. */
function providerEnv(name: string, clientId: string, url: string): Record<string, string> {
  const p = `AUTHSVC_EXTERNAL_${name.toUpperCase()}`
  return {
    [`${p}_ENABLED`]: 'true',
    [`${p}_CLIENT_ID`]: clientId,
    [`${p}_SECRET`]: 'unused-by-the-id-token-grant',
    [`${p}_REDIRECT_URI`]: 'http://127.0.0.1:9999/callback',
    [`${p}_URL`]: url,
  }
}

describe('the id_token grant against a changing issuer', () => {
  let server: TestServer
  let fake: FakeIssuer
  let huge: TestHttpServer
  let clock: FakeClock
  const post = (body: Record<string, unknown>) =>
    server.request('POST', '/token?grant_type=id_token', { body })

  beforeAll(async () => {
    fake = await startFakeIssuer('web-client')
    // An issuer whose discovery document is valid but over the 512 KiB cap (under the library's 1 MiB).
    let hugeIssuer = ''
    huge = await startHttpServer((_req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end(
        JSON.stringify({
          issuer: hugeIssuer,
          jwks_uri: `${hugeIssuer}/jwks`,
          padding: 'x'.repeat(768 * 1024),
        }),
      )
    })
    hugeIssuer = huge.url
    clock = new FakeClock(Date.now())
    server = await startTestServer(
      'id_token_issuer',
      {
        ...providerEnv('google', 'web-client', fake.issuer),
        ...providerEnv('keycloak', 'kc', huge.url),
      },
      clock,
    )
  })
  afterAll(async () => {
    await server.close()
    await fake.stop()
    await huge.close()
  })

  it('follows a key rotation, refetching the JWKS at most once per cooldown for unknown keys', async () => {
    const first = await fake.sign({ sub: 'before-rotation' }, { now: clock.now() })
    expect((await post({ provider: 'google', id_token: first })).statusCode).toBe(200)
    const before = fake.jwksFetches
    const stray = await fake.sign({}, { now: clock.now(), key: await fake.newKey('unpublished') })
    for (let i = 0; i < 3; i++) {
      const res = await post({ provider: 'google', id_token: stray })
      expect(res.json()).toMatchObject({ error_description: 'Bad ID token' })
    }
    // Three tokens naming an unknown key within the cooldown: at most one refetch.
    expect(fake.jwksFetches - before).toBeLessThanOrEqual(1)
    const rotated = await fake.newKey('second')
    fake.keys = [rotated]
    clock.advance(31_000)
    const token = await fake.sign(
      { sub: 'after-rotation', email: 'rotated@example.com' },
      { now: clock.now(), key: rotated },
    )
    const res = await post({ provider: 'google', id_token: token })
    expect(res.statusCode).toBe(200)
    expect(res.json().user.identities[0]).toMatchObject({ id: 'after-rotation' })
  })

  it('refuses a token issued in the future', async () => {
    const now = clock.now()
    const iat = Math.floor(now / 1000) + 3600
    const token = await fake.sign({ iat, exp: iat + 300 }, { now, key: fake.keys[0] })
    const res = await post({ provider: 'google', id_token: token })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ error_description: 'Bad ID token' })
  })

  it('answers 500 when the issuer metadata is over the response cap, and goes on', async () => {
    const res = await post({ provider: 'keycloak', id_token: 'x.y.z' })
    expect(res.statusCode).toBe(500)
    expect(res.json()).toMatchObject({ error_code: 'unexpected_failure' })
    const token = await fake.sign(
      { sub: 'after-huge', email: 'after@example.com' },
      { now: clock.now(), key: fake.keys[0] },
    )
    expect((await post({ provider: 'google', id_token: token })).statusCode).toBe(200)
  })
})
