/**
 * Sign-in with an external provider: `/authorize` (and `/user/identities/authorize`) start it,
 * `/callback` finishes it with a session (implicit flow) or an auth code (PKCE flow).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/external.go
 * @module
 */
import type { AppContext, RequestContext } from '../context.js'
import { BadRequestError, UnprocessableEntityError } from '../errors.js'
import { findFlowStateById, insertFlowState, issueOAuthAuthCode } from '../models/flow-state.js'
import type { Queryable } from '../storage/db.js'
import type { IssuedSession } from '../tokens/service.js'
import { signInWithIdentity } from './identities.js'
import { sendNotification, type NotificationLog } from './notifications.js'
import { parsePkceChallenge, type PkceChallenge } from './pkce.js'
import { signState, verifyState, type OAuthState } from './oauth-state.js'

/** Query parameters of `/authorize` that are never forwarded to the provider (upstream). */
const NOT_FORWARDED = new Set([
  'provider',
  'scopes',
  'redirect_to',
  'client_id',
  'client_secret',
  'redirect_uri',
  'response_type',
  'state',
  'code_challenge',
  'code_challenge_method',
  'code_verifier',
  'skip_http_redirect',
  'invite_token',
])

/** What `/authorize` was asked; absent text fields are `''`. */
export interface ExternalAuthorizeParams {
  readonly provider: string
  /** `scopes`: comma- or space-separated, added to the provider's defaults. */
  readonly scopes: string
  /** Where to land afterwards: the request's `redirect_to`, already validated (else `SITE_URL`). */
  readonly redirectTo: string
  readonly codeChallenge: string
  readonly codeChallengeMethod: string
  /** Every query parameter (the ones upstream forwards are passed on to the provider). */
  readonly query: Readonly<Record<string, string>>
  /** The signed-in user to link the identity to (`/user/identities/authorize`). */
  readonly linkingTargetId?: string
}

/**
 * The one place an OAuth sign-in creates its PKCE `flow_state` row (`authentication_method`
 * `oauth`, a random auth code).
 *
 * @returns The flow state's id, which the signed state carries.
 */
export async function createOAuthFlowState(
  ctx: AppContext,
  provider: string,
  challenge: PkceChallenge,
): Promise<string> {
  const id = ctx.random.uuid()
  await insertFlowState(
    ctx.db,
    {
      id,
      userId: null,
      authCode: ctx.random.uuid(),
      codeChallenge: challenge.codeChallenge,
      codeChallengeMethod: challenge.codeChallengeMethod,
      providerType: provider,
      authenticationMethod: 'oauth',
    },
    ctx.clock.now(),
  )
  return id
}

/**
 * Starts an external sign-in: checks the provider and the PKCE parameters, creates the flow
 * state (PKCE), signs the state and asks the provider for its authorization URL.
 *
 * @returns The URL to send the browser to.
 * @throws {@link BadRequestError} `validation_failed` "Unsupported provider: …" or a PKCE
 *   problem; the provider's failure to answer (500).
 */
export async function startExternalSignIn(
  ctx: AppContext,
  params: ExternalAuthorizeParams,
): Promise<string> {
  const provider = ctx.providers.get(params.provider)
  const challenge = parsePkceChallenge(params.codeChallenge, params.codeChallengeMethod)
  const flowStateId =
    challenge === undefined ? '' : await createOAuthFlowState(ctx, provider.name, challenge)
  const state = await signState(ctx, {
    provider: provider.name,
    referrer: params.redirectTo,
    flowStateId,
    linkingTargetId: params.linkingTargetId,
  })
  const extra: Record<string, string> = {}
  for (const [key, value] of Object.entries(params.query)) {
    if (NOT_FORWARDED.has(key)) continue
    extra[key === 'workos_provider' ? 'provider' : key] = value
  }
  const scopes = params.scopes.split(/[\s,]+/).filter((s) => s !== '')
  return provider.authorizeUrl({ state, scopes, extra })
}

/** How a callback ends: a session in the fragment, or an auth code for the PKCE flow. */
export type ExternalSignInOutcome =
  | {
      readonly kind: 'session'
      readonly session: IssuedSession
      readonly providerToken: string
      readonly providerRefreshToken: string
    }
  | { readonly kind: 'code'; readonly authCode: string }

