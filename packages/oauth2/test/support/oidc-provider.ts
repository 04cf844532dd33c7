/**
 * A real `oidc-provider` authorization server on a random loopback port, in memory, for the
 * integration tests (reference §5): authorization code + PKCE with headless interactions, refresh
 * tokens, client credentials, revocation, introspection, UserInfo, the JWT bearer grant (via
 * `registerGrantType`) and clients for client_secret_basic, client_secret_post and private_key_jwt.
 */
import type { Server } from 'node:http'
import { getFreePort } from '@gatehouse/testing'
import { exportJWK, generateKeyPair, jwtVerify, type CryptoKey, type JWK } from 'jose'
import Provider, { type TokenEndpointGrantContext } from 'oidc-provider'

export const REDIRECT_URI = 'http://127.0.0.1:1/callback'
export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer'
/** A secret with characters that need RFC 6749 §2.3.1 form-encoding in HTTP Basic. */
export const WEB_SECRET = 'a+b%2Fc d:e-web-secret-0123456789'

export interface TestProvider {
  issuer: string
  provider: Provider
  /** ES256 private key registered (public part) for the `jwt-client` client. */
  clientKey: JWK
  /** Key the JWT bearer grant trusts for assertions (issuer `trusted-issuer`). */
  assertionKey: CryptoKey
  stop(): Promise<void>
}

export async function startProvider(): Promise<TestProvider> {
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

  const provider = new Provider(issuer, {
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
        client_id: 'jwt-client',
        redirect_uris: [],
        grant_types: ['client_credentials', JWT_BEARER],
        response_types: [],
        token_endpoint_auth_method: 'private_key_jwt',
        token_endpoint_auth_signing_alg: 'ES256',
        jwks: { keys: [clientPublic] },
        scope: 'api',
      },
    ],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      revocation: { enabled: true },
      introspection: { enabled: true },
    },
    scopes: ['openid', 'offline_access', 'api'],
    claims: { openid: ['sub'], email: ['email'] },
    pkce: { required: () => true },
    findAccount: (_ctx, sub) => ({
      accountId: sub,
      claims: () => ({ sub, email: `${sub}@example.com` }),
    }),
  })

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
      const token = new ctx.oidc.provider.ClientCredentials({
        client: ctx.oidc.client,
        scope: 'api',
      })
      ctx.body = {
        access_token: await token.save(),
        token_type: 'Bearer',
        expires_in: token.expiration,
        scope: 'api',
      }
    },
    ['assertion', 'scope'],
  )

  // Headless interactions: log in as `alice` and grant whatever is asked.
  provider.use(async (ctx, next) => {
    if (!ctx.path.startsWith('/interaction/')) {
      await next()
      return
    }
    const details = await provider.interactionDetails(ctx.req, ctx.res)
    ctx.respond = false
    if (details.prompt.name === 'login') {
      await provider.interactionFinished(
        ctx.req,
        ctx.res,
        { login: { accountId: 'alice' } },
        { mergeWithLastSubmission: false },
      )
      return
    }
    const grant =
      details.grantId === undefined
        ? new provider.Grant({
            accountId: details.session?.accountId,
            clientId: String(details.params.client_id),
          })
        : await provider.Grant.find(details.grantId)
    if (grant === undefined) throw new Error('grant not found')
    const missing = details.prompt.details as {
      missingOIDCScope?: string[]
      missingOIDCClaims?: string[]
      missingResourceScopes?: Record<string, string[]>
    }
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '))
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims)
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(' '))
    }
    const grantId = await grant.save()
    await provider.interactionFinished(
      ctx.req,
      ctx.res,
      { consent: { grantId } },
      { mergeWithLastSubmission: true },
    )
  })

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

/**
 * Drives a browser through the authorization URL: follows redirects with a cookie jar until the
 * redirect URI, and returns the callback's query parameters.
 */
export async function authorize(url: string): Promise<URLSearchParams> {
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
      const name = pair.slice(0, eq).trim()
      const value = pair.slice(eq + 1).trim()
      if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') jar.delete(name)
      else jar.set(name, value)
    }
    await response.arrayBuffer()
    const location = response.headers.get('location')
    if (location === null)
      throw new Error(
        `authorization stopped at ${next.href} with status ${String(response.status)}`,
      )
    next = new URL(location, next)
    if (next.href.startsWith(REDIRECT_URI)) return next.searchParams
  }
  throw new Error('too many redirects during authorization')
}
