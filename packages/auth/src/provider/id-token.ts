/**
 * The providers of the `id_token` grant (`POST /token?grant_type=id_token`): which issuer a
 * request's `provider` (or `issuer`) names, the client ids its tokens may be issued to, and how
 * their claims become the identity (upstream `IdTokenGrantParams.getProvider` and
 * `provider.ParseIDToken`). Discovery and signature checks are `@gatehouse/oauth2`'s, through
 * {@link IdTokenIssuers}.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/token_oidc.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/provider/oidc.go
 * @module
 */
import { Client, type FetchLike, type IdTokenClaims } from '@gatehouse/oauth2'
import { decodeJwt } from 'jose'
import type { Clock } from '../clock.js'
import type { ProviderSettings, Settings } from '../conf/settings.js'
import { BadRequestError } from '../errors.js'
import type { JsonObject } from '../models/json.js'
import { clientIdsOf, profileClaims, type Profile } from './base.js'
import type { ProviderEmail, ProviderUserData } from './oauth-provider.js'

/** Apple's two issuers (upstream `DefaultAppleIssuer`, `OtherAppleIssuer`); they share keys. */
const APPLE_ISSUERS = ['https://appleid.apple.com', 'https://account.apple.com'] as const
const GOOGLE_ISSUER = 'https://accounts.google.com'
/** Google also issues tokens whose `iss` has no scheme (as go-oidc accepts). */
const GOOGLE_ISSUER_NO_SCHEME = 'accounts.google.com'
/** The prefixes of Azure's issuers (upstream's check of the detected issuer). */
const AZURE_ISSUER_PREFIXES = ['https://login.microsoftonline.com/', 'https://sts.windows.net/']
/** upstream `azureIssuerRegexp`: an `issuer` parameter that names Azure. */
const AZURE_ISSUER = /^https:\/\/login[.]microsoftonline[.]com\/([^/]+)\/v2[.]0\/?$/
const FACEBOOK_ISSUER = 'https://www.facebook.com'
const KAKAO_ISSUER = 'https://kauth.kakao.com'
const SNAPCHAT_ISSUER = 'https://accounts.snapchat.com/accounts/oauth2/token'
const VERCEL_MARKETPLACE_ISSUER = 'https://marketplace.vercel.com'

/** How a provider's ID-token claims become the identity. */
export type ClaimsFamily =
  | 'apple'
  | 'azure'
  | 'facebook'
  | 'generic'
  | 'google'
  | 'kakao'
  | 'snapchat'
  | 'vercel_marketplace'

/** A provider the `id_token` grant accepts tokens of, resolved for one request. */
export interface IdTokenProvider {
  /** The identities' `provider` (`google`, `custom:acme`). */
  readonly name: string
  /** Where its metadata is discovered (`<issuer>/.well-known/openid-configuration`). */
  readonly discoveryIssuer: string
  /** The `iss` values its tokens may carry. */
  readonly issuers: readonly string[]
  /** The client ids a token's `aud` must contain one of (empty ones are ignored). */
  readonly clientIds: readonly string[]
  /** The `nonce` is not compared (Facebook Limited Login, as upstream). */
  readonly skipNonceCheck: boolean
  readonly claims: ClaimsFamily
  /** Its emails link to existing accounts although it does not say it verified them. */
  readonly trustEmail: boolean
}

/**
 * Where custom OIDC providers (`provider: custom:<id>`) come from: the store of run-time managed
 * providers plugs in here (issue 27 item 3).
 */
export interface IdTokenProviderSource {
  /**
   * The enabled OIDC provider called `identifier` (`custom:<id>`).
   *
   * @throws {@link BadRequestError} Upstream's errors: `validation_failed` "Custom provider
   *   \"…\" not found", "Provider \"…\" is not an OIDC provider"; `provider_disabled` "Custom
   *   provider \"…\" is disabled".
   */
  resolve(identifier: string): Promise<IdTokenProvider>
}

/** What a request names: `provider`, or `issuer` (and the token, whose issuer is detected). */
export interface IdTokenRequest {
  readonly provider: string
  readonly issuer: string
  readonly idToken: string
}

/** The `iss` of an unverified token, to pick the issuer by (upstream `Detect…IDTokenIssuer`). */
function detectIssuer(idToken: string, provider: string): string {
  try {
    const { iss } = decodeJwt(idToken)
    if (typeof iss === 'string') return iss
  } catch {
    // reported below
  }
  throw new BadRequestError(
    'validation_failed',
    `Unable to detect issuer in ID token for ${provider} provider`,
  )
}

