/**
 * A real `oidc-provider` authorization server on a random loopback port, in memory, for the
 * integration tests (reference §5): authorization code + PKCE with headless interactions, refresh
 * tokens, client credentials, revocation, introspection, UserInfo, the JWT bearer grant (via
 * `registerGrantType`) and clients for client_secret_basic, client_secret_post and private_key_jwt;
 * DPoP with server nonces required, pushed authorization requests, the device flow (headless user
 * approval or denial) and a token exchange grant (via `registerGrantType`).
 */
import { randomBytes } from 'node:crypto'
import type { Server } from 'node:http'
import { addHeadlessInteractions, getFreePort } from '@gatehouse/testing'
import { exportJWK, generateKeyPair, jwtVerify, type CryptoKey, type JWK } from 'jose'
import Provider, {
  errors,
  type ClientMetadata,
  type Configuration,
  type TokenEndpointGrantContext,
} from 'oidc-provider'

export const REDIRECT_URI = 'http://127.0.0.1:1/callback'
export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer'
export const DEVICE_CODE = 'urn:ietf:params:oauth:grant-type:device_code'
export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token'
/** A secret with characters that need RFC 6749 §2.3.1 form-encoding in HTTP Basic. */
export const WEB_SECRET = 'a+b%2Fc d:e-web-secret-0123456789'
/** Secrets of the clients added for DPoP, PAR and token exchange. */
export const DPOP_SECRET = 'dpop-secret-0123456789-0123456789'
export const PAR_SECRET = 'par-secret-0123456789-01234567890'
export const GATEWAY_SECRET = 'gateway-secret-0123456789-0123456'
/** Lifetime of device codes, seconds (short, so a journey that never completes ends soon). */
export const DEVICE_CODE_TTL = 30

export interface TestProvider {
  issuer: string
  provider: Provider
  /** ES256 private key registered (public part) for the `jwt-client` client. */
  clientKey: JWK
  /** Key the JWT bearer grant trusts for assertions (issuer `trusted-issuer`). */
  assertionKey: CryptoKey
  /** Makes the next interaction end with `access_denied`, as a user refusing consent. */
  denyNext(): void
  stop(): Promise<void>
}

/** Options of {@link startProvider}. */
export interface StartProviderOptions {
  /**
   * A resource server (RFC 8707 resource indicator) tokens may be asked for, with scope `api`;
   * any other `resource` is `invalid_target`. @default none
   */
  readonly resourceServer?: string
  /** More clients, for the features a test file checks. @default none */
  readonly clients?: readonly ClientMetadata[]
  /**
   * Changes to the configuration (features, extra metadata, ...), applied last.
   * @default none
   */
  readonly configure?: (configuration: Configuration) => void
  /**
   * Adds middleware or listeners before the server listens (Koa composes its middleware then:
   * `provider.use` afterwards has no effect). @default none
   */
  readonly setup?: (provider: Provider) => void
}

