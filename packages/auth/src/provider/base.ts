/**
 * The shared base of the OAuth 2.0 providers: every exchange goes through `@gatehouse/oauth2`
 * (its authorization URLs, token requests, user-info requests, OIDC discovery and ID-token
 * checks); a provider module only gives its endpoints, scopes and how its profile maps to claims.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/provider/provider.go
 * @module
 */
import { createHash } from 'node:crypto'
import { Client, type ClientOptions, type FetchLike, type IdTokenClaims } from '@gatehouse/oauth2'
import {
  PROVIDER_PRESETS,
  type ProviderEndpoints,
  type ProviderPreset,
  type ProviderProfile,
} from '@gatehouse/oauth2/providers'
import type { Clock } from '../clock.js'
import type { ProviderSettings } from '../conf/settings.js'
import type { ExternalProvider } from './names.js'
import type { JsonObject } from '../models/json.js'
import {
  ProviderFailure,
  type AuthorizeRequest,
  type OAuthProvider,
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

/** `EXTERNAL_<P>_CLIENT_ID` as the list upstream reads it (comma-separated). */
export function clientIdsOf(clientId: string): string[] {
  return clientId
    .split(',')
    .map((id) => id.trim())
    .filter((id) => id !== '')
}

/**
 * The client id the code flow uses: the first of `EXTERNAL_<P>_CLIENT_ID` (upstream
 * `ClientID[0]`; the others are native apps' ids, for the `id_token` grant).
 */
export function primaryClientId(config: { readonly clientId: string }): string {
  return clientIdsOf(config.clientId)[0] ?? ''
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
  return new Client(primaryClientId(ctx.config), ctx.config.secret, {
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
    client ??= Client.discover(issuer, primaryClientId(ctx.config), ctx.config.secret, {
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
  json(
    url: string,
    options?: { headers?: Record<string, string>; params?: Record<string, string> },
  ): Promise<unknown>
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
        ...(options.params === undefined ? {} : { params: options.params }),
        raiseErrors: true,
        snaky: false,
      })
      return response.parsed
    },
  }
}

/** How an OAuth 2.0 provider differs from the others. */
export interface OAuth2Description {
  readonly name: ExternalProvider | `custom:${string}`
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
  readonly name: ExternalProvider | `custom:${string}`
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
 * The verified claims of the ID token in `tokens`.
 *
 * @param state The signed state the authorization request was sent with (its nonce is derived).
 * @throws {@link MalformedProfileError} Without an `id_token`; the library's `invalid_id_token`
 *   error when a check fails.
 */
export async function verifiedIdToken(
  client: Client,
  tokens: ProviderTokens,
  state: string,
): Promise<IdTokenClaims> {
  const idToken = tokens.params.id_token
  if (typeof idToken !== 'string' || idToken === '') {
    throw new MalformedProfileError('has no id_token')
  }
  return client.verifyIdToken(idToken, {
    nonce: nonceFor(state),
    accessToken: tokens.accessToken,
    clockTolerance: 30,
  })
}

/**
 * The user of a preset's profile: its addresses (one the provider does not say it verified counts
 * as verified, as upstream counts it, but is `assumed` (see `ProviderEmail`), so it links to no
 * existing account, unless `EXTERNAL_<P>_TRUST_EMAIL` trusts the provider) and its claims.
 */
export function userDataOf(ctx: ProviderContext, profile: ProviderProfile): ProviderUserData {
  return {
    id: profile.sub,
    emails: profile.emails.map(({ email, verified, primary }) =>
      verified === undefined
        ? {
            email,
            verified: true,
            primary,
            assumed: !('trustEmail' in ctx.config && ctx.config.trustEmail),
          }
        : { email, verified, primary },
    ),
    claims: profileClaims({
      iss: profile.iss,
      id: profile.sub,
      name: profile.name,
      fullName: profile.full_name,
      avatar: profile.picture,
      userName: profile.user_name,
      preferredUsername: profile.preferred_username,
      nickname: profile.nickname,
      custom: profile.custom,
    }),
  }
}

/** The endpoints of a preset for `EXTERNAL_<P>_URL` (its public hosts when empty). */
export function endpointsOf(ctx: ProviderContext, preset: ProviderPreset): ProviderEndpoints {
  return preset.endpoints(ctx.config.url === '' ? undefined : ctx.config.url)
}

/**
 * Reads the user as the preset says: the ID token (checked, when the preset has one, or the
 * response carries one), the preset's profile requests with the access token, in order, and its
 * mapping to claims.
 *
 * @param idTokenClient The client that checks the ID token. @default the provider's client
 */
export async function readPresetUser(
  ctx: ProviderContext,
  preset: ProviderPreset,
  endpoints: ProviderEndpoints,
  api: UserApi,
  tokens: ProviderTokens,
  callback: Readonly<Record<string, string>>,
  state: string,
  idTokenClient: Client = api.client,
): Promise<ProviderUserData> {
  const checkIdToken =
    preset.idToken !== undefined &&
    (preset.idToken.required || tokens.params.id_token !== undefined)
  const idToken = checkIdToken ? await verifiedIdToken(idTokenClient, tokens, state) : undefined
  const requests = preset.profileRequests(endpoints, {
    clientId: primaryClientId(ctx.config),
    clientSecret: ctx.config.secret,
    accessToken: tokens.accessToken,
  })
  const responses: Record<string, unknown> = {}
  for (const [name, request] of Object.entries(requests)) {
    const options = {
      ...(request.headers === undefined ? {} : { headers: { ...request.headers } }),
      ...(request.params === undefined ? {} : { params: { ...request.params } }),
    }
    responses[name] =
      request.kind === 'object'
        ? await api.object(request.url, options)
        : await api.json(request.url, options)
  }
  return userDataOf(
    ctx,
    preset.profile({ responses, idToken, tokenResponse: tokens.params, callback, endpoints }),
  )
}

/**
 * The OAuth 2.0 provider of a preset (`@gatehouse/oauth2/providers`), the one source of provider
 * facts: its endpoints for `EXTERNAL_<P>_URL`, scopes, authorization parameters, PKCE, the nonce
 * and ID token of OpenID providers, and its profile mapping.
 *
 * @param hooks `client`: the client (or a function discovering it) instead of the preset's;
 *   `idTokenClient`: the client that checks the ID token (Azure's tenant client).
 */
export function presetProvider(
  ctx: ProviderContext,
  name: ExternalProvider,
  hooks: {
    readonly client?: Client | (() => Promise<Client>)
    readonly idTokenClient?: (tokens: ProviderTokens) => Client
  } = {},
): OAuthProvider {
  const preset = PROVIDER_PRESETS[name]
  const endpoints = endpointsOf(ctx, preset)
  const client =
    hooks.client ??
    (preset.idToken?.discovery === true
      ? discoveredClient(ctx, endpoints.issuer ?? endpoints.api)
      : oauth2Client(ctx, {
          authorizeUrl: endpoints.authorizeUrl,
          tokenUrl: endpoints.tokenUrl,
          authScheme: preset.authScheme,
          ...(endpoints.metadata === undefined ? {} : { metadata: endpoints.metadata }),
        }))
  return new OAuth2Provider({
    name,
    client,
    scopes: preset.scopes,
    authorizeParams: preset.authorizeParams,
    nonce: preset.idToken !== undefined,
    pkce: preset.pkce !== false,
    readUser: (api, tokens, callback, state) =>
      readPresetUser(
        ctx,
        preset,
        endpoints,
        api,
        tokens,
        callback,
        state,
        hooks.idTokenClient?.(tokens),
      ),
  })
}
