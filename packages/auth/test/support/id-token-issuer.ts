/**
 * Issuers of ID tokens for the `id_token` grant's tests:
 * - {@link startIdTokenIssuer}: a real `oidc-provider` on a random loopback port, with its own
 *   RSA key, playing one provider family (Google, Apple, Azure, Keycloak); {@link
 *   TestIdTokenIssuer.mint} drives an authorization-code flow over HTTP (headless login and
 *   consent, cookies carried by hand) and returns the genuine `id_token` and `access_token`.
 * - {@link startFakeIssuer}: a discovery document and a JWKS that the test changes (key
 *   rotation), for hand-signed hostile tokens.
 */
import type { Server } from 'node:http'
import { addHeadlessInteractions, getFreePort, startHttpServer } from '@gatehouse/testing'
import {
  exportJWK,
  generateKeyPair,
  SignJWT,
  type CryptoKey,
  type JWK,
  type JWTPayload,
} from 'jose'
import Provider from 'oidc-provider'

/** Who signs in at an issuer. */
export interface IssuerAccount {
  readonly sub: string
  readonly email: string
  readonly emailVerified: boolean
  readonly name: string
}

/** Tokens an issuer minted. */
export interface MintedTokens {
  readonly idToken: string
  readonly accessToken: string
}

/** A running `oidc-provider`. */
export interface TestIdTokenIssuer {
  readonly issuer: string
  /** The client ids it issues tokens to (the first is the web client). */
  readonly clientIds: readonly string[]
  /**
   * Signs `account` in through an authorization-code flow for `clientId` and returns the tokens.
   *
   * @param nonce The `nonce` of the authorization request (the token carries it as it is).
   */
  mint(
    account: IssuerAccount,
    options?: { clientId?: string; nonce?: string },
  ): Promise<MintedTokens>
  stop(): Promise<void>
}

const REDIRECT_URI = 'http://127.0.0.1/native-app-callback'
const SECRET = 'issuer-client-secret-0123456789-0123456789'

/**
 * Starts an `oidc-provider` issuing to `clientIds`; `extra` adds provider-specific claims to
 * every ID token (Apple's `is_private_email`, Azure's `xms_edov`, …).
 */
export async function startIdTokenIssuer(
  clientIds: readonly string[],
  extra: Readonly<Record<string, unknown>> = {},
): Promise<TestIdTokenIssuer> {
  const port = await getFreePort()
  const issuer = `http://127.0.0.1:${String(port)}`
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: `key-${String(port)}`, alg: 'RS256' }
  const accounts = new Map<string, IssuerAccount>()
  let next: IssuerAccount | undefined
  const provider = new Provider(issuer, {
    clients: clientIds.map((id) => ({
      client_id: id,
      client_secret: SECRET,
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    })),
    jwks: { keys: [jwk] },
    features: { devInteractions: { enabled: false } },
    scopes: ['openid', 'email', 'profile'],
    claims: {
      openid: ['sub', ...Object.keys(extra)],
      email: ['email', 'email_verified'],
      profile: ['name', 'preferred_username', 'picture'],
    },
    pkce: { required: () => false },
    conformIdTokenClaims: false,
    findAccount: (_ctx, sub) => {
      const found = accounts.get(sub)
      if (found === undefined) return undefined
      return {
        accountId: sub,
        claims: () => ({
          sub,
          email: found.email,
          email_verified: found.emailVerified,
          name: found.name,
          preferred_username: found.name.split(' ')[0]?.toLowerCase(),
          picture: `https://pictures.example/${sub}.png`,
          ...extra,
        }),
      }
    },
  })
  addHeadlessInteractions(provider, {
    login: () => {
      if (next === undefined) throw new Error('no account to sign in')
      accounts.set(next.sub, next)
      return next.sub
    },
  })
  const server: Server = provider.listen(port, '127.0.0.1')
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve)
    server.once('error', reject)
  })

  async function mint(
    account: IssuerAccount,
    options: { clientId?: string; nonce?: string } = {},
  ): Promise<MintedTokens> {
    next = account
    const clientId = options.clientId ?? clientIds[0] ?? ''
    const cookies = new Map<string, string>()
    const authorize = new URL(`${issuer}/auth`)
    authorize.search = new URLSearchParams({
      client_id: clientId,
      response_type: 'code',
      scope: 'openid email profile',
      redirect_uri: REDIRECT_URI,
      state: 'native-app',
      ...(options.nonce === undefined ? {} : { nonce: options.nonce }),
    }).toString()
    let url = authorize.href
    for (let hop = 0; hop < 10; hop++) {
      if (url.startsWith(REDIRECT_URI)) break
      const response = await fetch(url, {
        redirect: 'manual',
        headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
      })
      for (const line of response.headers.getSetCookie()) {
        const [pair = ''] = line.split(';')
        const at = pair.indexOf('=')
        cookies.set(pair.slice(0, at), pair.slice(at + 1))
      }
      const location = response.headers.get('location')
      await response.arrayBuffer()
      if (location === null) throw new Error(`no redirect from ${url} (${String(response.status)})`)
      url = new URL(location, url).href
    }
    const code = new URL(url).searchParams.get('code')
    if (code === null) throw new Error(`no code in ${url}`)
    const token = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT_URI,
        client_id: clientId,
        client_secret: SECRET,
      }),
    })
    const body = (await token.json()) as { id_token?: string; access_token?: string }
    if (body.id_token === undefined || body.access_token === undefined) {
      throw new Error(`no tokens: ${JSON.stringify(body)}`)
    }
    return { idToken: body.id_token, accessToken: body.access_token }
  }

  return {
    issuer,
    clientIds,
    mint,
    async stop() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve()
        })
      })
    },
  }
}

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
