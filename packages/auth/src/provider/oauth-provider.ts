/** What an external provider says about the user (upstream `provider.Claims`). */
export interface ProviderUserData {
  readonly id: string
  readonly emails: readonly { email: string; verified: boolean; primary: boolean }[]
  readonly metadata: Readonly<Record<string, unknown>>
}

/** Tokens returned by a provider's token endpoint. */
export interface ProviderTokens {
  readonly accessToken: string
  readonly refreshToken: string
}

/**
 * An external OAuth 2.0 provider for `/authorize` and `/callback` (github, google, …), added by
 * the external-provider issue.
 */
export interface OAuthProvider {
  /** Identifier, such as `github`. */
  readonly name: string
  /** The provider's authorization URL for a `state`, with extra query parameters. */
  authCodeUrl(state: string, extra: Readonly<Record<string, string>>): string
  /**
   * Exchanges an authorization code for tokens.
   *
   * @throws {Error} When the provider rejects the code.
   */
  exchangeCode(code: string): Promise<ProviderTokens>
  /**
   * Reads the user behind an access token.
   *
   * @throws {Error} When the provider call fails.
   */
  getUserData(tokens: ProviderTokens): Promise<ProviderUserData>
}
