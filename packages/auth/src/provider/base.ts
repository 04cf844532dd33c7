/**
 * The shared base of the OAuth 2.0 providers: every exchange goes through `@gatehouse/oauth2`
 * (its authorization URLs, token requests, user-info requests, OIDC discovery and ID-token
 * checks); a provider module only gives its endpoints, scopes and how its profile maps to claims.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/provider/provider.go
 * @module
 */
import { createHash } from 'node:crypto'
import { Client, type ClientOptions, type FetchLike } from '@gatehouse/oauth2'
import type { Clock } from '../clock.js'
import type { ProviderSettings } from '../conf/settings.js'
import type { ExternalProvider } from './names.js'
import type { JsonObject } from '../models/json.js'
import {
  ProviderFailure,
  type AuthorizeRequest,
  type OAuthProvider,
  type ProviderEmail,
  type ProviderTokens,
  type ProviderUserData,
} from './oauth-provider.js'

/** What a provider module is built from: its settings and the injected services. */
export interface ProviderContext {
  /** `EXTERNAL_<P>_*`. */
  readonly config: ProviderSettings
  /** Time for ID-token checks. */
  readonly clock: Clock
  /** A `fetch` for every provider call instead of the library's default transport. */
  readonly fetch?: FetchLike | undefined
  /** `EXTERNAL_APPLE_TEAM_ID`/`_KEY_ID` (Apple only). */
  readonly apple?: { readonly teamId: string; readonly keyId: string } | undefined
}

/**
 * Upstream's `chooseHost`: the scheme and host of `EXTERNAL_<P>_URL` when set, else
 * `https://<fallback>`.
 *
 * @param url The custom base URL, or `''`.
 * @param fallback The provider's public host, such as `github.com`.
 */
export function chooseHost(url: string, fallback: string): string {
  if (url === '') return `https://${fallback}`
  const parsed = new URL(url)
  return `${parsed.protocol}//${parsed.host}`
}

/** `url` without its trailing slashes (a realm or issuer URL to append paths to). */
export function trimSlash(url: string): string {
  return url.replace(/\/+$/, '')
}

/**
 * The `nonce` sent with an OIDC provider's authorization request: base64url(SHA-256(state)), so
 * that the callback, which has the signed state, can check the ID token's without storing it.
 */
export function nonceFor(state: string): string {
  return createHash('sha256').update(state).digest('base64url')
}

/** The OAuth 2.0 client of a provider, with its endpoints and `redirect_uri`. */
export function oauth2Client(
  ctx: ProviderContext,
  options: Pick<ClientOptions, 'site' | 'authorizeUrl' | 'tokenUrl' | 'authScheme' | 'metadata'>,
): Client {
  return new Client(ctx.config.clientId, ctx.config.secret, {
    authScheme: 'request_body',
    ...options,
    redirect_uri: ctx.config.redirectUri,
    clock: ctx.clock,
    connectionOpts: { timeout: 10_000 },
    ...(ctx.fetch === undefined ? {} : { fetch: ctx.fetch }),
  })
}

/**
 * The client of an OIDC provider found by discovery from `issuer` (Google, Apple), discovered on
 * first use; a failed discovery is retried on the next use.
 */
export function discoveredClient(ctx: ProviderContext, issuer: string): () => Promise<Client> {
  let client: Promise<Client> | undefined
  return () => {
    client ??= Client.discover(issuer, ctx.config.clientId, ctx.config.secret, {
      authScheme: 'request_body',
      redirect_uri: ctx.config.redirectUri,
      clock: ctx.clock,
      connectionOpts: { timeout: 10_000 },
      ...(ctx.fetch === undefined ? {} : { fetch: ctx.fetch }),
    }).catch((error: unknown) => {
      client = undefined
      throw error
    })
    return client
  }
}

/** Reads a provider's user-info endpoints with the access token (through `@gatehouse/oauth2`). */
export interface UserApi {
  /** GETs a JSON object (`Client#userinfo` with the provider's own URL). */
  object(
    url: string,
    options?: { headers?: Record<string, string>; params?: Record<string, string> },
  ): Promise<Record<string, unknown>>
  /** GETs any JSON value (an array of emails). */
  json(url: string, options?: { headers?: Record<string, string> }): Promise<unknown>
  /** The client (for ID-token checks). */
  readonly client: Client
}

