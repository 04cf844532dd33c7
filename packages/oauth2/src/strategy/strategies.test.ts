import { generateKeyPairSync } from 'node:crypto'
import { exportJWK, exportPKCS8, generateKeyPair, jwtVerify, decodeProtectedHeader } from 'jose'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { argError } from '../../test/support/expect.js'
import { FakeServer } from '../../test/support/fake-server.js'
import { Client } from '../client.js'
import { JWT_BEARER_GRANT_TYPE } from './assertion.js'

const TOKEN = { access_token: 'at', token_type: 'Bearer', expires_in: 60 }

describe('grant strategies', () => {
  let server: FakeServer
  let client: Client

  beforeEach(async () => {
    server = await FakeServer.start()
    client = new Client('id', 'secret', {
      site: server.url,
      redirect_uri: 'https://app.example/cb',
      authScheme: 'request_body',
    })
  })

  afterEach(async () => {
    await server.close()
    server.assertDone()
  })

  it('authCode.getToken sends grant_type, code, the client redirect_uri and caller params (which win)', async () => {
    server.on('POST', '/oauth/token', { body: TOKEN }, 2)
    const token = await client.authCode.getToken('the-code', { code_verifier: 'v'.repeat(43) })
    expect(token.token).toBe('at')
    expect(server.last().form).toEqual({
      client_id: 'id',
      client_secret: 'secret',
      code: 'the-code',
      code_verifier: 'v'.repeat(43),
      grant_type: 'authorization_code',
      redirect_uri: 'https://app.example/cb',
    })
    await client.authCode.getToken('c2', {
      redirect_uri: 'https://other/cb',
      headers: { 'x-h': '1' },
    })
    expect(server.last().form.redirect_uri).toBe('https://other/cb')
    expect(server.last().headers['x-h']).toBe('1')
  })

  it('requirePkce refuses a code exchange without code_verifier', async () => {
    const strict = new Client('id', 's', { site: server.url, requirePkce: true })
    await expect(strict.authCode.getToken('c')).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"params.code_verifier"'),
    )
  })

  it('password.getToken sends the resource owner credentials', async () => {
    server.on('POST', '/oauth/token', { body: TOKEN })
    await client.password.getToken('ann', 'pw', { scope: 'read' })
    expect(server.last().form).toMatchObject({
      grant_type: 'password',
      username: 'ann',
      password: 'pw',
      scope: 'read',
    })
  })

  it('clientCredentials.getToken forces grant_type', async () => {
    server.on('POST', '/oauth/token', { body: TOKEN })
    await client.clientCredentials.getToken({ grant_type: 'other', resource: 'urn:api' })
    expect(server.last().form).toMatchObject({
      grant_type: 'client_credentials',
      resource: 'urn:api',
    })
  })

  it('rejects bad arguments to the strategies', async () => {
    await expect(client.authCode.getToken(5 as never)).rejects.toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"code"'),
    )
    await expect(client.password.getToken('a', undefined as never)).rejects.toThrow(
      argError(undefined, '"password"'),
    )
    await expect(client.clientCredentials.getToken('x' as never)).rejects.toThrow(
      argError(undefined, '"params"'),
    )
  })

  describe('assertion (RFC 7523 §2.1)', () => {
    const claims = {
      iss: 'id',
      aud: 'https://as.example',
      sub: 'user-1',
      exp: 4_000_000_000,
      scope: 'x',
    }

    async function exchange(signing: Parameters<Client['assertion']['getToken']>[1]) {
      server.on('POST', '/oauth/token', { body: TOKEN })
      await client.assertion.getToken(claims, signing, { scope: 'api' })
      const form = server.last().form
      expect(form.grant_type).toBe(JWT_BEARER_GRANT_TYPE)
      expect(form.scope).toBe('api')
      return form.assertion!
    }

    it('signs with HS256 and a string secret', async () => {
      const jwt = await exchange({
        algorithm: 'HS256',
        key: 'shared-secret-shared-secret-32b!',
        kid: 'k',
      })
      expect(decodeProtectedHeader(jwt)).toEqual({ alg: 'HS256', typ: 'JWT', kid: 'k' })
      const { payload } = await jwtVerify(
        jwt,
        new TextEncoder().encode('shared-secret-shared-secret-32b!'),
      )
      expect(payload).toEqual(claims)
    })

    it('signs with HS512 and secret bytes', async () => {
      const key = new Uint8Array(64).fill(7)
      const { payload } = await jwtVerify(await exchange({ algorithm: 'HS512', key }), key)
      expect(payload.sub).toBe('user-1')
    })

    it('signs with RS256 and a PKCS#8 PEM, and with PS256 and a PKCS#1 PEM', async () => {
      const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
      const pem = await exportPKCS8(privateKey)
      expect(
        (await jwtVerify(await exchange({ algorithm: 'RS256', key: pem }), publicKey)).payload.iss,
      ).toBe('id')
      const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
      const pkcs1 = rsa.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString()
      expect(pkcs1).toContain('BEGIN RSA PRIVATE KEY')
      const jwt = await exchange({ algorithm: 'PS256', key: pkcs1 })
      expect((await jwtVerify(jwt, rsa.publicKey)).protectedHeader.alg).toBe('PS256')
    })

    it('signs with ES256 and a JWK, and EdDSA with a KeyObject', async () => {
      const ec = await generateKeyPair('ES256', { extractable: true })
      const jwt = await exchange({ algorithm: 'ES256', key: await exportJWK(ec.privateKey) })
      expect((await jwtVerify(jwt, ec.publicKey)).payload.aud).toBe('https://as.example')
      const ed = generateKeyPairSync('ed25519')
      const edJwt = await exchange({ algorithm: 'EdDSA', key: ed.privateKey })
      expect((await jwtVerify(edJwt, ed.publicKey)).protectedHeader.alg).toBe('EdDSA')
    })

    it('rejects unknown algorithms, keys that do not fit, and a non-numeric exp', async () => {
      await expect(
        client.assertion.getToken(claims, { algorithm: 'none' as never, key: 'k' }),
      ).rejects.toThrow(argError('ERR_INVALID_ARG_VALUE', '"signing.algorithm"'))
      await expect(
        client.assertion.getToken(claims, { algorithm: 'RS256', key: 'not a pem' }),
      ).rejects.toThrow(argError('ERR_INVALID_ARG_VALUE', '"signing.key"'))
      await expect(
        client.assertion.getToken(claims, { algorithm: 'ES256', key: 5 as never }),
      ).rejects.toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
      await expect(
        client.assertion.getToken(
          { ...claims, exp: '1' as never },
          { algorithm: 'HS256', key: 'k' },
        ),
      ).rejects.toThrow(argError(undefined, '"claims.exp"'))
    })

    it("turns a key jose cannot use into an argument error with jose's as the cause", async () => {
      const pem = '-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----'
      const broken = client.assertion.getToken(claims, { algorithm: 'RS256', key: pem })
      await expect(broken).rejects.toThrow(
        argError('ERR_INVALID_ARG_VALUE', '"signing.key" is not a usable RS256 private key'),
      )
      await expect(broken).rejects.toHaveProperty('cause', expect.any(Error))
      const ec = await generateKeyPair('ES256', { extractable: true })
      const mismatched = { algorithm: 'RS256' as const, key: await exportJWK(ec.privateKey) }
      await expect(client.assertion.getToken(claims, mismatched)).rejects.toThrow(
        argError('ERR_INVALID_ARG_VALUE', '"signing.key" is not a usable RS256 private key'),
      )
    })
  })
})
