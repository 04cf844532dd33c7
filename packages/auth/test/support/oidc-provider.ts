/**
 * A real `oidc-provider` on a random loopback port playing Keycloak (its routes under the realm
 * URL's `/protocol/openid-connect/…`) and, through discovery, Google and LinkedIn (OIDC): ID tokens, UserInfo, and
 * headless login and consent. The test picks who logs in, and whether consent is denied.
 */
import type { Server } from 'node:http'
import { addHeadlessInteractions, getFreePort } from '@gatehouse/testing'
import Provider from 'oidc-provider'

/** An account of the fake identity provider. */
export interface OidcAccount {
  readonly sub: string
  readonly email: string
  readonly emailVerified: boolean
  readonly name: string
}

/** A running provider. */
export interface TestOidcProvider {
  /** The issuer: Keycloak's realm URL, Google's and LinkedIn's issuer. */
  readonly issuer: string
  readonly clients: Readonly<
    Record<'keycloak' | 'google' | 'linkedin_oidc', { id: string; secret: string }>
  >
  /** Who logs in next. */
  account: OidcAccount
  /** Deny consent on the next interaction. */
  deny: boolean
  stop(): Promise<void>
}

/**
 * Starts the provider; `redirectUri` is the auth server's `/callback`.
 */
export async function startOidcProvider(
  redirectUri: string,
  account: OidcAccount,
): Promise<TestOidcProvider> {
  const port = await getFreePort()
  const issuer = `http://127.0.0.1:${String(port)}`
  const accounts = new Map<string, OidcAccount>()
  const clients = {
    keycloak: { id: 'gatehouse-keycloak', secret: 'keycloak-secret-0123456789-0123456789' },
    google: { id: 'gatehouse-google', secret: 'google-secret-0123456789-0123456789' },
    linkedin_oidc: { id: 'gatehouse-linkedin', secret: 'linkedin-secret-0123456789-01234567' },
  }
  const provider = new Provider(issuer, {
    clients: Object.values(clients).map((c) => ({
      client_id: c.id,
      client_secret: c.secret,
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    })),
    routes: {
      authorization: '/protocol/openid-connect/auth',
      token: '/protocol/openid-connect/token',
      userinfo: '/protocol/openid-connect/userinfo',
      jwks: '/protocol/openid-connect/certs',
    },
    features: { devInteractions: { enabled: false } },
    scopes: ['openid', 'offline_access', 'email', 'profile'],
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name', 'preferred_username'],
    },
    // The auth server sends PKCE to Keycloak and Google (a request without it is refused), never
    // to LinkedIn (upstream sends none).
    pkce: { required: (_ctx, client) => client.clientId !== clients.linkedin_oidc.id },
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
          locale: 'en',
        }),
      }
    },
  })
  const state: TestOidcProvider = {
    issuer,
    clients,
    account,
    deny: false,
    async stop() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve()
        })
      })
    },
  }

  // Headless interactions: log in as `state.account`, then grant (or deny) what is asked.
  addHeadlessInteractions(provider, {
    login: () => {
      accounts.set(state.account.sub, state.account)
      return state.account.sub
    },
    deny: () => {
      if (!state.deny) return false
      state.deny = false
      return true
    },
  })

  const server: Server = provider.listen(port, '127.0.0.1')
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve)
    server.once('error', reject)
  })
  return state
}
