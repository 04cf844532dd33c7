/**
 * The issuers of the `id_token` grant (upstream `IdTokenGrantParams.getProvider` and
 * `provider.ParseIDToken`): which provider an ID token belongs to, the issuer its keys are
 * discovered from, the client ids it may be issued to, and the user it names. Discovery and
 * signature checks go through `@gatehouse/oauth2` (`Client.discover`, `Client#verifyIdToken`).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/token_oidc.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/provider/oidc.go
 * @module
 */
import { PROVIDER_PRESETS } from '@gatehouse/oauth2/providers'
import { decodeJwt } from 'jose'
import type { Settings } from '../conf/settings.js'
import { BadRequestError } from '../errors.js'
import type { JsonObject } from '../models/json.js'
import { clientIdsOf, profileClaims } from './base.js'
import type { ExternalProvider } from './names.js'
import type { ProviderEmail, ProviderUserData } from './oauth-provider.js'

/** Apple's two issuers (upstream `IsAppleIssuer`). */
export const APPLE_ISSUERS: readonly string[] = [
  'https://appleid.apple.com',
  'https://account.apple.com',
]

/** The public issuers of the providers with a fixed one (upstream `Issuer*`). */
const DEFAULT_ISSUERS: Readonly<Partial<Record<ExternalProvider, string>>> = {
  google: 'https://accounts.google.com',
  facebook: 'https://www.facebook.com',
  snapchat: 'https://accounts.snapchat.com/accounts/oauth2/token',
  kakao: 'https://kauth.kakao.com',
  vercel_marketplace: 'https://marketplace.vercel.com',
}

/** Azure issuers: a tenant's, under one of Microsoft's two hosts (upstream `IsAzureIssuer`). */
const AZURE_ISSUER =
  /^https:\/\/(login\.microsoftonline\.com|sts\.windows\.net)\/[A-Za-z0-9._-]{1,64}(\/v2\.0)?\/?$/

/** The provider of an ID token: a built-in one, or a custom OIDC provider (`custom:<name>`). */
export type IdTokenProviderName = ExternalProvider | `custom:${string}`

/**
 * Where `custom:<name>` OIDC providers of the `id_token` grant come from: the store of custom
 * providers (issue 27 item 3) implements it and is given to the app context as
 * `customIdTokenIssuers`; without one, custom providers are answered as disabled.
 */
export interface CustomIdTokenIssuers {
  /**
   * The enabled OIDC provider called `identifier` (`custom:<name>`): its issuer (discovered as
   * the built-in ones are), the client ids its tokens may be issued to, and whether its nonce is
   * compared.
   *
   * @throws {@link BadRequestError} Upstream's answers: `validation_failed` "Custom provider
   *   \"…\" not found", "Provider \"…\" is not an OIDC provider", "OIDC provider \"…\" missing
   *   issuer"; `provider_disabled` "Custom provider \"…\" is disabled".
   */
  issuerOf(identifier: `custom:${string}`): Promise<IdTokenIssuer>
}

/** What the grant asks for (upstream `IdTokenGrantParams`). */
export interface IdTokenRequest {
  readonly idToken: string
  readonly provider: string
  readonly issuer: string
}

/** The provider an ID token is checked against. */
export interface IdTokenIssuer {
  /** The identity's provider (`google`, …, or a custom provider's `custom:<name>`). */
  readonly provider: IdTokenProviderName
  /** The issuer the token must carry, and its keys' discovery document. */
  readonly issuer: string
  /**
   * Where the keys are discovered, when not at `issuer` (Apple's second issuer shares the first's
   * keys).
   */
  readonly discoveryIssuer: string
  /** Where the discovery document is, when not at the issuer's well-known locations. */
  readonly discoveryUrl?: string | undefined
  /** The client ids the token may be issued to (`EXTERNAL_<P>_CLIENT_ID`, comma-separated). */
  readonly clientIds: readonly string[]
  /** Facebook Limited Login's nonce is not checked (upstream `SkipNonceCheck`). */
  readonly skipNonceCheck: boolean
  /**
   * Refuses the user the token names (a custom provider's allowed email domains).
   *
   * @throws {@link BadRequestError} When the user may not sign in with this provider.
   */
  readonly checkUser?: (data: ProviderUserData) => void
}