/** Whether `issuer` is `base` or below it (`base` without a trailing slash). */
function under(issuer: string, base: string): boolean {
  const trimmed = base.replace(/\/+$/, '')
  return issuer === trimmed || issuer.startsWith(`${trimmed}/`)
}

/** A fixed provider's settings, when the server has them (kakao and vercel_marketplace: not yet). */
function settingsOf(settings: Settings, name: string): ProviderSettings | undefined {
  return (settings.external as unknown as Readonly<Record<string, ProviderSettings | undefined>>)[
    name
  ]
}

/** A fixed provider (`EXTERNAL_<P>_*`) with one issuer. */
function fixed(
  settings: Settings,
  name: string,
  issuer: string,
  claims: ClaimsFamily,
  extra: Partial<IdTokenProvider> = {},
): IdTokenProvider {
  const config = settingsOf(settings, name)
  if (config?.enabled !== true) {
    throw new BadRequestError('provider_disabled', `Provider (issuer "${issuer}") is not enabled`)
  }
  return {
    name,
    discoveryIssuer: issuer,
    issuers: [issuer],
    clientIds: clientIdsOf(config),
    skipNonceCheck: false,
    claims,
    trustEmail: 'trustEmail' in config && config.trustEmail,
    ...extra,
  }
}

/**
 * The provider of a request, as upstream picks it: by `provider`, or by an `issuer` that names
 * one; Apple's and Azure's issuer detected in the token (and compared with `issuer` when both
 * are given). `EXTERNAL_APPLE_URL`, `EXTERNAL_GOOGLE_URL` and `EXTERNAL_KEYCLOAK_URL` are the
 * issuers of those providers; `EXTERNAL_AZURE_URL`, when set, is accepted as an Azure issuer
 * prefix beside Microsoft's.
 *
 * @param custom Where `custom:<id>` providers come from; without it they are disabled.
 * @throws {@link BadRequestError} `validation_failed` or `provider_disabled` with upstream's
 *   texts.
 */
export async function resolveIdTokenProvider(
  settings: Settings,
  request: IdTokenRequest,
  custom: IdTokenProviderSource | undefined,
): Promise<IdTokenProvider> {
  const { provider, issuer } = request
  const ext = settings.external
  const appleIssuers: readonly string[] = ext.apple.url === '' ? APPLE_ISSUERS : [ext.apple.url]
  const azureBases = [...AZURE_ISSUER_PREFIXES, ...(ext.azure.url === '' ? [] : [ext.azure.url])]
  const isAzure = (iss: string) =>
    AZURE_ISSUER_PREFIXES.some((p) => iss.startsWith(p)) ||
    (ext.azure.url !== '' && under(iss, ext.azure.url))
  const googleIssuer = ext.google.url === '' ? GOOGLE_ISSUER : ext.google.url.replace(/\/+$/, '')

  if (provider === 'apple' || (issuer !== '' && appleIssuers.includes(issuer))) {
    const detected = detectIssuer(request.idToken, 'Apple')
    if (!appleIssuers.includes(detected)) {
      throw new BadRequestError(
        'validation_failed',
        'Detected ID token issuer is not an Apple ID token issuer',
      )
    }
    if (issuer !== '' && issuer !== detected) {
      throw new BadRequestError(
        'validation_failed',
        'Provided issuer does not match ID token issuer',
      )
    }
    const found = fixed(settings, 'apple', detected, 'apple', {
      // Both Apple issuers share the keys of the first one's discovery document.
      discoveryIssuer: appleIssuers[0],
      issuers: appleIssuers,
    })
    const bundle = ext.iosBundleId
    return bundle === '' ? found : { ...found, clientIds: [...found.clientIds, bundle] }
  }
  if (provider === 'google' || (issuer !== '' && issuer === googleIssuer)) {
    return fixed(settings, 'google', googleIssuer, 'google', {
      issuers:
        googleIssuer === GOOGLE_ISSUER ? [GOOGLE_ISSUER, GOOGLE_ISSUER_NO_SCHEME] : [googleIssuer],
    })
  }
  if (provider === 'azure' || (issuer !== '' && (AZURE_ISSUER.test(issuer) || isAzure(issuer)))) {
    const detected = detectIssuer(request.idToken, 'Azure')
    if (
      !azureBases.some((base) =>
        base.endsWith('/') ? detected.startsWith(base) : under(detected, base),
      )
    ) {
      throw new BadRequestError(
        'validation_failed',
        'Detected ID token issuer is not an Azure ID token issuer',
      )
    }
    if (issuer !== '' && issuer !== detected) {
      throw new BadRequestError(
        'validation_failed',
        'Provided issuer does not match ID token issuer',
      )
    }
    return fixed(settings, 'azure', detected, 'azure')
  }
  if (provider === 'facebook' || issuer === FACEBOOK_ISSUER) {
    // Facebook Limited Login tokens carry a nonce upstream does not compare.
    return fixed(settings, 'facebook', FACEBOOK_ISSUER, 'facebook', { skipNonceCheck: true })
  }
  if (
    provider === 'keycloak' ||
    (ext.keycloak.enabled && ext.keycloak.url !== '' && issuer === ext.keycloak.url)
  ) {
    return fixed(settings, 'keycloak', ext.keycloak.url, 'generic')
  }
  if (provider === 'kakao' || issuer === KAKAO_ISSUER) {
    return fixed(settings, 'kakao', KAKAO_ISSUER, 'kakao')
  }
  if (provider === 'vercel_marketplace' || issuer === VERCEL_MARKETPLACE_ISSUER) {
    return fixed(settings, 'vercel_marketplace', VERCEL_MARKETPLACE_ISSUER, 'vercel_marketplace')
  }
  if (provider === 'snapchat' || issuer === SNAPCHAT_ISSUER) {
    return fixed(settings, 'snapchat', SNAPCHAT_ISSUER, 'snapchat')
  }
  if (provider.startsWith('custom:')) {
    if (custom === undefined) {
      throw new BadRequestError('validation_failed', 'Custom OAuth providers are disabled')
    }
    return custom.resolve(provider)
  }
  throw new BadRequestError('validation_failed', `Custom OIDC provider "${provider}" not allowed`)
}

