import { FakeClock } from '@gatehouse/testing'
import { describe, expect, it } from 'vitest'
import { loadSettings } from '../../conf/settings.js'
import { JwtKeys } from '../../crypto/jwt.js'
import {
  STATE_LIFETIME,
  OAuthStateError,
  signLinkTicket,
  signState,
  verifyLinkTicket,
  verifyState,
} from './oauth-state.js'

const FLOW = '0b8f3c1e-5d2a-4f6b-9c7e-1a2b3c4d5e6f'

const settings = loadSettings({
  AUTHSVC_SITE_URL: 'http://localhost:3000',
  AUTHSVC_API_EXTERNAL_URL: 'http://localhost:9999',
  AUTHSVC_JWT_SECRET: 'a-secret-of-thirty-two-bytes-or-more',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'postgres://localhost/db',
})

describe('the OAuth state', () => {
  it('round-trips its claims and expires after 5 minutes', async () => {
    const keys = await JwtKeys.load(settings.jwt)
    const clock = new FakeClock(Date.UTC(2026, 0, 1))
    const ctx = { keys, clock, settings }
    const state = await signState(ctx, {
      provider: 'github',
      referrer: 'http://localhost:3000/welcome',
      flowStateId: FLOW,
    })
    await expect(verifyState(ctx, state)).resolves.toEqual({
      provider: 'github',
      referrer: 'http://localhost:3000/welcome',
      flowStateId: FLOW,
    })
    clock.advance((STATE_LIFETIME + 1) * 1000)
    await expect(verifyState(ctx, state)).rejects.toMatchObject({
      code: 'bad_oauth_state',
      message: 'OAuth state parameter has expired',
    })
  })

  it('refuses a missing state, a forged one and a token that is not a state', async () => {
    const keys = await JwtKeys.load(settings.jwt)
    const ctx = { keys, clock: new FakeClock(), settings }
    await expect(verifyState(ctx, '')).rejects.toMatchObject({
      code: 'bad_oauth_callback',
      message: 'OAuth state parameter missing',
    })
    const other = await JwtKeys.load({
      ...settings.jwt,
      secret: 'another-secret-of-thirty-two-bytes!!',
    })
    const forged = await signState(
      { ...ctx, keys: other },
      {
        provider: 'github',
        referrer: 'https://evil.example',
        flowStateId: FLOW,
      },
    )
    await expect(verifyState(ctx, forged)).rejects.toBeInstanceOf(OAuthStateError)
    const accessToken = await keys.sign({ sub: 'x', exp: Math.floor(Date.UTC(2027, 0, 1) / 1000) })
    await expect(verifyState(ctx, accessToken)).rejects.toMatchObject({
      message: 'OAuth state parameter is invalid',
    })
  })

  it('refuses a state without its own flow state (states of older releases)', async () => {
    const keys = await JwtKeys.load(settings.jwt)
    const ctx = { keys, clock: new FakeClock(), settings }
    const state = await signState(ctx, { provider: 'github', referrer: 'x', flowStateId: '' })
    await expect(verifyState(ctx, state)).rejects.toMatchObject({
      code: 'bad_oauth_state',
      message: 'OAuth state parameter is invalid',
    })
  })
})

describe('the link ticket', () => {
  const ticket = {
    id: FLOW,
    userId: '6f1d7a4e-0c2b-4d9e-9a51-2b7c3e8f1a00',
    sessionId: '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f',
    provider: 'notion',
  }

  it('round-trips, expires with the state, and is neither a state nor an access token', async () => {
    const keys = await JwtKeys.load(settings.jwt)
    const clock = new FakeClock(Date.UTC(2026, 0, 1))
    const ctx = { keys, clock, settings }
    const signed = await signLinkTicket(ctx, ticket)
    await expect(verifyLinkTicket(ctx, signed)).resolves.toEqual(ticket)
    await expect(verifyState(ctx, signed)).rejects.toBeInstanceOf(OAuthStateError)
    expect(await keys.verify(signed, clock)).not.toHaveProperty('sub')
    const state = await signState(ctx, { provider: 'notion', referrer: 'x', flowStateId: FLOW })
    await expect(verifyLinkTicket(ctx, state)).rejects.toMatchObject({
      code: 'bad_oauth_state',
      message: 'Identity link request is invalid',
    })
    clock.advance((STATE_LIFETIME + 1) * 1000)
    await expect(verifyLinkTicket(ctx, signed)).rejects.toMatchObject({
      message: 'Identity link request has expired',
    })
  })
})