function userApi(client: Client, accessToken: string): UserApi {
  return {
    client,
    object: (url, options = {}) => client.userinfo(accessToken, { url, ...options, snaky: false }),
    async json(url, options = {}) {
      const response = await client.request('get', url, {
        headers: { ...options.headers, authorization: `Bearer ${accessToken}` },
        raiseErrors: true,
        snaky: false,
      })
      return response.parsed
    },
  }
}

/** How an OAuth 2.0 provider differs from the others. */
export interface OAuth2Description {
  readonly name: ExternalProvider
  /** The client (its endpoints), or a function discovering it. */
  readonly client: Client | (() => Promise<Client>)
  /** Scopes always asked for (upstream's defaults). */
  readonly scopes: readonly string[]
  /** How scopes are joined. @default ' ' */
  readonly scopeSeparator?: string
  /** Extra authorization parameters (Apple's `response_mode=form_post`). */
  readonly authorizeParams?: Readonly<Record<string, string>>
  /** Send a `nonce` derived from the state (OIDC providers whose ID token is checked). */
  readonly nonce?: boolean
  /** The provider supports PKCE with S256 (see {@link OAuthProvider.pkce}). @default false */
  readonly pkce?: boolean
  /** Reads the user: through the user-info API, the ID token or the token response. */
  readUser(
    api: UserApi,
    tokens: ProviderTokens,
    callback: Readonly<Record<string, string>>,
    state: string,
  ): Promise<ProviderUserData>
}

/** An OAuth 2.0 provider (all but Twitter) from its {@link OAuth2Description}. */
export class OAuth2Provider implements OAuthProvider {
  readonly name: ExternalProvider
  readonly pkce: boolean
  readonly #description: OAuth2Description

  constructor(description: OAuth2Description) {
    this.name = description.name
    this.pkce = description.pkce === true
    this.#description = description
  }

  async #client(): Promise<Client> {
    const client = this.#description.client
    return typeof client === 'function' ? client() : client
  }

  async authorizeUrl(request: AuthorizeRequest): Promise<string> {
    const d = this.#description
    let client: Client
    try {
      client = await this.#client()
    } catch (error) {
      throw new ProviderFailure('authorize', error)
    }
    const scopes = [...new Set([...d.scopes, ...request.scopes])].filter((s) => s !== '')
    return client.authCode.authorizeUrl({
      ...request.extra,
      ...d.authorizeParams,
      ...(scopes.length === 0 ? {} : { scope: scopes.join(d.scopeSeparator ?? ' ') }),
      ...(d.nonce === true ? { nonce: nonceFor(request.state) } : {}),
      ...(this.pkce && request.codeChallenge !== undefined
        ? { code_challenge: request.codeChallenge, code_challenge_method: 'S256' }
        : {}),
      state: request.state,
    })
  }

  async exchange(
    callback: Readonly<Record<string, string>>,
    pkce?: { readonly codeVerifier: string },
  ): Promise<ProviderTokens> {
    try {
      const client = await this.#client()
      const token = await client.authCode.getToken(
        callback.code ?? '',
        this.pkce && pkce !== undefined ? { code_verifier: pkce.codeVerifier } : {},
      )
      return {
        accessToken: token.token,
        refreshToken: token.refreshToken ?? '',
        params: token.params,
      }
    } catch (error) {
      throw new ProviderFailure('token', error)
    }
  }

  async getUserData(
    tokens: ProviderTokens,
    callback: Readonly<Record<string, string>>,
    state: string,
  ): Promise<ProviderUserData> {
    try {
      const client = await this.#client()
      return await this.#description.readUser(
        userApi(client, tokens.accessToken),
        tokens,
        callback,
        state,
      )
    } catch (error) {
      throw error instanceof ProviderFailure ? error : new ProviderFailure('user', error)
    }
  }
}

