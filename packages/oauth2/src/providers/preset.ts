/**
 * What a provider preset is: the facts about one identity provider (where its endpoints are,
 * which scopes it needs, whether it does PKCE and refresh tokens, its quirks) and how its profile
 * maps to standard claims.
 *
 * @module
 */
import type { AuthScheme } from '../authenticator.js'
import { libraryError } from '../error.js'
import type { AuthorizationServerMetadata } from '../oidc/metadata.js'

/** The providers with a preset. */
export type ProviderName =
  | 'apple'
  | 'azure'
  | 'bitbucket'
  | 'discord'
  | 'facebook'
  | 'figma'
  | 'fly'
  | 'github'
  | 'gitlab'
  | 'google'
  | 'kakao'
  | 'keycloak'
  | 'linkedin'
  | 'linkedin_oidc'
  | 'notion'
  | 'slack'
  | 'slack_oidc'
  | 'snapchat'
  | 'spotify'
  | 'twitch'
  | 'twitter'
  | 'vercel_marketplace'
  | 'workos'
  | 'x'
  | 'zoom'

/** Where a provider's endpoints are, for its public hosts or a custom base URL. */
export interface ProviderEndpoints {
  /** Authorization endpoint (OAuth 1.0a: where the user authorizes the request token). */
  readonly authorizeUrl: string
  /** Token endpoint (OAuth 1.0a: the access token endpoint). */
  readonly tokenUrl: string
  /** OAuth 1.0a: the request token endpoint. */
  readonly requestTokenUrl?: string | undefined
  /**
   * The issuer identifier of an OpenID provider: where discovery starts, or the `iss` its ID
   * tokens carry (Azure's is per tenant: see {@link ProviderEndpoints.issuerPattern}).
   */
  readonly issuer?: string | undefined
  /** Azure: the tenants' issuers on this host (`https://<host>/<tenant id>/v2.0`). */
  readonly issuerPattern?: RegExp | undefined
  /** Server metadata to validate ID tokens with when the provider is not discovered. */
  readonly metadata?: AuthorizationServerMetadata | undefined
  /** The `iss` of the claims of a provider without ID tokens: its API base. */
  readonly api: string
}

/** One request that reads the user, with the access token (Bearer unless said). */
export interface ProfileRequest {
  /** The URL (absolute). */
  readonly url: string
  /** `object`: a JSON object is expected (UserInfo-like); `json`: any JSON (an array of emails). */
  readonly kind: 'object' | 'json'
  /** Query parameters. */
  readonly params?: Readonly<Record<string, string>> | undefined
  /** Extra headers (Twitch's `Client-Id`, Notion's `Notion-Version`). */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/** What the profile mapping reads. */
export interface ProfileInput {
  /** The parsed responses of {@link ProviderPreset.profileRequests}, by name. */
  readonly responses: Readonly<Record<string, unknown>>
  /** The claims of the validated ID token, for OpenID providers. */
  readonly idToken?: Readonly<Record<string, unknown>> | undefined
  /** The token response's fields (WorkOS sends the profile there). */
  readonly tokenResponse: Readonly<Record<string, unknown>>
  /** The callback's parameters (Apple's `user` field, first sign-in only). */
  readonly callback: Readonly<Record<string, string>>
  /** The endpoints the sign-in used. */
  readonly endpoints: ProviderEndpoints
}

/**
 * An email address of the user: `verified` is what the provider says (`undefined`: the provider
 * does not say whether it verified it; treat it as unverified for linking accounts).
 */
export interface ProviderProfileEmail {
  /** The address. */
  readonly email: string
  /** `true`/`false` as the provider says; `undefined` when it does not say. */
  readonly verified: boolean | undefined
  /** Whether it is the account's primary address. */
  readonly primary: boolean
}

/** The user, in standard claims (OpenID Connect Core §5.1 names where there is one). */
export interface ProviderProfile {
  /** The provider's issuer or API base. */
  readonly iss: string
  /** The user's id at the provider (stable; a string). */
  readonly sub: string
  /** Display name (`''` when none). */
  readonly name: string
  /** A full name that differs from `name` (Twitch's display name). */
  readonly full_name?: string | undefined
  /** Picture URL. */
  readonly picture?: string | undefined
  /** The provider's user name (GitHub's login). */
  readonly user_name?: string | undefined
  /** OIDC `preferred_username`. */
  readonly preferred_username?: string | undefined
  /** OIDC `nickname`. */
  readonly nickname?: string | undefined
  /** The primary address, if any. */
  readonly email?: string | undefined
  /** Whether the provider says it verified `email` (`undefined`: it does not say). */
  readonly email_verified?: boolean | undefined
  /** Every address the provider reported, primary first. */
  readonly emails: readonly ProviderProfileEmail[]
  /** Provider-specific claims (Google's `hd`, Azure's `tid`, ...). */
  readonly custom?: Readonly<Record<string, unknown>> | undefined
}

/** How a provider issues refresh tokens. */
export interface RefreshSupport {
  /** Whether it issues refresh tokens at all. */
  readonly issued: boolean
  /** What it takes (a scope, a parameter, an app setting), when not by default. */
  readonly requires?: string | undefined
}

/** What the profile requests may need besides the endpoints. */
export interface ProfileRequestContext {
  /** The client id (Twitch's `Client-Id` header). */
  readonly clientId: string
  /** The client secret (Facebook's `appsecret_proof` key). */
  readonly clientSecret: string
  /** The user's access token. */
  readonly accessToken: string
}

/**
 * The facts about one identity provider, and how to read its user. Built for the auth server's
 * providers and shared with it: its provider modules use these presets as their only source of
 * provider facts.
 */
export interface ProviderPreset {
  /** Identifier, as in `EXTERNAL_<NAME>_*`. */
  readonly name: ProviderName
  /** Display name. */
  readonly title: string
  /** `oauth2` (OpenID providers included) or `oauth1a` (Twitter's legacy API). */
  readonly protocol: 'oauth2' | 'oauth1a'
  /**
   * The endpoints for the public hosts, or for `url` (a self-hosted or per-tenant base: GitHub
   * Enterprise, a GitLab instance, an Azure tenant, a Keycloak realm, a test server). Most
   * providers take the scheme and host of `url` (upstream's `chooseHost`); GitLab, Azure,
   * Keycloak, Google and Apple take the whole URL.
   *
   * @throws {TypeError} `ERR_INVALID_ARG_VALUE` when the provider needs `url` (Keycloak) and it is
   *   absent, or `url` is not an absolute URL.
   */
  endpoints(url?: string): ProviderEndpoints
  /** Scopes always asked for. */
  readonly scopes: readonly string[]
  /** `true` when the provider supports PKCE with S256; `'required'` when it refuses requests without. */
  readonly pkce: boolean | 'required'
  /** Refresh tokens. */
  readonly refresh: RefreshSupport
  /** Client authentication at the token endpoint. */
  readonly authScheme: AuthScheme
  /** Parameters every authorization request carries (Apple's `response_mode=form_post`). */
  readonly authorizeParams: Readonly<Record<string, string>>
  /**
   * For OpenID providers whose ID token identifies the user: `discovery` when the client is found
   * by OIDC discovery from the issuer, `required` when the token response must carry one.
   */
  readonly idToken?: { readonly discovery: boolean; readonly required: boolean } | undefined
  /**
   * Apple: the client secret is a JWT the client signs with its key (ES256, `iss` the team id,
   * `sub` the client id, `aud` the issuer, `kid` the key id), valid at most six months.
   */
  readonly clientSecretJwt?:
    { readonly algorithm: 'ES256'; readonly lifetimeSeconds: number } | undefined
  /** The requests that read the user with the access token. */
  profileRequests(
    endpoints: ProviderEndpoints,
    context: ProfileRequestContext,
  ): Readonly<Record<string, ProfileRequest>>
  /**
   * Maps what was read to standard claims.
   *
   * @throws {OAuth2Error} `invalid_userinfo` when the profile lacks what the provider must send.
   */
  profile(input: ProfileInput): ProviderProfile
  /** The provider's documentation. */
  readonly docs: readonly string[]
}

/** An unusable profile. @internal */
export function badProfile(what: string): Error {
  return libraryError('invalid_userinfo', `the provider's profile ${what}`)
}

/** `value` as an object, or `invalid_userinfo`. @internal */
export function record(value: unknown, what = 'is not a JSON object'): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badProfile(what)
  return value as Record<string, unknown>
}

