import { createHash } from 'node:crypto'
import { inspect } from 'node:util'
import { FakeClock } from '@gatehouse/testing'
import {
  calculateJwkThumbprint,
  EmbeddedJWK,
  generateKeyPair,
  jwtVerify,
  type JWTPayload,
} from 'jose'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { argError } from '../test/support/expect.js'
import { FakeServer, type RecordedRequest } from '../test/support/fake-server.js'
import { AccessToken } from './access-token.js'
import { Client } from './client.js'
import { DPoP, type DPoPOptions } from './dpop.js'
import { OAuth2Error } from './error.js'
import { systemRandom } from './random.js'

const NOW = Date.UTC(2030, 0, 1)
const DPOP_TOKEN = { access_token: 'at-1', token_type: 'DPoP', expires_in: 300 }

/** Verifies a proof with the key in its own header; returns its claims and header. */
async function proofOf(request: RecordedRequest) {
  const proof = request.headers.dpop
  if (typeof proof !== 'string') throw new Error('no DPoP header')
  const { payload, protectedHeader } = await jwtVerify(proof, EmbeddedJWK, { typ: 'dpop+jwt' })
  return { payload: payload as JWTPayload & Record<string, unknown>, header: protectedHeader }
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('base64url')

describe('DPoP (RFC 9449)', () => {
  let server: FakeServer
  let clock: FakeClock

  const dpopClient = (dpop: true | DPoPOptions = true, extra = {}) =>
    new Client('id', 'secret', { site: server.url, clock, dpop, ...extra })

  beforeEach(async () => {
    server = await FakeServer.start()
    clock = new FakeClock(NOW)
  })

  afterEach(async () => {
    await server.close()
    server.assertDone()
  })

  describe('proofs on token requests (§5)', () => {
    it('signs each token request with a fresh ES256 proof: typ, public jwk, htm, htu, iat from the clock, unique jti', async () => {
      server.on('POST', '/oauth/token', { body: DPOP_TOKEN }, 2)
      const client = dpopClient()
      await client.clientCredentials.getToken({ scope: 'api' })
      clock.advance(5_000)
      await client.clientCredentials.getToken({ headers: { 'X-Trace': '1' } })
      const [first, second] = server.requests
      const a = await proofOf(first!)
      const b = await proofOf(second!)
      expect(a.header).toEqual({
        typ: 'dpop+jwt',
        alg: 'ES256',
        jwk: expect.any(Object) as unknown,
      })
      expect(Object.keys(a.header.jwk!).sort()).toEqual(['crv', 'kty', 'x', 'y'])
      expect(a.payload).toEqual({
        jti: expect.any(String) as unknown,
        htm: 'POST',
        htu: `${server.url}/oauth/token`,
        iat: NOW / 1000,
      })
      expect(b.payload.iat).toBe(NOW / 1000 + 5)
      expect(b.payload.jti).not.toBe(a.payload.jti)
      expect(b.header.jwk).toEqual(a.header.jwk)
      // Client authentication is untouched.
      expect(first!.headers.authorization).toMatch(/^Basic /)
    })

    it('proves the refresh_token grant too, and the bound refreshed token keeps token_type DPoP', async () => {
      server.on('POST', '/oauth/token', { body: { ...DPOP_TOKEN, refresh_token: 'rt' } })
      server.on('POST', '/oauth/token', { body: { ...DPOP_TOKEN, access_token: 'at-2' } })
      const client = dpopClient()
      const token = await client.clientCredentials.getToken()
      const next = await token.refresh()
      const { payload } = await proofOf(server.last())
      expect(server.last().form.grant_type).toBe('refresh_token')
      expect(payload.htm).toBe('POST')
      expect(next.dpopBound).toBe(true)
    })

    it('puts the thumbprint of its key in dpopJkt(), the value servers bind as cnf.jkt', async () => {
      server.on('POST', '/oauth/token', { body: DPOP_TOKEN })
      const client = dpopClient()
      await client.clientCredentials.getToken()
      const { header } = await proofOf(server.last())
      expect(await client.dpopJkt()).toBe(await calculateJwkThumbprint(header.jwk!))
      await expect(new Client('id', 's').dpopJkt()).rejects.toThrow(
        argError('ERR_INVALID_ARG_VALUE', '"options.dpop" is not set'),
      )
    })

    it('signs with a given key pair and algorithm (EdDSA, PS256, RS256 by the RSA key)', async () => {
      const cases = [
        [await generateKeyPair('EdDSA', { crv: 'Ed25519' }), undefined, 'EdDSA'],
        [await generateKeyPair('Ed25519'), 'Ed25519', 'Ed25519'],
        [await generateKeyPair('PS256'), undefined, 'PS256'],
        [await generateKeyPair('RS256'), undefined, 'RS256'],
        [await generateKeyPair('ES384'), undefined, 'ES384'],
      ] as const
      server.on('POST', '/oauth/token', { body: DPOP_TOKEN }, cases.length)
      for (const [keyPair, algorithm, expected] of cases) {
        const client = dpopClient({ keyPair, algorithm })
        await client.clientCredentials.getToken()
        expect((await proofOf(server.last())).header.alg).toBe(expected)
      }
    })

    it('makes the same verifiable proofs with the WebCrypto signer (runtimes without node:crypto)', async () => {
      for (const alg of ['ES256', 'PS256', 'EdDSA'] as const) {
        const dpop = new DPoP(
          { keyPair: await generateKeyPair(alg), algorithm: alg },
          { clock, random: systemRandom },
          false,
        )
        const proof = await dpop.proof('GET', 'https://rs.example/a?b=c#d', 'ath-value')
        const { payload } = await jwtVerify(proof, EmbeddedJWK, { typ: 'dpop+jwt' })
        expect(payload).toMatchObject({
          htm: 'GET',
          htu: 'https://rs.example/a',
          ath: 'ath-value',
        })
      }
    })

    it('chooses the algorithm from the server metadata for a generated key', async () => {
      const metadata = (algs: string[]) => ({
        issuer: server.url,
        dpop_signing_alg_values_supported: algs,
      })
      expect(dpopClient(true, { metadata: metadata(['ES256', 'EdDSA']) }).options.dpop).toEqual({
        keyPair: undefined,
        algorithm: 'ES256',
      })
      const eddsa = dpopClient(true, { metadata: metadata(['RS1', 'EdDSA']) })
      expect(eddsa.options.dpop?.algorithm).toBe('EdDSA')
      server.on('POST', '/oauth/token', { body: DPOP_TOKEN })
      await eddsa.clientCredentials.getToken()
      expect((await proofOf(server.last())).header.alg).toBe('EdDSA')
      expect(() => dpopClient(true, { metadata: metadata(['HS256']) })).toThrow(
        argError(
          'ERR_INVALID_ARG_VALUE',
          'accepts no algorithm this library signs DPoP proofs with',
        ),
      )
      const es256 = await generateKeyPair('ES256')
      expect(() =>
        dpopClient({ keyPair: es256 }, { metadata: metadata(['PS256', 'EdDSA']) }),
      ).toThrow(
        argError(
          'ERR_INVALID_ARG_VALUE',
          '"options.dpop.keyPair" signs with ES256, which the authorization server does not accept',
        ),
      )
      expect(() => dpopClient({ algorithm: 'ES384' }, { metadata: metadata(['ES256']) })).toThrow(
        argError('ERR_INVALID_ARG_VALUE', '"options.dpop.algorithm" is ES384'),
      )
    })
  })

  describe('DPoP-bound tokens on resource requests (§7)', () => {
    it('sends Authorization: DPoP with a proof (htm, htu without query, ath), replacing a caller Authorization', async () => {
      server.on('POST', '/oauth/token', { body: DPOP_TOKEN })
      server.on('GET', '/api/things', (request) => {
        expect(request.headers.authorization).toBe('DPoP at-1')
        return { body: { ok: true } }
      })
      server.on('POST', '/api/things', { status: 201, body: {} })
      const client = dpopClient()
      const token = await client.clientCredentials.getToken({}, { headerFormat: 'Token %s' })
      expect(token.dpopBound).toBe(true)
      const response = await token.get('/api/things?page=2', {
        headers: { Authorization: 'Bearer other', DPoP: 'forged' },
      })
      expect(response.parsed).toEqual({ ok: true })
      const get = await proofOf(server.requests[1]!)
      expect(get.payload).toMatchObject({
        htm: 'GET',
        htu: `${server.url}/api/things`,
        ath: sha256('at-1'),
      })
      await token.post('api/things', { body: { a: '1' } })
      const post = await proofOf(server.last())
      expect(post.payload.htm).toBe('POST')
      expect(post.payload.jti).not.toBe(get.payload.jti)
    })

    it('sends a Bearer token from a DPoP client as Bearer, without a proof (the server did not bind it)', async () => {
      server.on('POST', '/oauth/token', { body: { ...DPOP_TOKEN, token_type: 'Bearer' } })
      server.on('GET', '/r', { body: {} })
      const token = await dpopClient().clientCredentials.getToken()
      expect(token.dpopBound).toBe(false)
      await token.get('/r')
      expect(server.last().headers.authorization).toBe('Bearer at-1')
      expect(server.last().headers.dpop).toBeUndefined()
    })

    it('never sends a DPoP-bound token as a bearer token: no key, a query or body mode, headers()', async () => {
      const plain = new Client('id', 'secret', { site: server.url })
      const bound = new AccessToken(plain, 'at', { token_type: 'DPoP' })
      await expect(bound.get('/r')).rejects.toMatchObject({
        name: 'OAuth2Error',
        code: 'dpop_key_required',
        description: expect.stringContaining(
          'use a client created with the dpop option',
        ) as unknown,
      })
      expect(() => bound.headers()).toThrow(expect.objectContaining({ code: 'dpop_key_required' }))
      expect(() => new AccessToken(plain, 'at', { token_type: 'dpop', mode: 'query' })).toThrow(
        argError('ERR_INVALID_ARG_VALUE', 'Authorization header only'),
      )
      const perVerb = new AccessToken(dpopClient(), 'at', {
        token_type: 'DPoP',
        mode: { post: 'body' },
      })
      await expect(perVerb.post('/r')).rejects.toThrow(
        argError('ERR_INVALID_ARG_VALUE', `"mode" resolved to 'body' for post`),
      )
      expect(server.requests).toHaveLength(0)
    })

    it('sends no proof and no DPoP Authorization to another origin on a redirect', async () => {
      const other = await FakeServer.start()
      try {
        other.on('GET', '/landing', { body: {} })
        server.on('GET', '/start', { status: 302, headers: { location: `${other.url}/landing` } })
        const token = new AccessToken(dpopClient(), 'at', { token_type: 'DPoP' })
        await token.get('/start')
        expect(other.last().headers.authorization).toBeUndefined()
        expect(other.last().headers.dpop).toBeUndefined()
        other.assertDone()
      } finally {
        await other.close()
      }
    })

    it('signs each same-origin redirect hop for its own URL and method', async () => {
      server.on('POST', '/old', { status: 303, headers: { location: '/new' } })
      server.on('GET', '/new', { body: {} })
      const token = new AccessToken(dpopClient(), 'at', { token_type: 'DPoP' })
      await token.post('/old')
      const hop = await proofOf(server.last())
      expect(hop.payload).toMatchObject({ htm: 'GET', htu: `${server.url}/new` })
      expect(server.last().headers.authorization).toBe('DPoP at')
    })
  })

  describe('server nonces (§8, §9)', () => {
    const nonceError = (nonce: string) => ({
      status: 400,
      headers: { 'DPoP-Nonce': nonce },
      body: { error: 'use_dpop_nonce', error_description: 'nonce required' },
    })

    it('resends a token request once with the nonce of a use_dpop_nonce answer, and keeps using it', async () => {
      server.on('POST', '/oauth/token', nonceError('n-1'))
      server.on('POST', '/oauth/token', { body: DPOP_TOKEN }, 2)
      const client = dpopClient()
      const token = await client.clientCredentials.getToken()
      expect(token.token).toBe('at-1')
      expect((await proofOf(server.requests[0]!)).payload.nonce).toBeUndefined()
      expect((await proofOf(server.requests[1]!)).payload.nonce).toBe('n-1')
      await client.clientCredentials.getToken()
      expect(server.requests).toHaveLength(3)
      expect((await proofOf(server.requests[2]!)).payload.nonce).toBe('n-1')
    })

    it('takes a new nonce from any response and resends a resource request once on a DPoP use_dpop_nonce challenge', async () => {
      server.on('GET', '/r', { headers: { 'DPoP-Nonce': 'n-1' }, body: {} })
      server.on('GET', '/r', {
        status: 401,
        headers: {
          'DPoP-Nonce': 'n-2',
          'WWW-Authenticate': 'DPoP error="use_dpop_nonce", error_description="new nonce"',
        },
      })
      server.on('GET', '/r', { body: { ok: 1 } })
      const token = new AccessToken(dpopClient(), 'at', { token_type: 'DPoP' })
      await token.get('/r')
      const response = await token.get('/r')
      expect(response.parsed).toEqual({ ok: 1 })
      const nonces = await Promise.all(
        server.requests.map(async (r) => (await proofOf(r)).payload.nonce),
      )
      expect(nonces).toEqual([undefined, 'n-1', 'n-2'])
    })

    it('keeps nonces per server', async () => {
      const other = await FakeServer.start()
      try {
        server.on('POST', '/oauth/token', nonceError('as-nonce'))
        server.on('POST', '/oauth/token', { body: DPOP_TOKEN })
        other.on('GET', '/r', { body: {} })
        const client = dpopClient()
        const token = await client.clientCredentials.getToken()
        await token.get(`${other.url}/r`)
        expect((await proofOf(other.last())).payload.nonce).toBeUndefined()
        other.assertDone()
      } finally {
        await other.close()
      }
    })

    it('keeps the nonces of the last 100 servers', async () => {
      const dpop = new DPoP(
        { keyPair: await generateKeyPair('ES256'), algorithm: 'ES256' },
        { clock, random: systemRandom },
      )
      for (let i = 0; i <= 100; i++) {
        const url = `https://s${String(i)}.example/r`
        dpop.resend(
          { method: 'GET', url, headers: {}, body: undefined },
          { status: 200, headers: { 'dpop-nonce': `n-${String(i)}` }, body: '' },
        )
      }
      const nonceFor = async (server: number) => {
        const proof = await dpop.proof('GET', `https://s${String(server)}.example/r`)
        const { payload } = await jwtVerify(proof, EmbeddedJWK)
        return payload.nonce
      }
      expect(await nonceFor(0)).toBeUndefined()
      expect(await nonceFor(1)).toBe('n-1')
      expect(await nonceFor(100)).toBe('n-100')
    })

    it('gives a server that refuses its own nonces one retry, then use_dpop_nonce (token and resource requests)', async () => {
      server.on('POST', '/oauth/token', nonceError('n-1'))
      server.on('POST', '/oauth/token', nonceError('n-2'))
      const client = dpopClient()
      const error = await client.clientCredentials.getToken().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OAuth2Error)
      expect(error).toMatchObject({
        code: 'use_dpop_nonce',
        description: expect.stringContaining('asked for a new DPoP nonce again') as unknown,
        response: { status: 400 },
      })
      const challenge = {
        status: 401,
        headers: { 'DPoP-Nonce': 'n-3', 'WWW-Authenticate': 'DPoP error="use_dpop_nonce"' },
      }
      server.on('GET', '/r', challenge, 4)
      const token = new AccessToken(client, 'at', { token_type: 'DPoP' })
      await expect(token.get('/r')).rejects.toMatchObject({ code: 'use_dpop_nonce' })
      const lenient = await token.get('/r', { raiseErrors: false })
      expect(lenient.status).toBe(401)
      expect(lenient.error?.code).toBe('use_dpop_nonce')
      expect(server.requests).toHaveLength(6)
    })

    it('does not resend for a malformed DPoP-Nonce or a nonce header without use_dpop_nonce', async () => {
      server.on('POST', '/oauth/token', nonceError('bad "nonce"'))
      server.on('POST', '/oauth/token', {
        status: 400,
        headers: { 'DPoP-Nonce': 'n-1' },
        body: { error: 'invalid_dpop_proof' },
      })
      const client = dpopClient()
      await expect(client.clientCredentials.getToken()).rejects.toMatchObject({
        code: 'use_dpop_nonce',
        description: 'nonce required',
      })
      await expect(client.clientCredentials.getToken()).rejects.toMatchObject({
        code: 'invalid_dpop_proof',
      })
      expect(server.requests).toHaveLength(2)
    })
  })

  describe('bad keys (hostile input)', () => {
    it('refuses what is not a signing key pair, naming the option and the fix', async () => {
      const secret = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, false, [
        'sign',
      ])
      const ecdh = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, false, [
        'deriveBits',
      ])
      const es256 = await generateKeyPair('ES256')
      const small = await crypto.subtle.generateKey(
        {
          name: 'RSASSA-PKCS1-v1_5',
          modulusLength: 1024,
          publicExponent: new Uint8Array([1, 0, 1]),
          hash: 'SHA-256',
        },
        false,
        ['sign', 'verify'],
      )
      const ed = await generateKeyPair('EdDSA', { crv: 'Ed25519' })
      const decryptOnly = await crypto.subtle.generateKey(
        {
          name: 'RSA-OAEP',
          modulusLength: 2048,
          publicExponent: new Uint8Array([1, 0, 1]),
          hash: 'SHA-256',
        },
        false,
        ['encrypt', 'decrypt'],
      )
      const cases: [unknown, string, string][] = [
        ['yes', 'ERR_INVALID_ARG_TYPE', '"options.dpop" must be true or an object'],
        [
          { algorithm: 'HS256' },
          'ERR_INVALID_ARG_VALUE',
          '"options.dpop.algorithm" must be one of',
        ],
        [{ keyPair: 'pem' }, 'ERR_INVALID_ARG_TYPE', '"options.dpop.keyPair" must be an object'],
        [
          { keyPair: { privateKey: 'k', publicKey: es256.publicKey } },
          'ERR_INVALID_ARG_TYPE',
          '"options.dpop.keyPair.privateKey" must be a WebCrypto CryptoKey',
        ],
        [
          { keyPair: { privateKey: secret, publicKey: secret } },
          'ERR_INVALID_ARG_VALUE',
          '"options.dpop.keyPair.privateKey" must be a private key (got a secret key)',
        ],
        [
          { keyPair: { privateKey: es256.publicKey, publicKey: es256.publicKey } },
          'ERR_INVALID_ARG_VALUE',
          'must be a private key (got a public key)',
        ],
        [
          { keyPair: { privateKey: es256.privateKey, publicKey: es256.privateKey } },
          'ERR_INVALID_ARG_VALUE',
          '"options.dpop.keyPair.publicKey" must be a public key (got a private key)',
        ],
        [ecdh, 'ERR_INVALID_ARG_VALUE', "cannot sign DPoP proofs: it is a 'ECDH' key"],
        [small, 'ERR_INVALID_ARG_VALUE', 'an RSA key of 1024 bits; at least 2048 are required'],
        [decryptOnly, 'ERR_INVALID_ARG_VALUE', "cannot sign DPoP proofs: it is a 'RSA-OAEP' key"],
        [
          { keyPair: { privateKey: es256.privateKey, publicKey: ed.publicKey } },
          'ERR_INVALID_ARG_VALUE',
          'is not the same kind of key as privateKey',
        ],
        [
          { keyPair: es256, algorithm: 'ES384' },
          'ERR_INVALID_ARG_VALUE',
          '"options.dpop.algorithm" is ES384, which the key pair cannot sign with (it fits ES256)',
        ],
      ]
      for (const [dpop, code, message] of cases) {
        const option = isKeyPair(dpop) ? { keyPair: dpop } : dpop
        expect(() => dpopClient(option as DPoPOptions), message).toThrow(
          argError(code as 'ERR_INVALID_ARG_TYPE', message),
        )
      }
    })

    it('refuses a key pair whose halves do not belong together before any request is sent', async () => {
      const a = await generateKeyPair('ES256')
      const b = await generateKeyPair('ES256')
      const client = dpopClient({ keyPair: { privateKey: a.privateKey, publicKey: b.publicKey } })
      await expect(client.clientCredentials.getToken()).rejects.toThrow(
        argError(
          'ERR_INVALID_ARG_VALUE',
          '"options.dpop.keyPair" holds a public key that does not belong to its private key',
        ),
      )
      expect(server.requests).toHaveLength(0)
    })

    it('never shows the key through util.inspect or JSON.stringify', async () => {
      const given = dpopClient({ keyPair: await generateKeyPair('ES256') })
      const generated = dpopClient()
      for (const text of [inspect(given, { depth: 10 }), JSON.stringify(given)]) {
        expect(text).toMatch(/algorithm.{1,4}ES256/)
        expect(text).toMatch(/keyPair.{1,4}\[FILTERED\]/)
        expect(text).not.toMatch(/CryptoKey|ECDSA|namedCurve|usages/)
      }
      expect(JSON.parse(JSON.stringify(generated))).toMatchObject({
        dpop: { algorithm: 'ES256', keyPair: 'generated' },
      })
    })
  })
})

function isKeyPair(value: unknown): boolean {
  return (
    typeof value === 'object' && value !== null && 'privateKey' in value && !('keyPair' in value)
  )
}
