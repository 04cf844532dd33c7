/**
 * Custom OAuth 2.0 and OIDC providers at run time (upstream `loadCustomProvider` and
 * `provider/custom_oauth.go`): `custom:<name>` in `/authorize` and `/callback` and, for OIDC
 * ones, in the `id_token` grant. Built from the stored row: OAuth 2.0 ones from their endpoints,
 * OIDC ones from the discovery document checked and kept when they were registered. Their
 * requests go through the SSRF-guarded transport (`security/url-guard.ts`).
 *
 * @module
 */
import { Client, type FetchLike } from '@gatehouse/oauth2'
import type { Clock } from '../clock.js'
import type { Settings } from '../conf/settings.js'
import type { SecretBox } from '../crypto/secret-box.js'
import { BadRequestError, InternalServerError } from '../errors.js'
import { findCustomProvider, type CustomProvider } from '../models/custom-provider.js'
import type { JsonObject } from '../models/json.js'
import type { UrlGuardOptions } from '../security/url-guard.js'
import type { Queryable } from '../storage/db.js'
import { OAuth2Provider, profileClaims, verifiedIdToken, type UserApi } from './base.js'
import type { CustomIdTokenIssuers, IdTokenIssuer } from './id-token.js'
import type {
  OAuthProvider,
  ProviderEmail,
  ProviderTokens,
  ProviderUserData,
} from './oauth-provider.js'

/** What the custom providers are read and called with. */
export interface CustomProvidersOptions {
  readonly settings: Settings
  readonly db: Queryable
  readonly clock: Clock
  /** Seals client secrets; `undefined` when no key is configured. */
  readonly box: SecretBox | undefined
  /** The transport of every call to a custom provider (the guarded one in production). */
  readonly fetch: FetchLike | undefined
  /** How registered URLs are checked (`SECURITY_ALLOW_PRIVATE_URLS`, the resolver). */
  readonly guard: UrlGuardOptions
}

/** A string claim, `undefined` when absent or not a non-empty string. */
function text(claims: JsonObject, key: string): string | undefined {
  const value = claims[key]
  if (typeof value === 'number') return String(value)
  return typeof value === 'string' && value !== '' ? value : undefined
}

/**
 * The claims after the attribute mapping (upstream `applyAttributeMapping`): each target gets the
 * claim a string names, or the literal value given otherwise. Gatehouse reads the source from
 * every claim the provider sent (upstream only from the ones its `Claims` type knows).
 */
export function mappedClaims(raw: JsonObject, mapping: JsonObject): JsonObject {
  const out: JsonObject = { ...raw }
  for (const [target, source] of Object.entries(mapping)) {
    if (typeof source === 'string') {
      if (Object.hasOwn(raw, source)) out[target] = raw[source] ?? null
    } else {
      out[target] = source
    }
  }
  return out
}

/**
 * The user a custom provider's claims name: `sub` (or `id`), the email with `email_verified`,
 * the profile claims, and the allow-listed claims as `custom_claims`.
 */
export function customUserData(provider: CustomProvider, raw: JsonObject): ProviderUserData {
  const claims = mappedClaims(raw, provider.attributeMapping)
  const sub = text(claims, 'sub') ?? text(claims, 'id') ?? ''
  const email = text(claims, 'email')
  const verified = claims.email_verified === true || claims.email_verified === 'true'
  const emails: ProviderEmail[] = email === undefined ? [] : [{ email, verified, primary: true }]
  const custom: JsonObject = {}
  for (const key of provider.customClaimsAllowlist) {
    if (Object.hasOwn(raw, key)) custom[key] = raw[key] ?? null
  }
  return {
    id: sub,
    emails,
    claims: profileClaims({
      iss: text(claims, 'iss') ?? provider.issuer ?? provider.authorizationUrl ?? '',
      id: sub,
      name: text(claims, 'name') ?? '',
      ...(text(claims, 'full_name') === undefined ? {} : { fullName: text(claims, 'full_name') }),
      avatar: text(claims, 'picture') ?? text(claims, 'avatar_url') ?? '',
      userName: text(claims, 'user_name') ?? '',
      preferredUsername: text(claims, 'preferred_username') ?? '',
      nickname: text(claims, 'nickname') ?? '',
      custom,
    }),
  }
}

