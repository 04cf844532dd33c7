/**
 * A real `oidc-provider` on a random loopback port playing an identity provider whose ID tokens a
 * native app hands to the auth server (`POST /token?grant_type=id_token`): the app's sign-in
 * (authorization code + PKCE, headless login and consent) yields a genuine ID token and access
 * token. The test also holds the issuer's signing key, to sign hostile tokens with it.
 */
import { createServer, type Server } from 'node:http'
import { addHeadlessInteractions, getFreePort } from '@gatehouse/testing'
import { Client, pkce } from '@gatehouse/oauth2'
import { exportJWK, generateKeyPair, type JWK } from 'jose'
import Provider from 'oidc-provider'

/** Who signs in at the issuer. */
export interface IssuerAccount {
  readonly sub: string
  readonly email: string
  readonly emailVerified: boolean
  readonly name: string
}

/** A running issuer. */
export interface TestIdTokenIssuer {
  /** The issuer (`iss`), with `pathPrefix` when one was given. */
  readonly issuer: string
  /** The native app's client id (the `aud` of its tokens). */
  readonly clientId: string
  /** The issuer's private signing key (RS256, `kid` `issuer-key`). */
  readonly privateJwk: JWK
  /** Signs `account` in as the native app would; `nonce` is sent as is. */
  signIn(account: IssuerAccount, nonce?: string): Promise<{ idToken: string; accessToken: string }>
  stop(): Promise<void>
}

const REDIRECT_URI = 'http://127.0.0.1:1/native-app'

/**
 * Starts an issuer at `http://127.0.0.1:<port><pathPrefix>` (Azure's issuers have a tenant path).
 */
export async function startIdTokenIssuer(
  options: { readonly clientId?: string; readonly pathPrefix?: string } = {},
): Promise<TestIdTokenIssuer> {
  const port = await getFreePort()
  const prefix = options.pathPrefix ?? ''
  const issuer = `http://127.0.0.1:${String(port)}${prefix}`
  const clientId = options.clientId ?? 'native-app'
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  const privateJwk = {
    ...(await exportJWK(privateKey)),
    kid: 'issuer-key',
    alg: 'RS256',
    use: 'sig',
  }
  const accounts = new Map<string, IssuerAccount>()
  let current: IssuerAccount | undefined
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        redirect_uris: [REDIRECT_URI],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      },
    ],
    jwks: { keys: [privateJwk] },
    features: { devInteractions: { enabled: false } },
    scopes: ['openid', 'email', 'profile'],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    pkce: { required: () => true },
    // The ID token carries the user's claims, as native sign-in SDKs' tokens do.
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
        }),
      }
    },
  })
  addHeadlessInteractions(provider, {
    login: () => {
      if (current === undefined) throw new Error('no account signing in')
      accounts.set(current.sub, current)
      return current.sub
    },
  })
  const handler = provider.callback()
  const server: Server = createServer((req, res) => {
    if (prefix !== '' && req.url?.startsWith(prefix)) req.url = req.url.slice(prefix.length) || '/'
    void handler(req, res)
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  const app = await Client.discover(issuer, clientId, undefined, {
    redirect_uri: REDIRECT_URI,
    authScheme: 'request_body',
  })
  return {
    issuer,
    clientId,
    privateJwk,
    async signIn(account, nonce) {
      current = account
      const pair = pkce()
      const url = app.authCode.authorizeUrl({
        scope: 'openid email profile',
        state: 'native-state',
        ...(nonce === undefined ? {} : { nonce }),
        code_challenge: pair.code_challenge,
        code_challenge_method: 'S256',
      })
      const code = (await follow(url)).get('code')
      if (code === null) throw new Error('the issuer returned no code')
      const token = await app.authCode.getToken(code, { code_verifier: pair.code_verifier })
      const idToken = token.params.id_token
      if (typeof idToken !== 'string') throw new Error('the issuer returned no id_token')
      return { idToken, accessToken: token.token }
    },
    async stop() {
      server.closeAllConnections()
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve()
        }),
      )
    },
  }
}

/** Follows the authorization URL with a cookie jar to the redirect URI; its query. */
async function follow(url: string): Promise<URLSearchParams> {
  const jar = new Map<string, string>()
  let next = new URL(url)
  for (let hop = 0; hop < 20; hop++) {
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ')
    const response = await fetch(next, {
      redirect: 'manual',
      headers: cookie === '' ? {} : { cookie },
    })
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';')
      const eq = pair.indexOf('=')
      jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim())
    }
    await response.arrayBuffer()
    const location = response.headers.get('location')
    if (location === null) throw new Error(`authorization stopped at ${next.href}`)
    next = new URL(location, next)
    if (next.href.startsWith(REDIRECT_URI)) return next.searchParams
  }
  throw new Error('too many redirects')
}
