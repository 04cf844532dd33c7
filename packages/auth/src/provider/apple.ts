import { Client } from '@gatehouse/oauth2'
import { PROVIDER_PRESETS } from '@gatehouse/oauth2/providers'
import { SignJWT, importPKCS8 } from 'jose'
import {
  discoveredClient,
  endpointsOf,
  presetProvider,
  primaryClientId,
  type ProviderContext,
} from './base.js'
import type { OAuthProvider } from './oauth-provider.js'

/**
 * Apple: the `apple` preset of `@gatehouse/oauth2/providers` (OIDC discovery from
 * `https://appleid.apple.com` or `EXTERNAL_APPLE_URL`, a `form_post` response with the `user`
 * field on the first sign-in, the user from the checked ID token). `EXTERNAL_APPLE_SECRET` is the
 * client-secret JWT, or an ES256 private key (PEM) from which one is signed per request as the
 * preset says (`iss` team id, `sub` client id, `aud` the issuer, `kid` key id).
 *
 * @see https://developer.apple.com/documentation/sign_in_with_apple/generate_and_validate_tokens
 */
export function apple(ctx: ProviderContext): OAuthProvider {
  const preset = PROVIDER_PRESETS.apple
  const issuer = endpointsOf(ctx, preset).issuer ?? ''
  const discovered = discoveredClient(ctx, issuer)
  const pem = ctx.config.secret.includes('-----BEGIN') ? ctx.config.secret : undefined
  const jwt = preset.clientSecretJwt
  const key = pem === undefined || jwt === undefined ? undefined : importPKCS8(pem, jwt.algorithm)
  async function client(): Promise<Client> {
    const base = await discovered()
    if (key === undefined || jwt === undefined) return base
    const now = Math.floor(ctx.clock.now() / 1000)
    const secret = await new SignJWT({})
      .setProtectedHeader({ alg: jwt.algorithm, kid: ctx.apple?.keyId ?? '' })
      .setIssuer(ctx.apple?.teamId ?? '')
      .setSubject(primaryClientId(ctx.config))
      .setAudience(issuer)
      .setIssuedAt(now)
      .setExpirationTime(now + jwt.lifetimeSeconds)
      .sign(await key)
    return new Client(primaryClientId(ctx.config), secret, { ...base.options })
  }
  return presetProvider(ctx, 'apple', { client })
}