/** The unverified `iss` of a compact JWS, `''` when it has none. */
function issuerIn(idToken: string, what: string): string {
  try {
    const iss = decodeJwt(idToken).iss
    return typeof iss === 'string' ? iss : ''
  } catch {
    throw new BadRequestError(
      'validation_failed',
      `Unable to detect issuer in ID token for ${what} provider`,
    )
  }
}

/** An issuer without trailing slashes (the form discovery and `iss` comparisons use). */
function trimmed(url: string): string {
  return url.replace(/\/+$/, '')
}

/**
 * The provider of an `id_token` grant, by `provider` or `issuer` as upstream decides it: Apple
 * and Azure by the issuer found in the token (Apple's two issuers; a tenant issuer under
 * `login.microsoftonline.com` or `sts.windows.net`, or under `EXTERNAL_AZURE_URL`'s origin when
 * set), Google, Facebook, Kakao, Snapchat and Vercel Marketplace by their fixed issuers (or `EXTERNAL_<P>_URL`), Keycloak by
 * its realm URL. `custom:<name>` providers answer that custom providers are disabled, other
 * issuers that they are not allowed.
 *
 * @throws {@link BadRequestError} `validation_failed` with upstream's texts, or
 *   `provider_disabled` "Provider (issuer "…") is not enabled".
 */
export function idTokenIssuerOf(settings: Settings, request: IdTokenRequest): IdTokenIssuer {
  const { provider, issuer: asked } = request
  const external = settings.external
  const custom = (url: string) => (url === '' ? undefined : trimmed(url))
  let name: ExternalProvider
  let issuer: string
  let discoveryIssuer: string | undefined
  if (provider === 'apple' || APPLE_ISSUERS.includes(asked)) {
    name = 'apple'
    const configured = custom(external.apple.url)
    const accepted = configured === undefined ? APPLE_ISSUERS : [configured]
    issuer = detectedIssuer(request, 'Apple', (iss) => accepted.includes(iss))
    discoveryIssuer = accepted[0]
  } else if (provider === 'azure' || isAzureIssuer(asked, external.azure.url)) {
    name = 'azure'
    issuer = detectedIssuer(request, 'Azure', (iss) => isAzureIssuer(iss, external.azure.url))
  } else if (provider === 'keycloak' || (asked !== '' && asked === custom(external.keycloak.url))) {
    name = 'keycloak'
    issuer = custom(external.keycloak.url) ?? ''
  } else {
    const fixed = (['google', 'facebook', 'snapchat', 'kakao', 'vercel_marketplace'] as const).find(
      (p) =>
        provider === p ||
        (provider === '' &&
          asked !== '' &&
          asked === (custom(external[p].url) ?? DEFAULT_ISSUERS[p])),
    )
    if (fixed === undefined) {
      if (provider.startsWith('custom:')) {
        throw new BadRequestError('validation_failed', 'Custom OAuth providers are disabled')
      }
      throw new BadRequestError(
        'validation_failed',
        `Custom OIDC provider ${JSON.stringify(provider)} not allowed`,
      )
    }
    name = fixed
    issuer = custom(external[fixed].url) ?? (DEFAULT_ISSUERS[fixed] as string)
  }
  const config = external[name]
  if (!config.enabled) {
    throw new BadRequestError(
      'provider_disabled',
      `Provider (issuer ${JSON.stringify(issuer)}) is not enabled`,
    )
  }
  return {
    provider: name,
    issuer,
    discoveryIssuer: discoveryIssuer ?? issuer,
    clientIds: clientIdsOf(config.clientId),
    skipNonceCheck: name === 'facebook',
  }
}

/**
 * {@link idTokenIssuerOf}, with `custom:<name>` providers asked of `custom` (upstream's "Custom
 * OAuth providers are disabled" without it).
 *
 * @throws As {@link idTokenIssuerOf} and {@link CustomIdTokenIssuers.issuerOf}.
 */
export async function resolveIdTokenIssuer(
  settings: Settings,
  request: IdTokenRequest,
  custom: CustomIdTokenIssuers | undefined,
): Promise<IdTokenIssuer> {
  const { provider } = request
  if (custom !== undefined && isCustomProvider(provider)) return custom.issuerOf(provider)
  return idTokenIssuerOf(settings, request)
}