/**
 * Reads the state of a callback (before anything else: a bad state is answered on `SITE_URL`).
 *
 * @throws `OAuthStateError` For a missing, forged or expired state.
 */
export function readCallbackState(ctx: AppContext, state: string): Promise<OAuthState> {
  return verifyState(ctx, state)
}

/**
 * Finishes an external sign-in whose state is already verified: passes on the provider's
 * `error`, exchanges the code, reads the user, finds or creates the user and identity, and
 * starts a session (or issues the PKCE auth code).
 *
 * @param callback The callback's query or `form_post` body.
 * @param stateToken The raw state (OIDC nonces are derived from it).
 * @param log Where a failed identity-linked notification is reported.
 * @throws {@link BadRequestError} `bad_oauth_callback` for a provider error or a missing code;
 *   the provider's and the linking rules' errors; 422 `provider_email_needs_verification` (with
 *   the confirmation sent and the user kept).
 */
export async function finishExternalSignIn(
  ctx: AppContext,
  state: OAuthState,
  stateToken: string,
  callback: Readonly<Record<string, string>>,
  client: RequestContext,
  log: NotificationLog,
): Promise<ExternalSignInOutcome> {
  const error = callback.error ?? ''
  if (error !== '') {
    throw new ProviderCallbackError(error, callback.error_description ?? '')
  }
  const provider = ctx.providers.get(state.provider)
  if ((callback.code ?? '') === '' && (callback.oauth_verifier ?? '') === '') {
    throw new BadRequestError(
      'bad_oauth_callback',
      'OAuth callback with missing authorization code',
    )
  }
  const tokens = await provider.exchange(callback, { flowStateId: state.flowStateId })
  const data = await provider.getUserData(tokens, callback, stateToken)
  const result = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const identity = await signInWithIdentity(
      ctx,
      tx,
      {
        provider: provider.name,
        data,
        linkingTargetId: state.linkingTargetId,
        referrer: state.referrer,
      },
      client,
      now,
    )
    if (identity.needsVerification) return { identity, pending: undefined, authCode: undefined }
    if (state.flowStateId !== '') {
      const authCode = await issueAuthCode(tx, state.flowStateId, identity.user.id, tokens, now)
      return { identity, pending: undefined, authCode }
    }
    const pending = await ctx.tokens.startSession(tx, identity.user, 'oauth', client)
    return { identity, pending, authCode: undefined }
  })
  if (result.identity.needsVerification) {
    throw new UnprocessableEntityError(
      'provider_email_needs_verification',
      `Unverified email with ${provider.name}. A confirmation email has been sent to your ${provider.name} email`,
    )
  }
  if (result.identity.linked) {
    const { user } = result.identity
    await sendNotification(
      ctx,
      'identity_linked_notification',
      user,
      { provider: provider.name },
      log,
    )
  }
  if (result.authCode !== undefined) return { kind: 'code', authCode: result.authCode }
  if (result.pending === undefined) throw new Error('unreachable: no session and no auth code')
  return {
    kind: 'session',
    session: await ctx.tokens.finish(result.pending),
    providerToken: tokens.accessToken,
    providerRefreshToken: tokens.refreshToken,
  }
}

/** Records the user on a PKCE flow state (once) and answers its auth code. */
async function issueAuthCode(
  tx: Queryable,
  flowStateId: string,
  userId: string,
  tokens: { accessToken: string; refreshToken: string },
  now: number,
): Promise<string> {
  const flow = await findFlowStateById(tx, flowStateId, true)
  if (flow === undefined || flow.authCodeIssuedAt !== null) {
    throw new BadRequestError('bad_oauth_state', 'OAuth state parameter not found or expired')
  }
  await issueOAuthAuthCode(
    tx,
    flowStateId,
    { userId, providerAccessToken: tokens.accessToken, providerRefreshToken: tokens.refreshToken },
    now,
  )
  return flow.authCode
}

/**
 * The provider redirected back with an `error` (the user denied consent, …): passed on to the
 * client as it came, with `error_code` `bad_oauth_callback`.
 */
export class ProviderCallbackError extends BadRequestError {
  /** The provider's `error` (`access_denied`, …). */
  readonly error: string

  constructor(error: string, description: string) {
    super('bad_oauth_callback', description === '' ? error : description)
    this.error = error
  }
}
