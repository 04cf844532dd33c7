/**
 * ONE generic fake OAuth provider, parameterised by a per-provider {@link ProviderDescription}
 * (`provider-descriptions.ts`): a loopback HTTP server that speaks that provider's authorize,
 * token and user-info API (§7 of the reference): its paths, its client authentication, its
 * token-response shape and its profile JSON. The user who "logs in" and what goes wrong (denied
 * consent, 5xx, malformed profile) are chosen by the test before each journey.
 */
import { createHash, createHmac, randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose'
import OAuth from 'oauth-1.0a'

/** The account that signs in at the fake. */
export interface FakeAccount {
  readonly id: string
  readonly email: string
  readonly emailVerified: boolean
  readonly name: string
  readonly avatar: string
}

/** What a user-info route sees. */
export interface UserinfoRequest {
  readonly account: FakeAccount
  readonly accessToken: string
  readonly query: URLSearchParams
  readonly headers: IncomingMessage['headers']
}

/** A reply: status and JSON body (or text). */
export interface FakeReply {
  readonly status?: number
  readonly body: unknown
}

/** How one provider's API looks. */
export interface ProviderDescription {
  readonly name: string
  /** `EXTERNAL_<P>_URL` for a fake at `origin`. */
  url(origin: string): string
  /** Path of the authorization endpoint (OAuth 1.0a: the authenticate page). */
  readonly authorizePath: string
  /** Path of the token endpoint. */
  readonly tokenPath: string
  /** How the client authenticates at the token endpoint. @default either */
  readonly clientAuth?: 'basic' | 'body'
  /** Answer the authorization with an auto-posting HTML form (Apple's `form_post`). */
  readonly formPost?: boolean
  /** Sign an `id_token` into the token response, with this issuer (the fake's origin given). */
  readonly idTokenIssuer?: (origin: string) => string
  /** Claims of the `id_token` beside `iss`, `sub`, `aud`, `exp`, `iat`, `nonce`. */
  readonly idTokenClaims?: (account: FakeAccount) => Record<string, unknown>
  /** OIDC discovery document and JWKS paths (Apple). */
  readonly discovery?: { readonly jwksPath: string }
  /** JWKS path without discovery (Azure). */
  readonly jwksPath?: string
  /** Extra token-response fields (WorkOS's `profile`). */
  readonly tokenExtras?: (account: FakeAccount) => Record<string, unknown>
  /** How the token endpoint refuses (Slack: 200 `{ok:false}`). @default 400 invalid_grant */
  readonly tokenError?: () => FakeReply
  /** User-info routes (`GET <path>`), answering the signed-in account's profile. */
  readonly userinfo: Readonly<Record<string, (request: UserinfoRequest) => FakeReply>>
  /** OAuth 1.0a (Twitter): request token, authenticate, access token, signed requests. */
  readonly oauth1?: { readonly requestTokenPath: string; readonly accessTokenPath: string }
  /**
   * The provider supports PKCE (S256): the fake then requires `code_challenge` at the
   * authorization endpoint and the matching `code_verifier` at the token endpoint; without it, it
   * refuses both (as Slack does for an app that is not a public client).
   */
  readonly pkce?: boolean
}

/** What goes wrong on the next journey. */
export type FakeFault = 'deny' | 'token-5xx' | 'userinfo-5xx' | 'malformed-userinfo'

interface Grant {
  readonly account: FakeAccount
  readonly nonce: string
  readonly redirectUri: string
  /** The S256 `code_challenge` of the authorization request, `''` without PKCE. */
  readonly codeChallenge: string
}

/** A running fake provider. */
export class FakeProvider {
  readonly description: ProviderDescription
  readonly clientId: string
  readonly secret: string
  origin = ''
  /** Who signs in next. */
  account: FakeAccount
  /** What fails next (reset after one journey). */
  fault: FakeFault | undefined
  /** Requests seen, as `METHOD path`. */
  readonly seen: string[] = []
  /** The query of each authorization request, in order. */
  readonly authorizations: URLSearchParams[] = []
  /** Token requests refused for a missing or wrong `code_verifier`. */
  pkceRefusals = 0
  readonly #codes = new Map<string, Grant>()
  readonly #tokens = new Map<string, FakeAccount>()
  /** OAuth 1.0a: request token → its secret, callback and (once authorized) verifier. */
  readonly #requestTokens = new Map<
    string,
    { secret: string; callback: string; verifier?: string }
  >()
  readonly #accessSecrets = new Map<string, string>()
  #server: Server | undefined
  #key: CryptoKey | undefined
  #jwk: JWK | undefined

  constructor(description: ProviderDescription, account: FakeAccount) {
    this.description = description
    this.clientId = `${description.name}-client`
    this.secret = `${description.name}-secret-0123456789`
    this.account = account
  }

  /** Starts the fake on a random loopback port. */
  static async start(description: ProviderDescription, account: FakeAccount) {
    const fake = new FakeProvider(description, account)
    const pair = await generateKeyPair('RS256', { extractable: true })
    fake.#key = pair.privateKey
    fake.#jwk = { ...(await exportJWK(pair.publicKey)), kid: 'fake-1', alg: 'RS256', use: 'sig' }
    const server = createServer((req, res) => {
      fake.#handle(req, res).catch((error: unknown) => {
        res.writeHead(599).end(String(error))
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    fake.#server = server
    fake.origin = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`
    return fake
  }

  /** The `EXTERNAL_<P>_*` variables of this fake, for a server whose callback is `redirectUri`. */
  env(redirectUri: string): Record<string, string> {
    const p = `AUTHSVC_EXTERNAL_${this.description.name.toUpperCase()}`
    return {
      [`${p}_ENABLED`]: 'true',
      [`${p}_CLIENT_ID`]: this.clientId,
      [`${p}_SECRET`]: this.secret,
      [`${p}_REDIRECT_URI`]: redirectUri,
      [`${p}_URL`]: this.description.url(this.origin),
    }
  }

  async stop(): Promise<void> {
    const server = this.#server
    if (server === undefined) return
    server.closeAllConnections()
    await new Promise<void>((resolve) => {
      server.close(() => {
        resolve()
      })
    })
  }

  #takeFault(fault: FakeFault): boolean {
    if (this.fault !== fault) return false
    this.fault = undefined
    return true
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.origin)
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const body = Buffer.concat(chunks).toString()
    this.seen.push(`${req.method ?? ''} ${url.pathname}`)
    const d = this.description
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value))
    }
    if (d.oauth1 !== undefined) {
      this.#oauth1(req, res, url, body)
      return
    }
    if (d.discovery !== undefined && url.pathname === '/.well-known/openid-configuration') {
      json(200, {
        issuer: this.origin,
        authorization_endpoint: `${this.origin}${d.authorizePath}`,
        token_endpoint: `${this.origin}${d.tokenPath}`,
        jwks_uri: `${this.origin}${d.discovery.jwksPath}`,
        response_types_supported: ['code'],
        response_modes_supported: ['query', 'fragment', 'form_post'],
        subject_types_supported: ['pairwise'],
        id_token_signing_alg_values_supported: ['RS256'],
        token_endpoint_auth_methods_supported: ['client_secret_post'],
      })
      return
    }
    if (url.pathname === (d.discovery?.jwksPath ?? d.jwksPath)) {
      json(200, { keys: [this.#jwk] })
      return
    }
    if (req.method === 'GET' && url.pathname === d.authorizePath) {
      this.#authorize(res, url)
      return
    }
    if (req.method === 'POST' && url.pathname === d.tokenPath) {
      await this.#token(req, res, new URLSearchParams(body))
      return
    }
    const route = d.userinfo[url.pathname]
    if (req.method === 'GET' && route !== undefined) {
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? ''
      const account = this.#tokens.get(token)
      if (account === undefined) {
        json(401, { error: 'invalid_token' })
        return
      }
      if (this.#takeFault('userinfo-5xx')) {
        json(503, { error: 'temporarily_unavailable' })
        return
      }
      if (this.#takeFault('malformed-userinfo')) {
        json(200, { unexpected: true })
        return
      }
      const reply = route({
        account,
        accessToken: token,
        query: url.searchParams,
        headers: req.headers,
      })
      json(reply.status ?? 200, reply.body)
      return
    }
    json(404, { error: 'not_found', path: url.pathname })
  }

  #authorize(res: ServerResponse, url: URL): void {
    const q = url.searchParams
    this.authorizations.push(new URLSearchParams(q))
    const redirectUri = q.get('redirect_uri') ?? ''
    const state = q.get('state') ?? ''
    const codeChallenge = q.get('code_challenge') ?? ''
    const pkceOk =
      this.description.pkce === true
        ? /^[A-Za-z0-9_-]{43}$/.test(codeChallenge) && q.get('code_challenge_method') === 'S256'
        : codeChallenge === '' && !q.has('code_challenge_method')
    if (
      q.get('client_id') !== this.clientId ||
      redirectUri === '' ||
      q.get('response_type') !== 'code' ||
      !pkceOk
    ) {
      res.writeHead(400).end('bad authorization request')
      return
    }
    const back = new URL(redirectUri)
    const fields: Record<string, string> = { state }
    if (this.#takeFault('deny')) {
      fields.error = 'access_denied'
      fields.error_description = 'The user denied the request'
    } else {
      const code = randomUUID()
      this.#codes.set(code, {
        account: this.account,
        nonce: q.get('nonce') ?? '',
        redirectUri,
        codeChallenge,
      })
      fields.code = code
      if (this.description.formPost === true) {
        const [first = '', ...rest] = this.account.name.split(' ')
        fields.user = JSON.stringify({
          name: { firstName: first, lastName: rest.join(' ') },
          email: this.account.email,
        })
      }
    }
    if (this.description.formPost === true) {
      const inputs = Object.entries(fields)
        .map(([k, v]) => `<input type="hidden" name="${k}" value="${v.replace(/"/g, '&quot;')}">`)
        .join('')
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(
          `<html><body onload="document.forms[0].submit()"><form method="post" action="${back.href}">${inputs}</form></body></html>`,
        )
      return
    }
    for (const [k, v] of Object.entries(fields)) back.searchParams.set(k, v)
    res.writeHead(302, { location: back.href }).end()
  }

  async #token(req: IncomingMessage, res: ServerResponse, form: URLSearchParams): Promise<void> {
    const d = this.description
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value))
    }
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1]
    const [basicId, basicSecret] =
      basic === undefined
        ? []
        : Buffer.from(basic, 'base64')
            .toString()
            .split(':')
            .map((s) => decodeURIComponent(s))
    const id = basicId ?? form.get('client_id')
    const secret = basicSecret ?? form.get('client_secret')
    const authOk =
      id === this.clientId &&
      secret === this.secret &&
      (d.clientAuth === undefined || (d.clientAuth === 'basic') === (basic !== undefined))
    if (!authOk) {
      json(401, { error: 'invalid_client' })
      return
    }
    if (this.#takeFault('token-5xx')) {
      json(502, { error: 'bad gateway' })
      return
    }
    const grant = this.#codes.get(form.get('code') ?? '')
    this.#codes.delete(form.get('code') ?? '')
    const verifier = form.get('code_verifier')
    const pkceOk =
      grant === undefined ||
      (grant.codeChallenge === ''
        ? verifier === null
        : verifier !== null &&
          createHash('sha256').update(verifier).digest('base64url') === grant.codeChallenge)
    if (!pkceOk) this.pkceRefusals += 1
    if (
      form.get('grant_type') !== 'authorization_code' ||
      grant === undefined ||
      form.get('redirect_uri') !== grant.redirectUri ||
      !pkceOk
    ) {
      const refusal = d.tokenError?.() ?? { status: 400, body: { error: 'invalid_grant' } }
      json(refusal.status ?? 200, refusal.body)
      return
    }
    const accessToken = `at-${randomUUID()}`
    this.#tokens.set(accessToken, grant.account)
    const reply: Record<string, unknown> = {
      access_token: accessToken,
      token_type: 'bearer',
      expires_in: 3600,
      refresh_token: `rt-${randomUUID()}`,
      ...d.tokenExtras?.(grant.account),
    }
    if (d.idTokenIssuer !== undefined) {
      const now = Math.floor(Date.now() / 1000)
      reply.id_token = await new SignJWT({
        ...d.idTokenClaims?.(grant.account),
        ...(grant.nonce === '' ? {} : { nonce: grant.nonce }),
      })
        .setProtectedHeader({ alg: 'RS256', kid: 'fake-1' })
        .setIssuer(d.idTokenIssuer(this.origin))
        .setSubject(grant.account.id)
        .setAudience(this.clientId)
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .sign(this.#key as CryptoKey)
    }
    json(200, reply)
  }

  /** Twitter's OAuth 1.0a endpoints, checking every signature. */
  #oauth1(req: IncomingMessage, res: ServerResponse, url: URL, body: string): void {
    const d = this.description
    const o = d.oauth1
    if (o === undefined) return
    const oauth = new OAuth({
      consumer: { key: this.clientId, secret: this.secret },
      signature_method: 'HMAC-SHA1',
      hash_function: (base, key) => createHmac('sha1', key).update(base).digest('base64'),
    })
    const header = req.headers.authorization ?? ''
    const params = Object.fromEntries(
      [...header.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [
        m[1] ?? '',
        decodeURIComponent(m[2] ?? ''),
      ]),
    )
    const form = Object.fromEntries(new URLSearchParams(body))
    const verify = (tokenSecret: string): boolean => {
      const { oauth_signature: signature, ...oauthData } = params
      const expected = oauth.getSignature(
        { url: url.href, method: req.method ?? 'GET', data: { ...form } },
        tokenSecret,
        oauthData as unknown as OAuth.Data,
      )
      return params.oauth_consumer_key === this.clientId && signature === expected
    }
    const text = (status: number, value: string) => {
      res.writeHead(status, { 'content-type': 'text/plain' }).end(value)
    }
    if (req.method === 'POST' && url.pathname === o.requestTokenPath) {
      if (!verify('')) {
        text(401, 'bad signature')
        return
      }
      const token = `rq-${randomUUID()}`
      const secret = `rqs-${randomUUID()}`
      this.#requestTokens.set(token, {
        secret,
        callback: params.oauth_callback ?? form.oauth_callback ?? '',
      })
      text(200, `oauth_token=${token}&oauth_token_secret=${secret}&oauth_callback_confirmed=true`)
      return
    }
    if (req.method === 'GET' && url.pathname === d.authorizePath) {
      const token = url.searchParams.get('oauth_token') ?? ''
      const pending = this.#requestTokens.get(token)
      if (pending === undefined) {
        text(400, 'unknown request token')
        return
      }
      const back = new URL(pending.callback)
      if (this.#takeFault('deny')) {
        back.searchParams.set('denied', token)
      } else {
        pending.verifier = `v-${randomUUID()}`
        back.searchParams.set('oauth_token', token)
        back.searchParams.set('oauth_verifier', pending.verifier)
      }
      res.writeHead(302, { location: back.href }).end()
      return
    }
    if (req.method === 'POST' && url.pathname === o.accessTokenPath) {
      const pending = this.#requestTokens.get(params.oauth_token ?? '')
      if (
        pending === undefined ||
        !verify(pending.secret) ||
        form.oauth_verifier !== pending.verifier
      ) {
        text(401, 'invalid request token or verifier')
        return
      }
      this.#requestTokens.delete(params.oauth_token ?? '')
      const token = `acc-${randomUUID()}`
      const secret = `accs-${randomUUID()}`
      this.#tokens.set(token, this.account)
      this.#accessSecrets.set(token, secret)
      text(200, `oauth_token=${token}&oauth_token_secret=${secret}&user_id=${this.account.id}`)
      return
    }
    const route = d.userinfo[url.pathname]
    if (req.method === 'GET' && route !== undefined) {
      const token = params.oauth_token ?? ''
      const account = this.#tokens.get(token)
      if (account === undefined || !verify(this.#accessSecrets.get(token) ?? '')) {
        text(401, 'bad token or signature')
        return
      }
      const reply = route({
        account,
        accessToken: token,
        query: url.searchParams,
        headers: req.headers,
      })
      res
        .writeHead(reply.status ?? 200, { 'content-type': 'application/json' })
        .end(JSON.stringify(reply.body))
      return
    }
    text(404, 'not found')
  }
}