function isCustomProvider(provider: string): provider is `custom:${string}` {
  return provider.startsWith('custom:')
}

/**
 * The issuer read from the token for a provider with several (Apple, Azure), as upstream checks
 * it: one `accepts`, and the request's `issuer`, when given, the same.
 *
 * @throws {@link BadRequestError} `validation_failed` with upstream's texts.
 */
function detectedIssuer(
  request: IdTokenRequest,
  what: 'Apple' | 'Azure',
  accepts: (issuer: string) => boolean,
): string {
  const detected = issuerIn(request.idToken, what)
  if (!accepts(detected)) {
    throw new BadRequestError(
      'validation_failed',
      `Detected ID token issuer is not an ${what} ID token issuer`,
    )
  }
  if (request.issuer !== '' && request.issuer !== detected) {
    throw new BadRequestError('validation_failed', 'Provided issuer does not match ID token issuer')
  }
  return detected
}

/**
 * Whether `issuer` is an Azure tenant's: under `login.microsoftonline.com` or `sts.windows.net`,
 * or, with `EXTERNAL_AZURE_URL` set, under its origin.
 */
function isAzureIssuer(issuer: string, configuredUrl: string): boolean {
  if (issuer === '') return false
  if (configuredUrl !== '') {
    const origin = new URL(configuredUrl).origin
    return new RegExp(
      `^${origin.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/[A-Za-z0-9._-]{1,64}(/v2\\.0)?/?$`,
    ).test(issuer)
  }
  return AZURE_ISSUER.test(issuer)
}

/**
 * Vercel Marketplace's user, by its preset's mapping (upstream `parseVercelMarketplaceIDToken`):
 * `global_user_id:<id>`, `user_email` (verified), `user_name`, `user_avatar_url`.
 */
function vercelUserData(claims: JsonObject): ProviderUserData {
  const preset = PROVIDER_PRESETS.vercel_marketplace
  const profile = preset.profile({
    endpoints: preset.endpoints(),
    responses: {},
    tokenResponse: {},
    callback: {},
    idToken: claims,
  })
  return {
    id: profile.sub,
    emails: profile.emails.map(({ email, primary }) => ({ email, verified: true, primary })),
    claims: profileClaims({
      iss: profile.iss,
      id: profile.sub,
      name: profile.name,
      avatar: profile.picture ?? '',
    }),
  }
}

/** A string claim, `undefined` when absent or not a string. */
function text(claims: JsonObject, key: string): string | undefined {
  const value = claims[key]
  return typeof value === 'string' && value !== '' ? value : undefined
}

/** A boolean claim that some issuers send as a string (`"true"`). */
function flag(claims: JsonObject, key: string): boolean {
  const value = claims[key]
  return value === true || value === 'true'
}

/**
 * The user a verified ID token names (upstream `parse<Provider>IDToken`): `sub`, the email (with
 * `email_verified`; Azure also counts `xms_edov`, the email domain's owner verified), name and
 * picture; Google's `hd` and Apple's `is_private_email` as custom claims.
 */
export function idTokenUserData(
  provider: IdTokenProviderName,
  claims: JsonObject,
): ProviderUserData {
  if (provider === 'vercel_marketplace') return vercelUserData(claims)
  const sub = text(claims, 'sub') ?? ''
  const email = text(claims, 'email')
  const verified =
    flag(claims, 'email_verified') || (provider === 'azure' && flag(claims, 'xms_edov'))
  const emails: ProviderEmail[] = email === undefined ? [] : [{ email, verified, primary: true }]
  const custom: JsonObject = {}
  if (provider === 'google' && text(claims, 'hd') !== undefined) custom.hd = claims.hd ?? null
  if (provider === 'apple' && flag(claims, 'is_private_email')) custom.is_private_email = true
  return {
    id: sub,
    emails,
    claims: profileClaims({
      iss: text(claims, 'iss') ?? '',
      id: sub,
      name: text(claims, 'name') ?? '',
      avatar: text(claims, 'picture') ?? '',
      preferredUsername: text(claims, 'preferred_username') ?? '',
      nickname: text(claims, 'nickname') ?? '',
      custom,
    }),
  }
}