/** `value` as an array of objects (others dropped), or `invalid_userinfo`. @internal */
export function records(value: unknown, what = 'is not a JSON array'): Record<string, unknown>[] {
  if (!Array.isArray(value)) throw badProfile(what)
  return value.filter(
    (v): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v),
  )
}

/** A string field, `''` when absent or not a string. @internal */
export function text(object: Readonly<Record<string, unknown>> | undefined, key: string): string {
  const value = object?.[key]
  return typeof value === 'string' ? value : ''
}

/** A boolean field (`"true"` counts), false when absent. @internal */
export function flag(object: Readonly<Record<string, unknown>> | undefined, key: string): boolean {
  const value = object?.[key]
  return value === true || value === 'true'
}

/** The user's id (a non-empty string or an integer, as a string), else `invalid_userinfo`. @internal */
export function idOf(object: Readonly<Record<string, unknown>> | undefined, key: string): string {
  const value = object?.[key]
  if (typeof value === 'string' && value !== '') return value
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value)
  throw badProfile(`has no ${key}`)
}

/** One primary address, or none when it is empty. @internal */
export function primaryEmail(email: string, verified: boolean | undefined): ProviderProfileEmail[] {
  return email === '' ? [] : [{ email, verified, primary: true }]
}

/** A profile with `email`/`email_verified` from the primary address of `emails`. @internal */
export function withEmails(
  profile: Omit<ProviderProfile, 'email' | 'email_verified' | 'emails'>,
  emails: readonly ProviderProfileEmail[],
): ProviderProfile {
  const primary = emails.find((e) => e.primary) ?? emails[0]
  return {
    ...profile,
    emails,
    ...(primary === undefined ? {} : { email: primary.email, email_verified: primary.verified }),
  }
}

/**
 * Upstream's `chooseHost`: the scheme and host of `url` when given, else `https://<fallback>`.
 *
 * @internal
 */
export function chooseHost(url: string | undefined, fallback: string): string {
  if (url === undefined || url === '') return `https://${fallback}`
  const parsed = new URL(url)
  return `${parsed.protocol}//${parsed.host}`
}

/** `url` (or `fallback`) without trailing slashes. @internal */
export function baseUrl(url: string | undefined, fallback: string): string {
  return (url === undefined || url === '' ? fallback : url).replace(/\/+$/, '')
}

/** Escapes `text` for a regular expression. @internal */
export function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
}