/** A string claim, `''` when absent or not a string. */
function text(claims: IdTokenClaims, name: string): string {
  const value = claims[name]
  return typeof value === 'string' ? value : ''
}

/** A boolean claim that some providers send as a string (`"true"`, `"1"`). */
function flag(value: unknown): boolean {
  return value === true || value === 'true' || value === '1'
}

/** upstream `AzureIDTokenClaims.IsEmailVerified`: `xms_edov` when present, else any email. */
function azureEmailVerified(claims: IdTokenClaims): boolean {
  const email = text(claims, 'email')
  const edov = claims.xms_edov
  return email !== '' && (edov === undefined || flag(edov))
}

/** The claims upstream leaves out of an Azure identity's `custom_claims`. */
const AZURE_NOT_CUSTOM = new Set([
  'aud',
  'iss',
  'iat',
  'nbf',
  'exp',
  'c_hash',
  'at_hash',
  'aio',
  'nonce',
  'rh',
  'uti',
  'jti',
  'ver',
  'sub',
  'name',
  'preferred_username',
])

/** The standard claims upstream's generic parser keeps (`provider.Claims`), besides the profile. */
const GENERIC_CLAIMS = [
  'family_name',
  'given_name',
  'middle_name',
  'profile',
  'website',
  'gender',
  'birthdate',
  'zoneinfo',
  'locale',
  'phone',
] as const

/**
 * The identity of a verified token (upstream `parse…IDToken` per issuer): its subject, its email
 * (verified as the provider says, or as upstream assumes for Apple, Facebook, Kakao, Snapchat and
 * Vercel Marketplace: those assumed ones never link to an existing account unless
 * `EXTERNAL_<P>_TRUST_EMAIL`) and its claims.
 */