/** A profile that lacks what the provider must send. */
export class MalformedProfileError extends Error {
  constructor(what: string) {
    super(`the provider's profile ${what}`)
    this.name = 'MalformedProfileError'
  }
}

/** `value` as an object, or a {@link MalformedProfileError}. */
export function record(value: unknown, what = 'is not a JSON object'): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new MalformedProfileError(what)
  }
  return value as Record<string, unknown>
}

/** `value` as an array of objects (others dropped), or a {@link MalformedProfileError}. */
export function records(value: unknown, what = 'is not a JSON array'): Record<string, unknown>[] {
  if (!Array.isArray(value)) throw new MalformedProfileError(what)
  return value.filter(
    (v): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v),
  )
}

/** A string field, `''` when absent or not a string. */
export function text(object: Record<string, unknown> | undefined, key: string): string {
  const value = object?.[key]
  return typeof value === 'string' ? value : ''
}

/** A boolean field (`"true"` counts), false when absent. */
export function flag(object: Record<string, unknown> | undefined, key: string): boolean {
  const value = object?.[key]
  return value === true || value === 'true'
}

/** The user's id at the provider (a non-empty string or an integer), else a {@link MalformedProfileError}. */
export function idOf(object: Record<string, unknown> | undefined, key: string): string {
  const value = object?.[key]
  if (typeof value === 'string' && value !== '') return value
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value)
  throw new MalformedProfileError(`has no ${key}`)
}

/** Claims without empty values (upstream's `omitempty`). */
function claims(values: Readonly<Record<string, unknown>>): JsonObject {
  const out: JsonObject = {}
  for (const [key, value] of Object.entries(values)) {
    if (value === undefined || value === '' || value === null) continue
    out[key] = value
  }
  return out
}

/** What a provider module says about the user, for {@link profileClaims}. */
export interface Profile {
  /** The provider's issuer or API base (`iss`). */
  readonly iss: string
  /** The user's id at the provider (`sub` and `provider_id`). */
  readonly id: string
  readonly name: string
  /** `full_name` when it differs from `name`. @default name */
  readonly fullName?: string
  /** The picture URL (`avatar_url` and `picture`). */
  readonly avatar?: string
  readonly userName?: string
  readonly preferredUsername?: string
  readonly nickname?: string
  /** Provider-specific claims (`custom_claims`, left out when empty). */
  readonly custom?: Readonly<Record<string, unknown>> | undefined
}

/**
 * The identity's claims (upstream `provider.Claims`, empty values left out): `iss`, `sub`,
 * `name`, `full_name`, `avatar_url`, `picture`, `user_name`, `preferred_username`, `nickname`,
 * `provider_id`, `custom_claims`.
 */
export function profileClaims(p: Profile): JsonObject {
  const custom = p.custom === undefined ? {} : claims(p.custom)
  return claims({
    iss: p.iss,
    sub: p.id,
    name: p.name,
    full_name: p.fullName ?? p.name,
    avatar_url: p.avatar,
    picture: p.avatar,
    user_name: p.userName,
    preferred_username: p.preferredUsername,
    nickname: p.nickname,
    provider_id: p.id,
    custom_claims: Object.keys(custom).length === 0 ? undefined : custom,
  })
}

/**
 * One primary email address, or none when it is empty.
 *
 * @param verified Whether the provider says the address is verified.
 */
export function emailOf(email: string, verified: boolean): ProviderEmail[] {
  return email === '' ? [] : [{ email, verified, primary: true }]
}

/**
 * The primary address of a provider that does not say whether it verified it: counted as
 * verified (as upstream counts it) but {@link ProviderEmail.assumed}, so it links to no existing
 * account, unless `EXTERNAL_<P>_TRUST_EMAIL` trusts the provider.
 */
export function assumedEmailOf(ctx: ProviderContext, email: string): ProviderEmail[] {
  return email === ''
    ? []
    : [
        {
          email,
          verified: true,
          primary: true,
          assumed: !('trustEmail' in ctx.config && ctx.config.trustEmail),
        },
      ]
}
