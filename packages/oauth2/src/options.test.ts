/**
 * Options that are not understood are errors, in every options object the package accepts: a
 * misspelt or misplaced key is a coded TypeError naming it and what is accepted, never silently
 * ignored (issue 24, item 13).
 */
import { generateKeyPair } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { argError } from '../test/support/expect.js'
import { FakeServer } from '../test/support/fake-server.js'
import { AccessToken } from './access-token.js'
import { Client } from './client.js'
import { configure } from './config.js'
import { OAuth2Error } from './error.js'
import { Response } from './response.js'

/** Matches the unknown-option error of `name`, with `text` somewhere in its message. */
const unknown = (name: string, text = 'is not understood') =>
  argError('ERR_INVALID_ARG_VALUE', `"${name}" ${text}`)

describe('options that are not understood (issue 24, item 13)', () => {
  let server: FakeServer
  let client: Client

  beforeAll(async () => {
    server = await FakeServer.start()
    client = new Client('id', 'secret', { site: server.url })
  })

  afterAll(async () => {
    await server.close()
    server.assertDone()
  })

  /** @see issue 24, item 13 */
  it('refuses unknown keys of the client options, saying what was meant and what is accepted', () => {
    expect(() => new Client('id', 's', { redirectUri: 'https://app/cb' } as never)).toThrow(
      unknown(
        'options.redirectUri',
        'is not understood (did you mean redirect_uri?): options takes site,',
      ),
    )
    expect(() => new Client('id', 's', { authorize_url: '/a' } as never)).toThrow(
      unknown('options.authorize_url', 'is not understood (did you mean authorizeUrl?)'),
    )
    expect(() => new Client('id', 's', { scope: 'openid' } as never)).toThrow(
      unknown('options.scope'),
    )
    expect(() => new Client('id', 's', { connectionOpts: { timeoutMs: 5 } } as never)).toThrow(
      unknown(
        'options.connectionOpts.timeoutMs',
        'is not understood: options.connectionOpts takes timeout,',
      ),
    )
    expect(
      () => new Client('id', 's', { connectionOpts: { tls: { passphrase: 'p' } } } as never),
    ).toThrow(unknown('options.connectionOpts.tls.passphrase'))
    expect(
      () =>
        new Client('id', 's', {
          privateKey: { key: 'k', algorithm: 'ES256', alg: 'ES256' },
        } as never),
    ).toThrow(unknown('options.privateKey.alg'))
    // What the client options hold can be given back to a new client.
    expect(() => new Client('id', 's', client.options)).not.toThrow()
  })

  /** @see issue 24, item 13 */
  it('refuses a DPoP key pair one level too high, and a secret where the key pair goes', async () => {
    const pair = await generateKeyPair('ES256')
    expect(
      () =>
        new Client('id', 's', {
          dpop: { privateKey: pair.privateKey, publicKey: pair.publicKey },
        } as never),
    ).toThrow(
      unknown(
        'options.dpop.privateKey',
        'is not understood (the key pair goes in keyPair: { privateKey, publicKey }): options.dpop takes keyPair, algorithm',
      ),
    )
    const hmac = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
    for (const dpop of [{ key: hmac }, { secret: 'shh' }, { privateKey: hmac }]) {
      expect(() => new Client('id', 's', { dpop } as never)).toThrow(
        unknown(`options.dpop.${Object.keys(dpop)[0]!}`),
      )
    }
    expect(
      () => new Client('id', 's', { dpop: { keyPair: { ...pair, kid: 'k1' } } } as never),
    ).toThrow(unknown('options.dpop.keyPair.kid'))
  })

  /** @see issue 24, item 13 */
  it('refuses unknown keys of request, token request, fetch, ID token, UserInfo and device poll options', async () => {
    await expect(client.request('get', '/x', { query: { a: '1' } } as never)).rejects.toThrow(
      unknown('opts.query', 'is not understood: opts takes params, body, headers,'),
    )
    const token = new AccessToken(client, 'at')
    await expect(token.get('/x', { autorefresh: true } as never)).rejects.toThrow(
      unknown('opts.autorefresh', 'is not understood (did you mean autoRefresh?)'),
    )
    await expect(token.fetch('/x', { verb: 'POST' } as never)).rejects.toThrow(unknown('init.verb'))
    await expect(client.verifyIdToken('a.b.c', { max_age: 5 } as never)).rejects.toThrow(
      unknown('options.max_age', 'is not understood (did you mean maxAge?)'),
    )
    await expect(client.userinfo('at', { subject: 'alice' } as never)).rejects.toThrow(
      unknown('options.subject'),
    )
    server.on('POST', '/device', {
      body: { device_code: 'd', user_code: 'u', verification_uri: 'https://v', expires_in: 60 },
    })
    const device = await new Client('id', 's', {
      site: server.url,
      deviceAuthorizationUrl: '/device',
    }).deviceCode.start()
    await expect(device.poll({ intervalSeconds: 0 } as never)).rejects.toThrow(
      unknown('options.intervalSeconds'),
    )
    expect(server.requests).toHaveLength(1)
  })

  /** @see issue 24, item 13 */
  it('refuses unknown keys of token modes, assertion signing, configure, Response and OAuth2Error options', async () => {
    expect(() => new AccessToken(client, 'at', { mode: { GET: 'query' } as never })).toThrow(
      unknown('opts.mode.GET', 'is not understood (did you mean get?)'),
    )
    const { privateKey } = await generateKeyPair('ES256')
    await expect(
      client.assertion.getToken({ iss: 'i', aud: 'a', sub: 's', exp: 1 }, {
        algorithm: 'ES256',
        key: privateKey,
        keyId: 'k1',
      } as never),
    ).rejects.toThrow(unknown('signing.keyId'))
    expect(() => configure({ filteredKeys: ['x'] } as never)).toThrow(
      unknown(
        'settings.filteredKeys',
        'is not understood: settings takes silenceExtraTokensWarning,',
      ),
    )
    expect(
      () => new Response({ status: 200, headers: {}, body: '' }, { Snaky: false } as never),
    ).toThrow(unknown('options.Snaky', 'is not understood (did you mean snaky?)'))
    expect(() => new OAuth2Error({}, { status: 400 } as never)).toThrow(unknown('options.status'))
  })
})
