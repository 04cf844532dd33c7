/**
 * `@gatehouse/oauth2/providers`: presets for the identity providers the Gatehouse auth server
 * supports: endpoints (with the per-tenant and self-hosted forms), default scopes, PKCE and
 * refresh token support, quirks (Apple's `form_post` and client secret JWT, X's required PKCE,
 * GitHub without refresh tokens) and a mapping of each provider's profile to standard claims, with
 * whether the provider verified the email.
 *
 * @example
 * ```ts
 * import { Client, pkce } from '@gatehouse/oauth2'
 * import { PROVIDER_PRESETS, clientOptionsFor } from '@gatehouse/oauth2/providers'
 * const github = PROVIDER_PRESETS.github
 * const client = new Client('id', 'secret', clientOptionsFor(github, { redirect_uri: 'https://app.example/cb' }))
 * const { code_challenge, code_challenge_method } = pkce()
 * const url = client.authCode.authorizeUrl({ scope: github.scopes.join(' '), state: 's', code_challenge, code_challenge_method })
 * ```
 *
 * @packageDocumentation
 */
import { invalidValue } from '../args.js'
import type { ClientOptions } from '../client-options.js'
import { apple, azure, google, keycloak, linkedin_oidc, vercel_marketplace } from './openid.js'
import type { ProviderName, ProviderPreset } from './preset.js'
import {
  bitbucket,
  discord,
  facebook,
  figma,
  fly,
  github,
  gitlab,
  kakao,
  linkedin,
  notion,
  slack,
  slack_oidc,
  snapchat,
  spotify,
  twitch,
  workos,
  zoom,
} from './social.js'
import { twitter, x } from './twitter.js'

export type {
  ProfileInput,
  ProfileRequest,
  ProfileRequestContext,
  ProviderEndpoints,
  ProviderName,
  ProviderPreset,
  ProviderProfile,
  ProviderProfileEmail,
  RefreshSupport,
} from './preset.js'
export { NOTION_VERSION } from './social.js'
export {
  apple,
  azure,
  bitbucket,
  discord,
  facebook,
  figma,
  fly,
  github,
  gitlab,
  google,
  kakao,
  keycloak,
  linkedin,
  linkedin_oidc,
  notion,
  slack,
  slack_oidc,
  snapchat,
  spotify,
  twitch,
  twitter,
  vercel_marketplace,
  workos,
  x,
  zoom,
}

/** Every preset, by name. */
export const PROVIDER_PRESETS: Readonly<Record<ProviderName, ProviderPreset>> = Object.freeze({
  apple,
  azure,
  bitbucket,
  discord,
  facebook,
  figma,
  fly,
  github,
  gitlab,
  google,
  kakao,
  keycloak,
  linkedin,
  linkedin_oidc,
  notion,
  slack,
  slack_oidc,
  snapchat,
  spotify,
  twitch,
  twitter,
  vercel_marketplace,
  workos,
  x,
  zoom,
})

/**
 * The options of a {@link Client} for an OAuth 2.0 preset that is not discovered: its
 * authorization and token endpoints, its client authentication, `requirePkce` when the provider
 * requires PKCE, and the metadata its ID tokens are checked against (Keycloak); `options` win.
 * For OpenID providers with `idToken.discovery` (Google, Apple), use `Client.discover` with
 * `endpoints(url).issuer` instead.
 *
 * @param preset The provider.
 * @param options Other client options (`redirect_uri`, ...), and `url`: the provider's custom
 *   base URL (an instance, tenant or realm).
 * @throws {TypeError} `ERR_INVALID_ARG_VALUE` for an OAuth 1.0a preset (Twitter), or a missing
 *   required `url` (Keycloak).
 */
export function clientOptionsFor(
  preset: ProviderPreset,
  options: ClientOptions & { readonly url?: string } = {},
): ClientOptions {
  if (preset.protocol !== 'oauth2') {
    throw invalidValue(
      'preset',
      `is ${preset.name}, an OAuth 1.0a provider: this client speaks OAuth 2.0`,
    )
  }
  const { url, ...rest } = options
  const endpoints = preset.endpoints(url)
  return {
    authorizeUrl: endpoints.authorizeUrl,
    tokenUrl: endpoints.tokenUrl,
    authScheme: preset.authScheme,
    ...(preset.pkce === 'required' ? { requirePkce: true } : {}),
    ...(endpoints.metadata === undefined ? {} : { metadata: endpoints.metadata }),
    ...rest,
  }
}
