/**
 * The interface every external provider implements for `/authorize` and `/callback`, and the
 * shapes it answers with (upstream `internal/api/provider/provider.go`).
 *
 * @module
 */
import type { ExternalProvider } from './names.js'
import { InternalServerError } from '../errors.js'
import type { JsonObject } from '../models/json.js'

/** One email address a provider reports, with its flags. */
export interface ProviderEmail {
  readonly email: string
  /** Whether the provider says the address is verified (its owner proved it). */
  readonly verified: boolean
  /** Whether it is the account's primary address. */
  readonly primary: boolean
  /**
   * `verified` is the provider module's assumption, not the provider's statement (the provider
   * does not say whether it verified the address, and `EXTERNAL_<P>_TRUST_EMAIL` is off): the
   * address may confirm a new user's email, as upstream, but never links the identity to an
   * existing account.
   */
  readonly assumed?: boolean
}

/**
 * What a provider says about the user (upstream `provider.UserProvidedData`): its email
 * addresses and the claims stored as the identity's `identity_data` (upstream `provider.Claims`:
 * `iss, sub, name, full_name, avatar_url, picture, email, email_verified, phone_verified,
 * provider_id, preferred_username, user_name, slug, nickname, custom_claims`, plus
 * provider-specific keys). `email` and `email_verified` are filled in by the caller from the
 * chosen address.
 */
export interface ProviderUserData {
  /** The user's id at the provider (`sub`, `provider_id`): the identity's `provider_id`. */
  readonly id: string
  readonly emails: readonly ProviderEmail[]
  readonly claims: JsonObject
}

/** Tokens from a provider's token endpoint, and what else its response carried. */
export interface ProviderTokens {
  /** The access token: `provider_token` in the redirect. */
  readonly accessToken: string
  /** The refresh token (`''` when none): `provider_refresh_token`. */
  readonly refreshToken: string
  /** Other fields of the token response (`id_token`, WorkOS's `profile`, …). */
  readonly params: Readonly<Record<string, unknown>>
}

/** What `/authorize` asks a provider for. */
export interface AuthorizeRequest {
  /** The signed `state`. */
  readonly state: string
  /**
   * The S256 PKCE challenge (RFC 7636) to send, for providers with {@link OAuthProvider.pkce};
   * its verifier comes back to {@link OAuthProvider.exchange}.
   */
  readonly codeChallenge?: string | undefined
  /** `scopes` of the request, added to the provider's defaults. */
  readonly scopes: readonly string[]
  /** Other query parameters of `/authorize`, forwarded to the provider (upstream). */
  readonly extra: Readonly<Record<string, string>>
}

/**
 * An external provider: builds its authorization URL, exchanges what comes back to `/callback`
 * for tokens and reads the user with them. Built from the settings by `providerFor` in
 * `provider/registry.ts`.
 */
export interface OAuthProvider {
  /** Identifier, such as `github`, or a custom provider's `custom:<name>`. */
  readonly name: ExternalProvider | `custom:${string}`
  /**
   * Whether the provider supports PKCE (RFC 7636, S256): its authorization request then carries
   * `code_challenge` and its token request `code_verifier` (upstream sends PKCE to X only).
   */
  readonly pkce: boolean
  /**
   * The URL to send the browser to (OAuth 1.0a providers first fetch a request token).
   *
   * @throws {@link ProviderFailure} When the provider cannot be reached.
   */
  authorizeUrl(request: AuthorizeRequest): Promise<string>
  /**
   * Exchanges the callback's parameters (`code`; Twitter's `oauth_token` and `oauth_verifier`)
   * for tokens.
   *
   * @param callback The query (or `form_post` body) of `/callback`.
   * @param pkce The PKCE verifier of the authorization request, for providers with
   *   {@link OAuthProvider.pkce}.
   * @throws {@link ProviderFailure} When the provider refuses or fails.
   */
  exchange(
    callback: Readonly<Record<string, string>>,
    pkce?: { readonly codeVerifier: string },
  ): Promise<ProviderTokens>
  /**
   * Reads the user behind the tokens (ID token, user-info endpoints or the token response).
   *
   * @param callback The callback's parameters (Apple's `user` JSON).
   * @param state The verified `state`: OIDC providers check the ID token's `nonce` against it.
   * @throws {@link ProviderFailure} When the provider call fails or answers something unusable.
   */
  getUserData(
    tokens: ProviderTokens,
    callback: Readonly<Record<string, string>>,
    state: string,
  ): Promise<ProviderUserData>
}

/** Upstream's public text for each failing provider call. */
const FAILURE_MESSAGES = {
  authorize: 'Error getting the authorization URL from external provider',
  token: 'Unable to exchange external code',
  user: 'Error getting user profile from external provider',
} as const

/**
 * A provider call that failed (HTTP 500 `unexpected_failure`; `/callback` redirects it as
 * `server_error`): the provider refused the code, answered 5xx, or sent a profile without the
 * fields it must have. `stage` says which call; the private `cause` holds the library's error or
 * what was wrong.
 */
export class ProviderFailure extends InternalServerError {
  readonly stage: keyof typeof FAILURE_MESSAGES

  /**
   * @param stage The call that failed.
   * @param cause What went wrong (logged, never sent).
   */
  constructor(stage: keyof typeof FAILURE_MESSAGES, cause: unknown) {
    super('unexpected_failure', FAILURE_MESSAGES[stage], { cause })
    this.stage = stage
  }
}