/**
 * Refuses a user whose email is outside the provider's allowed domains (Gatehouse's
 * `allowed_email_domains`; empty: any).
 *
 * @throws {@link BadRequestError} `email_address_not_authorized`.
 */
export function checkEmailDomain(provider: CustomProvider, data: ProviderUserData): void {
  if (provider.allowedEmailDomains.length === 0) return
  const allowed = provider.allowedEmailDomains.map((d) => d.toLowerCase())
  const ok = data.emails.some((e) => {
    const domain = e.email.slice(e.email.lastIndexOf('@') + 1).toLowerCase()
    return e.verified && allowed.includes(domain)
  })
  if (!ok) {
    throw new BadRequestError(
      'email_address_not_authorized',
      `Email domain is not allowed for provider ${provider.identifier}`,
    )
  }
}

/** A custom provider's OAuth provider: the base flow, then its email domains checked. */
class CustomOAuthProvider implements OAuthProvider {
  readonly name: `custom:${string}`
  readonly pkce: boolean
  readonly #inner: OAuth2Provider
  readonly #row: CustomProvider

  constructor(row: CustomProvider, inner: OAuth2Provider) {
    this.name = row.identifier as `custom:${string}`
    this.pkce = row.pkceEnabled
    this.#inner = inner
    this.#row = row
  }

  authorizeUrl(request: Parameters<OAuthProvider['authorizeUrl']>[0]): Promise<string> {
    return this.#inner.authorizeUrl(request)
  }

  exchange(
    callback: Readonly<Record<string, string>>,
    pkce?: { readonly codeVerifier: string },
  ): Promise<ProviderTokens> {
    return this.#inner.exchange(callback, pkce)
  }

  async getUserData(
    tokens: ProviderTokens,
    callback: Readonly<Record<string, string>>,
    state: string,
  ): Promise<ProviderUserData> {
    const data = await this.#inner.getUserData(tokens, callback, state)
    checkEmailDomain(this.#row, data)
    return data
  }
}

/** Custom providers, looked up in the database on each use and built once per version. */
export class CustomProviders implements CustomIdTokenIssuers {
  readonly #options: CustomProvidersOptions
  /** Built providers by identifier, with the `updated_at` they were built from. */
  readonly #built = new Map<string, { readonly at: number; readonly provider: OAuthProvider }>()

  constructor(options: CustomProvidersOptions) {
    this.#options = options
  }

  /** The transport of calls to custom providers. */
  get fetch(): FetchLike | undefined {
    return this.#options.fetch
  }

  /** How the URLs an administrator registers are checked. */
  get guard(): UrlGuardOptions {
    return this.#options.guard
  }

  /** Seals client secrets; `undefined` without a key. */
  get box(): SecretBox | undefined {
    return this.#options.box
  }

