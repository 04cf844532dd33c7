/**
 * ID-token helpers of the OIDC providers (Apple, Azure, Google, Keycloak): the token response's
 * `id_token` checked by `@gatehouse/oauth2` (signature from the provider's JWKS, `iss`, `aud`,
 * `exp`, `iat`, `at_hash`, and the `nonce` derived from the state).
 *
 * @module
 */
import type { Client, IdTokenClaims } from '@gatehouse/oauth2'
import { MalformedProfileError, nonceFor } from './base.js'
import type { ProviderTokens } from './oauth-provider.js'

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