export function idTokenUserData(
  provider: IdTokenProvider,
  claims: IdTokenClaims,
): ProviderUserData {
  const email = text(claims, 'email')
  const assumed = (address: string): ProviderEmail[] =>
    address === ''
      ? []
      : [{ email: address, verified: true, primary: true, assumed: !provider.trustEmail }]
  const stated = (address: string, verified: boolean): ProviderEmail[] =>
    address === '' ? [] : [{ email: address, verified, primary: true }]
  const { iss, sub } = claims
  const identity = (
    emails: ProviderEmail[],
    profile: Omit<Profile, 'iss' | 'id'>,
    id: string = sub,
  ): ProviderUserData => ({ id, emails, claims: profileClaims({ iss, id, ...profile }) })
  switch (provider.claims) {
    case 'google': {
      const hd = text(claims, 'hd')
      return identity(stated(email, flag(claims.email_verified)), {
        name: text(claims, 'name'),
        avatar: text(claims, 'picture'),
        custom: hd === '' ? undefined : { hd },
      })
    }
    case 'apple': {
      const custom: Record<string, unknown> = {}
      if (claims.is_private_email !== undefined) custom.is_private_email = claims.is_private_email
      if (claims.auth_time !== undefined) custom.auth_time = claims.auth_time
      if (text(claims, 'transfer_sub') !== '') custom.transfer_sub = claims.transfer_sub
      // Apple verifies the addresses it gives (upstream counts them as verified).
      return identity(stated(email, true), { name: '', custom })
    }
    case 'azure':
      return identity(stated(email, azureEmailVerified(claims)), {
        name: '',
        fullName: text(claims, 'name'),
        preferredUsername: text(claims, 'preferred_username'),
        custom: Object.fromEntries(
          Object.entries(claims).filter(([key]) => !AZURE_NOT_CUSTOM.has(key)),
        ),
      })
    case 'facebook':
      return identity(assumed(email), {
        name: text(claims, 'name'),
        avatar: text(claims, 'picture'),
      })
    case 'kakao': {
      const nickname = text(claims, 'nickname')
      return identity(assumed(email), {
        name: nickname,
        preferredUsername: nickname,
        avatar: text(claims, 'picture'),
      })
    }
    case 'vercel_marketplace': {
      const global = text(claims, 'global_user_id')
      return identity(
        assumed(text(claims, 'user_email')),
        { name: text(claims, 'user_name'), avatar: text(claims, 'user_avatar_url') },
        global === '' ? sub : `global_user_id:${global}`,
      )
    }
    case 'snapchat':
    case 'generic': {
      const standard: JsonObject = {}
      for (const key of GENERIC_CLAIMS) {
        const value = text(claims, key)
        if (value !== '') standard[key] = value
      }
      const found = identity(
        provider.claims === 'snapchat'
          ? assumed(email)
          : stated(email, flag(claims.email_verified)),
        {
          name: text(claims, 'name'),
          avatar: text(claims, 'picture'),
          preferredUsername: text(claims, 'preferred_username'),
          nickname: text(claims, 'nickname'),
        },
      )
      return { ...found, claims: { ...standard, ...found.claims } }
    }
  }
}

/** Bounds of the discovery and JWKS requests. */
const TIMEOUT_MS = 10_000
const MAX_RESPONSE_BYTES = 512 * 1024
/** At most this many issuers' clients are kept (custom providers may add many). */
const MAX_ISSUERS = 64
/** A discovered issuer is discovered again after this long (its metadata may change). */
const DISCOVERY_TTL_MS = 3_600_000

/**
 * The discovered clients of the issuers the grant has seen, one per issuer: discovery once an
 * hour (a failed one is retried on the next request), and each client's JWKS cached by
 * `@gatehouse/oauth2` (refetched for an unknown `kid`, at most once per cooldown). Requests time
 * out after 10 s and read at most 512 KiB. The oldest issuer is dropped beyond 64.
 */
export class IdTokenIssuers {
  readonly #clock: Clock
  readonly #fetch: FetchLike | undefined
  readonly #clients = new Map<string, { client: Promise<Client>; at: number }>()

  constructor(clock: Clock, fetch?: FetchLike) {
    this.#clock = clock
    this.#fetch = fetch
  }

  /**
   * The client of `issuer`, discovered on first use. It has no secret: HS* tokens are refused.
   *
   * @throws The library's `invalid_metadata` error, or a transport error, when discovery fails.
   */
  client(issuer: string): Promise<Client> {
    const now = this.#clock.now()
    const kept = this.#clients.get(issuer)
    if (kept !== undefined && now - kept.at < DISCOVERY_TTL_MS) return kept.client
    this.#clients.delete(issuer)
    if (this.#clients.size >= MAX_ISSUERS) {
      const oldest = this.#clients.keys().next().value
      if (oldest !== undefined) this.#clients.delete(oldest)
    }
    const client = Client.discover(issuer, 'gatehouse-id-token', undefined, {
      clock: this.#clock,
      connectionOpts: { timeout: TIMEOUT_MS, maxResponseBytes: MAX_RESPONSE_BYTES },
      ...(this.#fetch === undefined ? {} : { fetch: this.#fetch }),
    }).catch((error: unknown) => {
      if (this.#clients.get(issuer)?.client === client) this.#clients.delete(issuer)
      throw error
    })
    this.#clients.set(issuer, { client, at: now })
    return client
  }
}
