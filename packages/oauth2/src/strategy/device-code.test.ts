import { inspect } from 'node:util'
import { EmbeddedJWK, jwtVerify } from 'jose'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { argError } from '../../test/support/expect.js'
import { FakeServer, type FakeReply } from '../../test/support/fake-server.js'
import { SteppingClock } from '../../test/support/stepping-clock.js'
import { Client } from '../client.js'
import { OAuth2Error } from '../error.js'
import { DEVICE_CODE_GRANT_TYPE } from './device-code.js'

const NOW = Date.UTC(2030, 0, 1)
const AUTHORIZATION = {
  device_code: 'dc-secret',
  user_code: 'WDJB-MJHT',
  verification_uri: 'https://as.example/device',
  verification_uri_complete: 'https://as.example/device?user_code=WDJB-MJHT',
  expires_in: 1800,
  interval: 5,
}
const TOKEN = { access_token: 'at', token_type: 'Bearer', expires_in: 3600, refresh_token: 'rt' }
const pending: FakeReply = { status: 400, body: { error: 'authorization_pending' } }

describe('device authorization grant (RFC 8628)', () => {
  let server: FakeServer
  let clock: SteppingClock

  const deviceClient = (options: ConstructorParameters<typeof Client>[2] = {}) =>
    new Client('tv-app', undefined, {
      site: server.url,
      deviceAuthorizationUrl: '/device/auth',
      authScheme: 'request_body',
      clock,
      ...options,
    })

  const start = async (reply: object = AUTHORIZATION, client = deviceClient()) => {
    server.on('POST', '/device/auth', { body: reply })
    return client.deviceCode.start({ scope: 'openid offline_access' })
  }

  beforeEach(async () => {
    server = await FakeServer.start()
    clock = new SteppingClock(NOW)
  })

  afterEach(async () => {
    await server.close()
    server.assertDone()
  })

  it('starts with client_id and the scope, and hands back what to show the user', async () => {
    const device = await start()
    expect(server.last().form).toEqual({ client_id: 'tv-app', scope: 'openid offline_access' })
    expect(device).toMatchObject({ ...AUTHORIZATION, expiresAt: NOW + 1_800_000 })
    for (const text of [inspect(device), JSON.stringify(device)]) {
      expect(text).toContain('WDJB-MJHT')
      expect(text).not.toContain('dc-secret')
    }
  })

  it('authenticates a confidential client (Basic) and reads the draft spelling verification_url', async () => {
    const confidential = new Client('tv-app', 'tv-secret', {
      site: server.url,
      deviceAuthorizationUrl: '/device/auth',
    })
    const { verification_uri: _uri, ...rest } = AUTHORIZATION
    server.on('POST', '/device/auth', {
      body: { ...rest, verification_url: 'https://google.example/device' },
    })
    const device = await confidential.deviceCode.start()
    expect(server.last().headers.authorization).toMatch(/^Basic /)
    expect(device.verification_uri).toBe('https://google.example/device')
  })

  it('polls every interval on authorization_pending, then returns the token', async () => {
    const device = await start()
    server.on('POST', '/oauth/token', pending, 2)
    server.on('POST', '/oauth/token', { body: TOKEN })
    const token = await device.poll()
    expect(token?.token).toBe('at')
    expect(token?.refreshToken).toBe('rt')
    expect(clock.sleeps).toEqual([5000, 5000, 5000])
    expect(server.last().form).toEqual({
      client_id: 'tv-app',
      device_code: 'dc-secret',
      grant_type: DEVICE_CODE_GRANT_TYPE,
    })
  })

  it('adds 5 seconds to the interval on each slow_down', async () => {
    const device = await start()
    server.on('POST', '/oauth/token', { status: 400, body: { error: 'slow_down' } }, 2)
    server.on('POST', '/oauth/token', pending)
    server.on('POST', '/oauth/token', { body: TOKEN })
    await device.poll()
    expect(clock.sleeps).toEqual([5000, 10000, 15000, 15000])
  })

  it('waits 5 seconds when the server gives no interval', async () => {
    const { interval: _interval, ...noInterval } = AUTHORIZATION
    const device = await start(noInterval)
    expect(device.interval).toBe(5)
    server.on('POST', '/oauth/token', { body: TOKEN })
    await device.poll()
    expect(clock.sleeps).toEqual([5000])
  })

  it('stops at expires_in without another request when the user never answers', async () => {
    const device = await start({ ...AUTHORIZATION, expires_in: 27 })
    server.on('POST', '/oauth/token', pending, 5)
    const error = await device.poll().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OAuth2Error)
    expect(error).toMatchObject({
      code: 'expired_token',
      description: expect.stringContaining('call deviceCode.start() again') as unknown,
    })
    // Polls at 5, 10, 15, 20, 25 s; the last wait is cut to the 2 s left.
    expect(clock.sleeps).toEqual([5000, 5000, 5000, 5000, 5000, 2000])
    expect(server.requests).toHaveLength(6)
  })

  /** @see issue 24, item 10 */
  it('polls no faster than every 5 s, whatever interval the server gives (0.001 s), and adds 5 s on slow_down', async () => {
    const device = await start({ ...AUTHORIZATION, interval: 0.001 })
    expect(device.interval).toBe(0.001) // the server's value, as sent
    server.on('POST', '/oauth/token', pending, 2)
    server.on('POST', '/oauth/token', { status: 400, body: { error: 'slow_down' } })
    server.on('POST', '/oauth/token', { body: TOKEN })
    await device.poll()
    expect(clock.sleeps).toEqual([5000, 5000, 5000, 10000])
  })

  /** @see issue 24, item 10 */
  it('lowers the floor only through minimumIntervalSeconds (for tests), never below the server interval', async () => {
    const device = await start({ ...AUTHORIZATION, interval: 0.001 })
    server.on('POST', '/oauth/token', pending)
    server.on('POST', '/oauth/token', { body: TOKEN })
    await device.poll({ minimumIntervalSeconds: 0 })
    expect(clock.sleeps).toEqual([1, 1])
    const slow = await start({ ...AUTHORIZATION, interval: 7 })
    server.on('POST', '/oauth/token', { body: TOKEN })
    await slow.poll({ minimumIntervalSeconds: 1 })
    expect(clock.sleeps.slice(2)).toEqual([7000])
    await expect(slow.poll('fast' as never)).rejects.toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"options" must be an object'),
    )
    for (const bad of [-1, Number.NaN, Infinity, '5']) {
      await expect(slow.poll({ minimumIntervalSeconds: bad as never })).rejects.toThrow(
        argError('ERR_INVALID_ARG_TYPE', '"options.minimumIntervalSeconds" must be'),
      )
    }
  })

  /** @see issue 24, item 10 */
  it('polls for at most 1800 s (expires_in capped), however long the server says the code lives', async () => {
    const device = await start({ ...AUTHORIZATION, expires_in: 10 ** 9 })
    expect(device.expires_in).toBe(10 ** 9)
    expect(device.expiresAt).toBe(NOW + 1_800_000)
    // Any request past the 359th is unexpected: the fake answers 599 and the test fails.
    server.on('POST', '/oauth/token', pending, 359)
    const error = await device.poll().catch((e: unknown) => e)
    expect(error).toMatchObject({
      code: 'expired_token',
      description: expect.stringContaining('polling capped at 1800 s') as unknown,
    })
    // Polls at 5, 10, ..., 1795 s; the wait that reaches 1800 s ends the polling.
    expect(server.requests.filter((r) => r.path === '/oauth/token')).toHaveLength(359)
    expect(clock.now()).toBe(NOW + 1_800_000)
  })

  it('throws the terminal answers: access_denied and expired_token from the server', async () => {
    for (const error of ['access_denied', 'expired_token']) {
      const device = await start()
      server.on('POST', '/oauth/token', pending)
      server.on('POST', '/oauth/token', { status: 400, body: { error } })
      await expect(device.poll()).rejects.toMatchObject({
        code: error,
        response: { status: 400 },
      })
    }
  })

  it('with raiseErrors false resolves access_denied as getToken does: a token whose response.error is set', async () => {
    const device = await start(AUTHORIZATION, deviceClient({ raiseErrors: false }))
    server.on('POST', '/oauth/token', pending)
    server.on('POST', '/oauth/token', { status: 400, body: { error: 'access_denied' } })
    const token = await device.poll()
    expect(token?.response?.error?.code).toBe('access_denied')
  })

  it('with raiseErrors false still throws what the library always throws (a status outside 200-599)', async () => {
    const device = await start(AUTHORIZATION, deviceClient({ raiseErrors: false }))
    server.on('POST', '/oauth/token', { status: 600, body: {} })
    await expect(device.poll()).rejects.toMatchObject({ code: 'unhandled_status' })
  })

  it('stops when the signal aborts, while waiting or with a request in flight', async () => {
    const device = await start()
    const controller = new AbortController()
    server.on('POST', '/oauth/token', pending)
    clock.onSleep = (index) => {
      if (index === 1) controller.abort()
    }
    await expect(device.poll({ signal: controller.signal })).rejects.toMatchObject({
      name: 'AbortError',
    })
    expect(server.requests).toHaveLength(2)

    const second = new AbortController()
    clock.onSleep = undefined
    server.on('POST', '/oauth/token', () => {
      second.abort(new Error('user pressed back'))
      return pending
    })
    await expect(device.poll({ signal: second.signal })).rejects.toThrow('user pressed back')
    await expect(device.poll({ signal: second.signal })).rejects.toThrow('user pressed back')
    expect(server.requests).toHaveLength(3)
  })

  it('proves each poll with DPoP when the client has it', async () => {
    const device = await start(AUTHORIZATION, deviceClient({ dpop: true }))
    server.on('POST', '/oauth/token', { body: { ...TOKEN, token_type: 'DPoP' } })
    const token = await device.poll()
    expect(token?.dpopBound).toBe(true)
    const { payload } = await jwtVerify(String(server.last().headers.dpop), EmbeddedJWK)
    expect(payload.htu).toBe(`${server.url}/oauth/token`)
  })

  it.each([
    [{ ...AUTHORIZATION, device_code: 1 }, 'has no device_code string'],
    [{ ...AUTHORIZATION, user_code: '' }, 'has no user_code string'],
    [{ ...AUTHORIZATION, verification_uri: undefined }, 'has no verification_uri string'],
    [{ ...AUTHORIZATION, verification_uri_complete: 5 }, 'verification_uri_complete that is not'],
    [{ ...AUTHORIZATION, expires_in: 0 }, 'has no positive expires_in number'],
    [{ ...AUTHORIZATION, expires_in: '1800' }, 'has no positive expires_in number'],
    [{ ...AUTHORIZATION, interval: -1 }, 'has an interval that is not a positive number'],
    [['x'], 'is not a JSON object'],
  ])('refuses the device authorization response %j', async (reply, problem) => {
    await expect(start(reply)).rejects.toMatchObject({
      code: 'invalid_device_authorization_response',
      description: expect.stringContaining(problem) as unknown,
    })
  })

  it('throws the server error of the device authorization request whatever raiseErrors', async () => {
    server.on('POST', '/device/auth', { status: 401, body: { error: 'invalid_client' } })
    await expect(deviceClient({ raiseErrors: false }).deviceCode.start()).rejects.toMatchObject({
      code: 'invalid_client',
    })
  })

  it('refuses bad arguments and a missing endpoint', async () => {
    const device = await start()
    await expect(device.poll({ signal: 'stop' as never })).rejects.toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"options.signal" must be an AbortSignal'),
    )
    await expect(deviceClient().deviceCode.start('x' as never)).rejects.toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"params"'),
    )
    await expect(
      new Client('tv', undefined, { site: server.url }).deviceCode.start(),
    ).rejects.toMatchObject({
      code: 'invalid_metadata',
      description:
        'the client has no device authorization endpoint: use Client.discover() or set options.deviceAuthorizationUrl',
    })
    expect(() => deviceClient({ clock: { now: () => 0, sleep: 5 } as never })).toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"options.clock.sleep" must be a function'),
    )
  })
})