export async function startProvider(options: StartProviderOptions = {}): Promise<TestProvider> {
  const port = await getFreePort()
  const issuer = `http://127.0.0.1:${String(port)}`
  const clientPair = await generateKeyPair('ES256', { extractable: true })
  const assertionPair = await generateKeyPair('ES256', { extractable: true })
  const clientPublic = {
    ...(await exportJWK(clientPair.publicKey)),
    kid: 'client-key-1',
    alg: 'ES256',
    use: 'sig',
  }

  const configuration: Configuration = {
    clients: [
      {
        client_id: 'web-app',
        client_secret: WEB_SECRET,
        redirect_uris: [REDIRECT_URI],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
      {
        client_id: 'post-client',
        client_secret: 'post-secret-0123456789-0123456789',
        redirect_uris: [],
        grant_types: ['client_credentials'],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_post',
        scope: 'api',
      },
      {
        client_id: 'service',
        client_secret: 'service-secret-0123456789-012345',
        redirect_uris: [],
        grant_types: ['client_credentials'],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_basic',
        scope: 'api',
      },
      {
        client_id: 'dpop-app',
        client_secret: DPOP_SECRET,
        redirect_uris: [REDIRECT_URI],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
        dpop_bound_access_tokens: true,
      },
      {
        client_id: 'par-app',
        client_secret: PAR_SECRET,
        redirect_uris: [REDIRECT_URI],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
        require_pushed_authorization_requests: true,
      },
      {
        client_id: 'tv-app',
        redirect_uris: [],
        grant_types: [DEVICE_CODE, 'refresh_token'],
        response_types: [],
        token_endpoint_auth_method: 'none',
      },
      {
        client_id: 'gateway',
        client_secret: GATEWAY_SECRET,
        redirect_uris: [],
        grant_types: [TOKEN_EXCHANGE],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_basic',
        scope: 'api',
      },
      {
        client_id: 'jwt-client',
        redirect_uris: [],
        grant_types: ['client_credentials', JWT_BEARER],
        response_types: [],
        token_endpoint_auth_method: 'private_key_jwt',
        token_endpoint_auth_signing_alg: 'ES256',
        jwks: { keys: [clientPublic] },
        scope: 'api',
      },
      ...(options.clients ?? []),
    ],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      revocation: { enabled: true },
      introspection: { enabled: true },
      // Every DPoP proof must carry a server nonce: each journey meets use_dpop_nonce.
      dPoP: { enabled: true, nonceSecret: randomBytes(32), requireNonce: () => true },
      pushedAuthorizationRequests: { enabled: true },
      deviceFlow: { enabled: true },
      resourceIndicators: {
        enabled: true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== options.resourceServer) throw new errors.InvalidTarget()
          return { scope: 'api', accessTokenFormat: 'opaque' }
        },
      },
    },
    ttl: { DeviceCode: DEVICE_CODE_TTL },
    scopes: ['openid', 'offline_access', 'api'],
    claims: { openid: ['sub'], email: ['email'] },
    pkce: { required: () => true },
    findAccount: (_ctx, sub) => ({
      accountId: sub,
      claims: () => ({ sub, email: `${sub}@example.com` }),
    }),
  }
  options.configure?.(configuration)
  const provider = new Provider(issuer, configuration)

  /** Answers a registered grant with a client credentials token (scope `api`) of the client. */
  async function issueApiToken(ctx: TokenEndpointGrantContext, extra: object = {}) {
    const token = new ctx.oidc.provider.ClientCredentials({ client: ctx.oidc.client, scope: 'api' })
    ctx.body = {
      access_token: await token.save(),
      ...extra,
      token_type: 'Bearer',
      expires_in: token.expiration,
      scope: 'api',
    }
  }

  provider.registerGrantType(
    JWT_BEARER,
    async (ctx: TokenEndpointGrantContext) => {
      const assertion = String(ctx.oidc.params.assertion)
      try {
        await jwtVerify(assertion, assertionPair.publicKey, {
          issuer: 'trusted-issuer',
          audience: issuer,
        })
      } catch {
        ctx.status = 400
        ctx.body = { error: 'invalid_grant', error_description: 'assertion rejected' }
        return
      }
      await issueApiToken(ctx)
    },
    ['assertion', 'scope'],
  )

  // RFC 8693 through registerGrantType: the subject must be an active access token of this
  // server; the issued token is a client credentials token of the exchanging client.
  provider.registerGrantType(
    TOKEN_EXCHANGE,
    async (ctx: TokenEndpointGrantContext) => {
      const params = ctx.oidc.params as Record<string, string | undefined>
      const refuse = (error: string, description: string) => {
        ctx.status = 400
        ctx.body = { error, error_description: description }
      }
      if (params.subject_token_type !== ACCESS_TOKEN_TYPE) {
        refuse('invalid_request', 'unsupported subject_token_type')
        return
      }
      const subject = await ctx.oidc.provider.AccessToken.find(String(params.subject_token))
      if (subject === undefined) {
        refuse('invalid_grant', 'subject_token is not an active access token')
        return
      }
      if (params.audience !== 'billing') {
        refuse('invalid_target', 'unknown audience')
        return
      }
      await issueApiToken(ctx, { issued_token_type: ACCESS_TOKEN_TYPE })
    },
    [
      'subject_token',
      'subject_token_type',
      'actor_token',
      'actor_token_type',
      'requested_token_type',
      'audience',
    ],
  )

  // Headless interactions: log in as `alice` and grant whatever is asked (or deny, when told).
  let deny = false
  addHeadlessInteractions(provider, {
    login: () => 'alice',
    deny: () => {
      const answer = deny
      deny = false
      return answer
    },
  })

  options.setup?.(provider)
  const server: Server = provider.listen(port, '127.0.0.1')
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve)
    server.once('error', reject)
  })
  return {
    issuer,
    provider,
    clientKey: { ...(await exportJWK(clientPair.privateKey)), kid: 'client-key-1' },
    assertionKey: assertionPair.privateKey,
    denyNext() {
      deny = true
    },
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

/** A page a {@link Browser} stopped at: not a redirect, or a redirect to the redirect URI. */
export interface Page {
  readonly url: URL
  readonly status: number
  readonly body: string
}

/**
 * A headless browser: a cookie jar and redirect following (every hop a GET), enough for
 * oidc-provider's authorization, interaction, device and logout pages.
 */
export class Browser {
  readonly #jar = new Map<string, string>()

  /** Sends the request, then follows redirects until a page or the redirect URI. */
  async open(url: string | URL, form?: Record<string, string>): Promise<Page> {
    let next = new URL(url)
    let body = form === undefined ? undefined : new URLSearchParams(form).toString()
    for (let hop = 0; hop < 20; hop++) {
      const cookie = [...this.#jar].map(([k, v]) => `${k}=${v}`).join('; ')
      const response = await fetch(next, {
        method: body === undefined ? 'GET' : 'POST',
        redirect: 'manual',
        headers: {
          ...(cookie === '' ? {} : { cookie }),
          ...(body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
        },
        body,
      })
      for (const line of response.headers.getSetCookie()) {
        const [pair = ''] = line.split(';')
        const eq = pair.indexOf('=')
        const name = pair.slice(0, eq).trim()
        const value = pair.slice(eq + 1).trim()
        if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') this.#jar.delete(name)
        else this.#jar.set(name, value)
      }
      const text = await response.text()
      const location = response.headers.get('location')
      if (location === null) return { url: next, status: response.status, body: text }
      next = new URL(location, next)
      body = undefined
      if (next.href.startsWith(REDIRECT_URI))
        return { url: next, status: response.status, body: text }
    }
    throw new Error(`too many redirects from ${String(url)}`)
  }
}

/**
 * Drives a browser through the authorization URL: follows redirects with a cookie jar until the
 * redirect URI, and returns the callback's query parameters.
 */
export async function authorize(url: string): Promise<URLSearchParams> {
  const page = await new Browser().open(url)
  if (!page.url.href.startsWith(REDIRECT_URI)) {
    throw new Error(`authorization stopped at ${page.url.href} with status ${String(page.status)}`)
  }
  return page.url.searchParams
}

/**
 * Drives a browser through an authorization URL with `response_mode=form_post`: the server answers
 * with a page whose form posts the response to the redirect URI; returns that form's fields, as
 * the client's callback would receive them in its POST body.
 */
export async function authorizeFormPost(url: string): Promise<URLSearchParams> {
  const page = await new Browser().open(url)
  if (!page.body.includes(`action="${REDIRECT_URI}"`)) {
    throw new Error(`no form_post page at ${page.url.href} (status ${String(page.status)})`)
  }
  const unescape = (value: string) =>
    value
      .replaceAll('&quot;', '"')
      .replaceAll('&#39;', "'")
      .replaceAll('&lt;', '<')
      .replaceAll('&gt;', '>')
      .replaceAll('&amp;', '&')
  const fields = new URLSearchParams()
  for (const [, name = '', value = ''] of page.body.matchAll(
    /<input type="hidden" name="(\w+)" value="([^"]*)"\/>/g,
  )) {
    fields.append(name, unescape(value))
  }
  return fields
}

/**
 * Plays the user on the second device of the device flow: opens `verification_uri_complete`,
 * confirms the code (or aborts it), logs in as `alice` and consents through the headless
 * interactions. Returns the last page's text.
 */
export async function answerDevice(
  verificationUriComplete: string,
  answer: 'approve' | 'deny',
): Promise<string> {
  const browser = new Browser()
  // The page posts the code with a CSRF token (`xsrf`) bound to the session cookie.
  const form = await browser.open(verificationUriComplete)
  const fields = Object.fromEntries(
    [...form.body.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)"/g)].map((m) => [
      m[1] ?? '',
      m[2] ?? '',
    ]),
  )
  if (fields.xsrf === undefined || fields.user_code === undefined) {
    throw new Error(`no device form at ${verificationUriComplete}: ${form.body.slice(0, 200)}`)
  }
  const action = new URL('/device', verificationUriComplete)
  const decision: Record<string, string> =
    answer === 'approve' ? { confirm: 'yes' } : { abort: 'yes' }
  const page = await browser.open(action, { ...fields, ...decision })
  return page.body
}
