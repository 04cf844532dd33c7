import { FakeClock } from '@gatehouse/testing'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import { describe, expect, it } from 'vitest'
import { JwtKeyError, JwtKeys } from './jwt.js'

const clock = new FakeClock(Date.UTC(2026, 0, 1))
const now = Math.floor(clock.now() / 1000)

describe('JwtKeys', () => {
  it('signs and verifies HS256 with JWT_SECRET (kid from JWT_KEY_ID)', async () => {
    const keys = await JwtKeys.load({ secret: 's3cret', keyId: 'main', keys: [] })
    const token = await keys.sign({ sub: 'x', exp: now + 60 })
    expect(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString())).toEqual({
      alg: 'HS256',
      typ: 'JWT',
      kid: 'main',
    })
    expect((await keys.verify(token, clock)).sub).toBe('x')
    expect(keys.jwks()).toEqual({ keys: [] })
  })

  it('signs HS256 tokens byte for byte as jose SignJWT does, with and without a kid', async () => {
    const claims = {
      aud: 'authenticated',
      exp: now + 3600,
      iat: now,
      sub: 'a1b2',
      email: 'é@example.com',
      app_metadata: { provider: 'email', providers: ['email'] },
      user_metadata: {},
      amr: [{ method: 'password', timestamp: now }],
      is_anonymous: false,
    }
    const secret = new TextEncoder().encode('s3cret')
    for (const keyId of ['', 'main']) {
      const keys = await JwtKeys.load({ secret: 's3cret', keyId, keys: [] })
      const header =
        keyId === '' ? { alg: 'HS256', typ: 'JWT' } : { alg: 'HS256', typ: 'JWT', kid: keyId }
      const expected = await new SignJWT(claims).setProtectedHeader(header).sign(secret)
      expect(await keys.sign(claims)).toBe(expected)
    }
  })

  it('checks exp against the injected clock, and refuses tokens without exp', async () => {
    const keys = await JwtKeys.load({ secret: 's3cret', keyId: '', keys: [] })
    const expired = await keys.sign({ sub: 'x', exp: now - 1 })
    await expect(keys.verify(expired, clock)).rejects.toThrow(/exp/)
    const forever = await keys.sign({ role: 'service_role' })
    await expect(keys.verify(forever, clock)).rejects.toThrow('missing required "exp" claim')
  })

  it('remembers a verified token: its next use checks only exp and nbf against the clock', async () => {
    const keys = await JwtKeys.load({ secret: 's3cret', keyId: '', keys: [] })
    const ticking = new FakeClock(clock.now())
    const token = await keys.sign({ sub: 'x', exp: now + 60, app_metadata: { roles: ['a'] } })
    const first = await keys.verify(token, ticking)
    expect(await keys.verify(token, ticking)).toBe(first)
    // Shared between requests, so nobody can change it.
    expect(Object.isFrozen(first)).toBe(true)
    expect(Object.isFrozen(first.app_metadata)).toBe(true)
    // The same claims under another signature are a different token, verified on their own.
    const [header, payload] = token.split('.')
    await expect(keys.verify(`${header!}.${payload!}.${'A'.repeat(43)}`, ticking)).rejects.toThrow(
      'signature verification failed',
    )
    ticking.advance(60_000)
    await expect(keys.verify(token, ticking)).rejects.toThrow('"exp" claim timestamp check failed')

    const early = await keys.sign({ sub: 'x', exp: now + 600, nbf: now + 30 })
    await expect(keys.verify(early, clock)).rejects.toThrow('"nbf" claim timestamp check failed')
    const later = new FakeClock(clock.now() + 30_000)
    expect((await keys.verify(early, later)).sub).toBe('x')
    // Remembered at a time it was valid, it is still refused before its nbf.
    await expect(keys.verify(early, clock)).rejects.toThrow('"nbf" claim timestamp check failed')
  })

  it('rejects tokens signed by someone else and alg=none', async () => {
    const keys = await JwtKeys.load({ secret: 's3cret', keyId: '', keys: [] })
    const other = await new SignJWT({ sub: 'x' })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode('other'))
    await expect(keys.verify(other, clock)).rejects.toThrow()
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"sub":"x"}').toString('base64url')}.`
    await expect(keys.verify(none, clock)).rejects.toThrow()
  })

  it.each(['RS256', 'ES256', 'EdDSA'] as const)(
    'signs with a %s JWK and still verifies HS256',
    async (alg) => {
      const { privateKey } = await generateKeyPair(alg, { extractable: true })
      const jwk = { ...(await exportJWK(privateKey)), kid: 'k1' }
      const keys = await JwtKeys.load({ secret: 's3cret', keyId: '', keys: [jwk] })
      expect(keys.signingAlgorithm).toBe(alg)
      const token = await keys.sign({ sub: 'x', exp: now + 60 })
      expect((await keys.verify(token, clock)).sub).toBe('x')
      const [published] = keys.jwks().keys
      expect(published).toMatchObject({ kid: 'k1', alg, use: 'sig', key_ops: ['verify'] })
      expect(published).not.toHaveProperty('d')
      const legacy = await new SignJWT({ sub: 'old', exp: now + 60 })
        .setProtectedHeader({ alg: 'HS256' })
        .sign(new TextEncoder().encode('s3cret'))
      expect((await keys.verify(legacy, clock)).sub).toBe('old')
    },
  )

  it('refuses two signing keys and a configuration without any', async () => {
    const a = {
      ...(await exportJWK((await generateKeyPair('ES256', { extractable: true })).privateKey)),
      key_ops: ['sign'],
    }
    const b = {
      ...(await exportJWK((await generateKeyPair('ES256', { extractable: true })).privateKey)),
      key_ops: ['sign'],
    }
    await expect(JwtKeys.load({ secret: '', keyId: '', keys: [a, b] })).rejects.toThrow(JwtKeyError)
    await expect(JwtKeys.load({ secret: '', keyId: '', keys: [] })).rejects.toThrow(
      /no signing key/,
    )
  })
})
