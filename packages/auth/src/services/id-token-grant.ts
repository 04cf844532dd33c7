/**
 * The `id_token` grant of `POST /token` (auth-js `signInWithIdToken`, and `linkIdentity` with a
 * token): an ID token a native app got from Apple, Google, Azure, Facebook, Kakao, Keycloak or
 * Snapchat, verified against its issuer's keys, signs its user in (or links its identity to the
 * signed-in user) by the same rules as `/callback`.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/token_oidc.go
 * @module
 */
import { createHash } from 'node:crypto'
import { decodeJwt } from 'jose'
import type { AppContext, RequestContext } from '../context.js'
import { InternalServerError, OAuthJsonError } from '../errors.js'
import type { JsonObject } from '../models/json.js'
import type { User } from '../models/user.js'
import { idTokenUserData, resolveIdTokenIssuer } from '../provider/id-token.js'
import type { IssuedSession } from '../sessions/token-service.js'
import { finishIdentitySignIn, signInWithIdentity } from './shared/identities.js'
import type { NotificationLog } from './shared/notifications.js'

/** The fields of an `id_token` grant (upstream `IdTokenGrantParams`); absent ones are `''`. */
export interface IdTokenGrantParams {
  readonly idToken: string
  /** The access token issued with the ID token, checked against `at_hash` when given. */
  readonly accessToken: string
  /** The raw nonce; the token's `nonce` claim is its SHA-256 in hex. */
  readonly nonce: string
  readonly provider: string
  readonly clientId: string
  readonly issuer: string
}

/** The unverified claims of a compact JWS, `undefined` when it cannot be read. */
function unverifiedClaims(idToken: string): JsonObject | undefined {
  try {
    return decodeJwt(idToken)
  } catch {
    return undefined
  }
}

/** Go's `%v` of a string list: `[a b]`. */
function goList(values: unknown): string {
  const list = Array.isArray(values) ? values : [values]
  return `[${list.map(String).join(' ')}]`
}

/**
 * Checks the ID token and signs its user in, or links its identity to `linkingTarget` (upstream
 * `IdTokenGrant`):
 * 1. the provider from `provider` or `issuer` (see `idTokenIssuerOf`; `custom:<name>` from
 *    `ctx.customIdTokenIssuers`);
 * 2. the signature against the issuer's discovered keys, `alg` among those it advertises, `iss`,
 *    `exp`, `iat`, `sub`; `at_hash` when `access_token` is given;
 * 3. `aud` one of the provider's client ids;
 * 4. the nonce: the token's and the request's both present or both absent, and the token's the
 *    SHA-256 (hex) of the request's (not for Facebook, as upstream);
 * 5. the user found, linked or created as `/callback` does it, and a session (`amr` `oauth`).
 *
 * @param linkingTarget The signed-in user (`link_identity`), or `undefined` to sign in.
 * @throws {@link OAuthJsonError} upstream's `{error: "invalid request", error_description}`
 *   refusals ("id_token required", "Bad ID token", "Unacceptable audience in id_token: […]",
 *   "Passed nonce and nonce in id_token should either both exist or not.", `invalid nonce`
 *   "Nonces mismatch"); `BadRequestError` `validation_failed` or `provider_disabled` for the
 *   provider; the sign-in's errors (`signup_disabled`, `email_exists`, `user_banned`, 422
 *   `provider_email_needs_verification`, `identity_already_exists`).
 */
export async function idTokenGrant(
  ctx: AppContext,
  params: IdTokenGrantParams,
  linkingTarget: User | undefined,
  client: RequestContext,
  log: NotificationLog,
): Promise<IssuedSession> {
  if (params.idToken === '') throw new OAuthJsonError('invalid request', 'id_token required')
  if (params.provider === '' && (params.clientId === '' || params.issuer === '')) {
    throw new OAuthJsonError('invalid request', 'provider or client_id and issuer required')
  }
  const issuer = await resolveIdTokenIssuer(ctx.settings, params, ctx.customIdTokenIssuers)
  let verifier
  try {
    verifier = await ctx.providers.idTokenClient(issuer)
  } catch (error) {
    throw new InternalServerError('unexpected_failure', 'Error getting OIDC provider', {
      cause: error,
    })
  }
  const unverified = unverifiedClaims(params.idToken)
  const tokenNonce = typeof unverified?.nonce === 'string' ? unverified.nonce : undefined
  const aud = unverified?.aud
  const audiences = (Array.isArray(aud) ? aud : [aud]).filter(
    (a): a is string => typeof a === 'string' && a !== '',
  )
  let claims: JsonObject
  try {
    // The audience and the nonce are compared below, with upstream's answers: here the token's
    // own are passed so that the signature, issuer, times and at_hash decide.
    claims = await verifier.verifyIdToken(params.idToken, {
      audiences: audiences.length === 0 ? ['-'] : audiences,
      nonce: tokenNonce ?? null,
      accessTokenHash: 'when-given',
      ...(params.accessToken === '' ? {} : { accessToken: params.accessToken }),
      clockTolerance: 30,
    })
  } catch (error) {
    throw new OAuthJsonError('invalid request', 'Bad ID token', { cause: error })
  }
  if (typeof claims.sub !== 'string' || claims.sub === '') {
    throw new OAuthJsonError('invalid request', 'Missing sub claim in id_token')
  }
  if (!audiences.some((a) => issuer.clientIds.includes(a))) {
    throw new OAuthJsonError(
      'invalid request',
      `Unacceptable audience in id_token: ${goList(claims.aud)}`,
    )
  }
  if (!issuer.skipNonceCheck) {
    if ((tokenNonce !== undefined) !== (params.nonce !== '')) {
      throw new OAuthJsonError(
        'invalid request',
        'Passed nonce and nonce in id_token should either both exist or not.',
      )
    }
    if (
      tokenNonce !== undefined &&
      createHash('sha256').update(params.nonce).digest('hex') !== tokenNonce
    ) {
      throw new OAuthJsonError('invalid nonce', 'Nonces mismatch')
    }
  }
  const data = idTokenUserData(issuer.provider, claims)
  issuer.checkUser?.(data)
  const now = ctx.clock.now()
  const result = await ctx.db.transaction(async (tx) => {
    const identity = await signInWithIdentity(
      ctx,
      tx,
      {
        provider: issuer.provider,
        data,
        linkingTargetId: linkingTarget?.id,
        referrer: ctx.settings.siteUrl,
      },
      client,
      now,
    )
    if (identity.needsVerification) return { identity, pending: undefined }
    return { identity, pending: await ctx.tokens.startSession(tx, identity.user, 'oauth', client) }
  })
  await finishIdentitySignIn(ctx, result.identity, issuer.provider, client, log)
  if (result.pending === undefined) throw new Error('unreachable: no session')
  return ctx.tokens.finish(result.pending)
}