  /**
   * The enabled custom provider `identifier`, as `/authorize` and `/callback` use it.
   *
   * @throws {@link BadRequestError} `validation_failed` "Unsupported provider: …" with upstream's
   *   reasons (disabled custom providers, not found, disabled).
   */
  async provider(identifier: string): Promise<OAuthProvider> {
    const unsupported = (reason: string) =>
      new BadRequestError('validation_failed', `Unsupported provider: ${reason}`)
    if (!this.#options.settings.customOauth.enabled) {
      throw unsupported('custom OAuth providers are disabled')
    }
    const row = await findCustomProvider(this.#options.db, identifier)
    if (row === undefined) throw unsupported(`custom provider ${identifier} not found`)
    if (!row.enabled) throw unsupported(`custom provider ${identifier} is disabled`)
    const built = this.#built.get(row.identifier)
    if (built?.at === row.updatedAt.getTime()) return built.provider
    const provider = new CustomOAuthProvider(row, this.#oauth2(row))
    if (this.#built.size >= 1000) this.#built.clear()
    this.#built.set(row.identifier, { at: row.updatedAt.getTime(), provider })
    return provider
  }

  /** The row's client secret in the clear. */
  #secret(row: CustomProvider): string {
    const box = this.#options.box
    try {
      if (box === undefined) throw new Error('no encryption key')
      return box.open(row.sealedClientSecret, row.id)
    } catch (error) {
      throw new InternalServerError(
        'unexpected_failure',
        'Error decrypting custom OAuth provider client secret',
        { cause: error },
      )
    }
  }

  #oauth2(row: CustomProvider): OAuth2Provider {
    const { settings, clock, fetch } = this.#options
    const discovery = row.cachedDiscovery
    const oidc = row.providerType === 'oidc'
    const userinfoUrl = oidc ? discovery?.userinfo_endpoint : (row.userinfoUrl ?? undefined)
    const client = new Client(row.clientId, this.#secret(row), {
      authScheme: 'request_body',
      authorizeUrl: (oidc ? discovery?.authorization_endpoint : row.authorizationUrl) ?? '',
      tokenUrl: (oidc ? discovery?.token_endpoint : row.tokenUrl) ?? '',
      ...(oidc && discovery !== null ? { site: discovery.issuer, metadata: { ...discovery } } : {}),
      redirect_uri: `${settings.apiExternalUrl.replace(/\/+$/, '')}/callback`,
      clock,
      connectionOpts: { timeout: 10_000, maxResponseBytes: 512 * 1024 },
      ...(fetch === undefined ? {} : { fetch }),
    })
    return new OAuth2Provider({
      name: row.identifier as `custom:${string}`,
      client,
      scopes: row.scopes,
      authorizeParams: row.authorizationParams,
      nonce: oidc,
      pkce: row.pkceEnabled,
      readUser: async (api, tokens, _callback, state) =>
        customUserData(row, await this.#rawClaims(row, api, tokens, state, userinfoUrl)),
    })
  }

  /** An OIDC provider's verified ID token claims, else the user-info endpoint's answer. */
  async #rawClaims(
    row: CustomProvider,
    api: UserApi,
    tokens: ProviderTokens,
    state: string,
    userinfoUrl: string | undefined,
  ): Promise<JsonObject> {
    if (row.providerType === 'oidc' && typeof tokens.params.id_token === 'string') {
      return await verifiedIdToken(api.client, tokens, state)
    }
    if (userinfoUrl === undefined || userinfoUrl === '') {
      throw new Error('no ID token or userinfo endpoint available')
    }
    return await api.object(userinfoUrl)
  }

  /**
   * The `id_token` grant's issuer of an OIDC custom provider (upstream's `custom:` case).
   *
   * @throws {@link BadRequestError} Upstream's answers.
   */
  async issuerOf(identifier: `custom:${string}`): Promise<IdTokenIssuer> {
    if (!this.#options.settings.customOauth.enabled) {
      throw new BadRequestError('validation_failed', 'Custom OAuth providers are disabled')
    }
    const row = await findCustomProvider(this.#options.db, identifier)
    const quoted = JSON.stringify(identifier)
    if (row === undefined) {
      throw new BadRequestError('validation_failed', `Custom provider ${quoted} not found`)
    }
    if (!row.enabled) {
      throw new BadRequestError('provider_disabled', `Custom provider ${quoted} is disabled`)
    }
    if (row.providerType !== 'oidc') {
      throw new BadRequestError('validation_failed', `Provider ${quoted} is not an OIDC provider`)
    }
    if (row.issuer === null) {
      throw new BadRequestError('validation_failed', `OIDC provider ${quoted} missing issuer`)
    }
    return {
      provider: row.identifier as `custom:${string}`,
      issuer: row.issuer,
      discoveryIssuer: row.issuer,
      ...(row.discoveryUrl === null ? {} : { discoveryUrl: row.discoveryUrl }),
      clientIds: [row.clientId, ...row.acceptableClientIds],
      skipNonceCheck: row.skipNonceCheck,
      checkUser: (data) => {
        checkEmailDomain(row, data)
      },
    }
  }
}
