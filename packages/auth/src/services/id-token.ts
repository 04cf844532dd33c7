/**
 * `POST /token?grant_type=id_token`: sign-in (auth-js `signInWithIdToken`) or identity linking
 * (`linkIdentity({ provider, token })`, `link_identity: true` with the user's access token) with
 * an ID token a native app obtained from the provider itself (Sign in with Apple, Google
 * Sign-In, MSAL, …).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/token_oidc.go
 * @module
 */
import { createHash } from 'node:crypto'
import { OAuth2Error, type Client, type IdTokenClaims } from '@gatehouse/oauth2'
import type { AppContext, RequestContext } from '../context.js'
import { ForbiddenError, InternalServerError, OAuthRequestError } from '../errors.js'
import {
  idTokenUserData,
  resolveIdTokenProvider,
  type IdTokenProvider,
} from '../provider/id-token.js'
import type { IssuedSession } from '../sessions/token-service.js'
import { afterIdentitySignIn } from './external.js'
import { authenticateUser } from './shared/authentication.js'
import { signInWithIdentity } from './shared/identities.js'
import type { NotificationLog } from './shared/notifications.js'

/** The body of the grant (absent fields `''`), and the request's bearer token for a link. */
export interface IdTokenGrantParams {
  readonly idToken: string
  /** Checked against the token's `at_hash` when given. */
  readonly accessToken: string
  /** The raw nonce; the token's `nonce` claim is its SHA-256, hex. */
  readonly nonce: string
  readonly provider: string
  readonly clientId: string
  readonly issuer: string
  readonly linkIdentity: boolean
  /** The `Authorization` bearer token (`undefined` when none), needed to link. */
  readonly bearer: string | undefined
}

/** Seconds of clock skew tolerated for `exp` and `iat`. */
const CLOCK_TOLERANCE_SECONDS = 30

/** Verifies the token with the provider's discovered keys (upstream answers any failure alike). */
async function verify(
  ctx: AppContext,
  provider: IdTokenProvider,
  params: IdTokenGrantParams,
): Promise<IdTokenClaims> {
  const clientIds = provider.clientIds.filter((id) => id !== '')
  let client: Client
  try {
    client = await ctx.idTokenIssuers.client(provider.discoveryIssuer)
  } catch (error) {
    // Upstream answers a failed discovery with a 500 too.
    throw new InternalServerError(
      'unexpected_failure',
      "Error reading the ID token issuer's OpenID Connect metadata",
      { cause: error },
    )
  }
  try {
    return await client.verifyIdToken(params.idToken, {
      issuer: provider.issuers,
      // No client id: every audience is refused below, as upstream.
      audience: clientIds.length === 0 ? ['\u0000'] : clientIds,
      skipNonceCheck: true,
      atHashOptional: true,
      ...(params.accessToken === '' ? {} : { accessToken: params.accessToken }),
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
    })
  } catch (error) {
    if (error instanceof OAuth2Error && /\baud\b/.test(error.description ?? '')) {
      throw new OAuthRequestError(
        'invalid request',
        `Unacceptable audience in id_token: ${audienceText(params.idToken)}`,
        { cause: error },
      )
    }
    throw new OAuthRequestError('invalid request', 'Bad ID token', { cause: error })
  }
}

/** The token's `aud` as upstream prints it (`[a b]`), read only for the error text. */
function audienceText(idToken: string): string {
  try {
    const part = idToken.split('.')[1] ?? ''
    const aud: unknown = (
      JSON.parse(Buffer.from(part, 'base64url').toString()) as { aud?: unknown }
    ).aud
    const list = Array.isArray(aud) ? aud : [aud]
    return `[${list.filter((a) => typeof a === 'string').join(' ')}]`
  } catch {
    return '[]'
  }
}

/**
 * Upstream's nonce rule: the request's nonce and the token's are both present or both absent,
 * and the token's is the SHA-256 (hex) of the request's.
 */
function checkNonce(provider: IdTokenProvider, claims: IdTokenClaims, nonce: string): void {
  if (provider.skipNonceCheck) return
  const tokenNonce = typeof claims.nonce === 'string' ? claims.nonce : ''
  if ((tokenNonce !== '') !== (nonce !== '')) {
    throw new OAuthRequestError(
      'invalid request',
      'Passed nonce and nonce in id_token should either both exist or not.',
    )
  }
  if (nonce !== '' && createHash('sha256').update(nonce).digest('hex') !== tokenNonce) {
    throw new OAuthRequestError('invalid nonce', 'Nonces mismatch')
  }
}

/**
 * Runs the grant: checks the request, authenticates the user for a link, resolves the provider,
 * verifies the token (signature with the issuer's JWKS, `alg` among the advertised ones, `iss`,
 * `aud` one of the provider's client ids, `exp`/`iat`, `at_hash` when `access_token` is given),
 * compares the nonce, then finds, creates or links the user by the linking rules of `/callback`
 * and starts a session.
 *
 * @throws {@link InternalServerError} `unexpected_failure` when the issuer's metadata cannot be
 *   read (unreachable, too large, malformed), as upstream answers 500.
 * @throws {@link OAuthRequestError} upstream's `invalid request` texts ("id_token required",
 *   "Bad ID token", "Unacceptable audience in id_token: […]", …) and `invalid nonce` "Nonces
 *   mismatch"; `BadRequestError` `validation_failed`/`provider_disabled` from the provider's
 *   resolution; the authentication errors of a link; the linking rules' errors.
 */
export async function idTokenGrant(
  ctx: AppContext,
  params: IdTokenGrantParams,
  client: RequestContext,
  log: NotificationLog,
): Promise<IssuedSession> {
  if (params.idToken === '') throw new OAuthRequestError('invalid request', 'id_token required')
  if (params.provider === '' && (params.clientId === '' || params.issuer === '')) {
    throw new OAuthRequestError('invalid request', 'provider or client_id and issuer required')
  }
  let linking: { userId: string } | undefined
  if (params.linkIdentity) {
    if (params.bearer === undefined) {
      throw new OAuthRequestError(
        'invalid request',
        'Linking requires a valid user access token in Authorization',
      )
    }
    const { user } = await authenticateUser(ctx, params.bearer)
    if (!ctx.settings.security.manualLinkingEnabled) {
      throw new ForbiddenError('manual_linking_disabled', 'Manual linking is disabled')
    }
    linking = { userId: user.id }
  }
  const provider = await resolveIdTokenProvider(ctx.settings, params, ctx.idTokenProviders)
  const claims = await verify(ctx, provider, params)
  if (claims.sub === '') {
    throw new OAuthRequestError('invalid request', 'Missing sub claim in id_token')
  }
  checkNonce(provider, claims, params.nonce)
  const data = idTokenUserData(provider, claims)
  const result = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const identity = await signInWithIdentity(
      ctx,
      tx,
      {
        provider: provider.name,
        data,
        linkingTargetId: linking?.userId,
        referrer: ctx.settings.siteUrl,
      },
      client,
      now,
    )
    if (identity.needsVerification) return { identity, pending: undefined }
    return { identity, pending: await ctx.tokens.startSession(tx, identity.user, 'oauth', client) }
  })
  await afterIdentitySignIn(ctx, provider.name, result.identity, log)
  if (result.pending === undefined) throw new Error('unreachable: no session')
  return ctx.tokens.finish(result.pending)
}
