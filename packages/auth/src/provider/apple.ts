import { Client } from '@gatehouse/oauth2'
import { SignJWT, importPKCS8 } from 'jose'
import {
  OAuth2Provider,
  profileClaims,
  discoveredClient,
  emailOf,
  flag,
  idOf,
  text,
  trimSlash,
  type ProviderContext,
} from './base.js'
import type { OAuthProvider } from './oauth-provider.js'
import { verifiedIdToken } from './oidc.js'

/** Lifetime of a client-secret JWT signed for one request, seconds. */
const SECRET_LIFETIME = 300

/** The name in Apple's `user` form field (sent on the first sign-in only), or `''`. */
function nameFromUserField(field: string | undefined): string {
  if (field === undefined || field === '') return ''
  try {
    const user = JSON.parse(field) as { name?: { firstName?: unknown; lastName?: unknown } }
    const first = typeof user.name?.firstName === 'string' ? user.name.firstName : ''
    const last = typeof user.name?.lastName === 'string' ? user.name.lastName : ''
    return `${first} ${last}`.trim()
  } catch {
    return ''
  }
}

/**
 * Apple: found by OIDC discovery from `https://appleid.apple.com` (or `EXTERNAL_APPLE_URL`);
 * the authorization response is a `form_post` to `/callback`, with a `user` JSON field (the
 * name) on the first sign-in only. The user comes from the checked ID token (`sub`, `email`,
 * `email_verified`, `is_private_email`). `EXTERNAL_APPLE_SECRET` is the client-secret JWT, or an
 * ES256 private key (PEM) from which one is signed per request (`iss` team id, `sub` client id,
 * `aud` the issuer, `kid` key id, 5 minutes). Scopes `email name`. No PKCE (Apple does not
 * document it).
 *
 * @see https://developer.apple.com/documentation/sign_in_with_apple/generate_and_validate_tokens
 */
export function apple(ctx: ProviderContext): OAuthProvider {
  const issuer = trimSlash(ctx.config.url === '' ? 'https://appleid.apple.com' : ctx.config.url)
  const discovered = discoveredClient(ctx, issuer)
  const pem = ctx.config.secret.includes('-----BEGIN') ? ctx.config.secret : undefined
  const key = pem === undefined ? undefined : importPKCS8(pem, 'ES256')
  async function client(): Promise<Client> {
    const base = await discovered()
    if (key === undefined) return base
    const now = Math.floor(ctx.clock.now() / 1000)
    const secret = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: ctx.apple?.keyId ?? '' })
      .setIssuer(ctx.apple?.teamId ?? '')
      .setSubject(ctx.config.clientId)
      .setAudience(issuer)
      .setIssuedAt(now)
      .setExpirationTime(now + SECRET_LIFETIME)
      .sign(await key)
    return new Client(ctx.config.clientId, secret, { ...base.options })
  }
  return new OAuth2Provider({
    name: 'apple',
    client,
    scopes: ['email', 'name'],
    authorizeParams: { response_mode: 'form_post' },
    nonce: true,
    async readUser(user, tokens, callback, state) {
      const token = await verifiedIdToken(user.client, tokens, state)
      const id = idOf(token, 'sub')
      const name = nameFromUserField(callback.user)
      return {
        id,
        emails: emailOf(text(token, 'email'), flag(token, 'email_verified')),
        claims: profileClaims({
          iss: token.iss,
          id,
          name,
          custom: flag(token, 'is_private_email') ? { is_private_email: true } : undefined,
        }),
      }
    },
  })
}
