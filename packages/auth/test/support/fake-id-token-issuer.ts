/**
 * A fake ID-token issuer for the `id_token` grant's refusals: a discovery document and a JWKS the
 * test changes (key rotation), and hand-signed tokens (the happy paths use the real
 * `oidc-provider` of `id-token-issuer.ts`).
 */
import { startHttpServer } from '@gatehouse/testing'
import {
  exportJWK,
  generateKeyPair,
  SignJWT,
  type CryptoKey,
  type JWK,
  type JWTPayload,
} from 'jose'

/** A signing key of {@link startFakeIssuer}. */
export interface FakeIssuerKey {
  readonly kid: string
  readonly privateKey: CryptoKey
  readonly publicJwk: JWK
}

/** A discovery document and JWKS the test controls. */
export interface FakeIssuer {
  readonly issuer: string
  /** The keys its JWKS publishes (replace to rotate). */
  keys: FakeIssuerKey[]
  /** How many times the JWKS was fetched. */
  readonly jwksFetches: number
  /** A new RS256 key (not published until added to `keys`). */
  newKey(kid: string): Promise<FakeIssuerKey>
  /**
   * Signs `claims` over the defaults (`iss`, `sub`, `aud`, `iat`, `exp` from `now` ms) with
   * `key` (default the first published one).
   */
  sign(
    claims: JWTPayload,
    options: { now: number; key?: FakeIssuerKey; header?: Record<string, unknown> },
  ): Promise<string>
  stop(): Promise<void>
}

/** Starts a fake issuer whose JWKS has one RS256 key, advertising RS256 only. */
export async function startFakeIssuer(clientId: string): Promise<FakeIssuer> {
  let fetches = 0
  const state = {
    issuer: '',
    keys: [] as FakeIssuerKey[],
    get jwksFetches() {
      return fetches
    },
  }
  const http = await startHttpServer((req, res) => {
    res.setHeader('content-type', 'application/json')
    if (req.url === '/.well-known/openid-configuration') {
      res.end(
        JSON.stringify({
          issuer: state.issuer,
          authorization_endpoint: `${state.issuer}/auth`,
          token_endpoint: `${state.issuer}/token`,
          jwks_uri: `${state.issuer}/jwks`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
        }),
      )
      return
    }
    if (req.url === '/jwks') {
      fetches++
      res.end(JSON.stringify({ keys: state.keys.map((k) => k.publicJwk) }))
      return
    }
    res.statusCode = 404
    res.end('{}')
  })
  state.issuer = http.url
  const newKey = async (kid: string): Promise<FakeIssuerKey> => {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
    return {
      kid,
      privateKey,
      publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' },
    }
  }
  state.keys = [await newKey('first')]
  return Object.assign(state, {
    newKey,
    async sign(
      claims: JWTPayload,
      options: { now: number; key?: FakeIssuerKey; header?: Record<string, unknown> },
    ) {
      const key = options.key ?? state.keys[0]
      if (key === undefined) throw new Error('no key')
      const iat = Math.floor(options.now / 1000)
      return new SignJWT({
        iss: state.issuer,
        sub: 'fake-user',
        aud: clientId,
        iat,
        exp: iat + 300,
        email: 'fake@example.com',
        email_verified: true,
        ...claims,
      })
        .setProtectedHeader({ alg: 'RS256', kid: key.kid, ...options.header })
        .sign(key.privateKey)
    },
    stop: () => http.close(),
  })
}
