/**
 * Sign-in with an external provider: `/authorize` starts it (also as the first navigation of an
 * identity link that `/user/identities/authorize` prepared), `/callback` finishes it with a
 * session (implicit flow) or an auth code (PKCE flow).
 *
 * Each authorization has its own `flow_state` row, bound to the browser that started it (see
 * `oauth-browser-binding.ts`) and completed once; it keeps the PKCE verifier sent to the
 * provider and, for a link, the user and the session that asked for it.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/external.go
 * @module
 */
import { pkceChallenge } from '@gatehouse/oauth2'
import type { AppContext, RequestContext } from '../context.js'
import { BadRequestError, ForbiddenError } from '../errors.js'
import {
  claimOAuthFlowState,
  deleteFlowState,
  findOAuthFlowState,
  insertOAuthFlowState,
  issueOAuthAuthCode,
  type OAuthFlowState,
} from '../models/flow-state.js'
import { findSessionById } from '../models/session.js'
import { isUniqueViolation, type Queryable } from '../storage/db.js'
import type { IssuedSession } from '../sessions/token-service.js'
import { finishIdentitySignIn, signInWithIdentity } from './shared/identities.js'
import type { NotificationLog } from './shared/notifications.js'
import { bindingHash, newBindingSecret } from './shared/oauth-browser-binding.js'
import {
  OAuthStateError,
  signLinkTicket,
  signState,
  verifyLinkTicket,
  verifyState,
  type OAuthState,
} from './shared/oauth-state.js'
import { parsePkceChallenge } from './shared/pkce.js'
import { isRedirectUrlValid } from './shared/redirect.js'

/** Query parameters of `/authorize` that are never forwarded to the provider (upstream's, and ours). */
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
  'link_ticket',
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
}

/** The browser side of `/authorize`: its binding secret, and what links need. */
export interface AuthorizingBrowser {
  /** The binding secret of the browser's cookie, when it has a valid one (it is kept). */
  readonly bindingSecret: string | undefined
  /** `link_ticket`: the first navigation of an identity link (`''` otherwise). */
  readonly linkTicket: string
  /** The request's `Referer` (`''` when none). */
  readonly referer: string
}

/** A started sign-in: where to send the browser, and the secret its cookie must hold. */
export interface StartedSignIn {
  readonly url: string
  readonly bindingSecret: string
}

/** The user and session a link ticket links for. */
interface Linking {
  readonly flowStateId: string
  readonly userId: string
  readonly sessionId: string
}

/**
 * Whether `sessionId` is still a session of `userId` (neither signed out nor past `not_after`).
 *
 * @param now Epoch milliseconds.
 */
async function sessionAlive(
  tx: Queryable,
  sessionId: string,
  userId: string,
  now: number,
): Promise<boolean> {
  const session = await findSessionById(tx, sessionId)
  return (
    session !== undefined &&
    session.userId === userId &&
    (session.notAfter === null || session.notAfter.getTime() > now)
  )
}

/**
 * The link a `/authorize?link_ticket=…` navigation starts: a valid ticket for this provider,
 * whose session still exists, followed from a page of the site (`Referer` allowed as a
 * `redirect_to` is) unless `SECURITY_MANUAL_LINKING_REQUIRE_SITE_REFERER` is off.
 *
 * @throws {@link OAuthStateError} For each of these checks.
 */
async function checkLinkTicket(
  ctx: AppContext,
  ticket: string,
  provider: string,
  referer: string,
): Promise<Linking> {
  if (!ctx.settings.security.manualLinkingEnabled) {
    throw new OAuthStateError('manual_linking_disabled', 'Manual linking is disabled')
  }
  const link = await verifyLinkTicket(ctx, ticket)
  if (link.provider !== provider) {
    throw new OAuthStateError('bad_oauth_state', 'Identity link request is invalid')
  }
  if (
    ctx.settings.security.manualLinkingRequireSiteReferer &&
    (referer === '' || !isRedirectUrlValid(ctx.settings, referer))
  ) {
    throw new OAuthStateError(
      'bad_oauth_state',
      'Identity link request must be opened from the site that asked for it',
    )
  }
  if (!(await sessionAlive(ctx.db, link.sessionId, link.userId, ctx.clock.now()))) {
    throw new OAuthStateError('session_not_found', 'The session that asked for the link has ended')
  }
  return { flowStateId: link.id, userId: link.userId, sessionId: link.sessionId }
}

/** The parameters of an `/authorize` query that are the provider's (all but upstream's own). */
function providerParams(query: Readonly<Record<string, string>>): [string, string][] {
  return Object.entries(query).filter(([key]) => !NOT_FORWARDED.has(key))
}

/** {@link providerParams} as the provider receives them (`workos_provider` as `provider`). */
function forwardedParams(query: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(
    providerParams(query).map(([key, value]) => [
      key === 'workos_provider' ? 'provider' : key,
      value,
    ]),
  )
}

/**
 * Starts an external sign-in: checks the provider, the PKCE parameters and (for a link) the link
 * ticket, stores the flow state bound to the browser's secret (a new one when it has none) with
 * a PKCE verifier for providers that support PKCE, signs the state and asks the provider for
 * its authorization URL.
 *
 * @returns The URL to send the browser to, and the secret to give it in the binding cookie.
 * @throws {@link BadRequestError} `validation_failed` "Unsupported provider: …" or a PKCE
 *   problem; {@link OAuthStateError} for a bad, expired, reused or foreign link ticket; the
 *   provider's failure to answer (500).
 */
export async function startExternalSignIn(
  ctx: AppContext,
  params: ExternalAuthorizeParams,
  browser: AuthorizingBrowser,
): Promise<StartedSignIn> {
  const provider = await ctx.providers.resolve(params.provider)
  const challenge = parsePkceChallenge(params.codeChallenge, params.codeChallengeMethod)
  const linking =
    browser.linkTicket === ''
      ? undefined
      : await checkLinkTicket(ctx, browser.linkTicket, provider.name, browser.referer)
  const bindingSecret = browser.bindingSecret ?? newBindingSecret(ctx.random)
  const verifier = provider.pkce ? Buffer.from(ctx.random.bytes(32)).toString('base64url') : null
  const flowStateId = linking?.flowStateId ?? ctx.random.uuid()
  const state = await signState(ctx, {
    provider: provider.name,
    referrer: params.redirectTo,
    flowStateId,
  })
  const url = await provider.authorizeUrl({
    state,
    scopes: params.scopes.split(/[\s,]+/).filter((s) => s !== ''),
    extra: forwardedParams(params.query),
    codeChallenge: verifier === null ? undefined : pkceChallenge(verifier),
  })
  try {
    await insertOAuthFlowState(
      ctx.db,
      {
        id: flowStateId,
        providerType: provider.name,
        authCode: challenge === undefined ? null : ctx.random.uuid(),
        codeChallenge: challenge?.codeChallenge ?? null,
        codeChallengeMethod: challenge?.codeChallengeMethod ?? null,
        browserBindingHash: bindingHash(bindingSecret),
        providerCodeVerifier: verifier,
        linkingTargetId: linking?.userId ?? null,
        linkingSessionId: linking?.sessionId ?? null,
      },
      ctx.clock.now(),
    )
  } catch (error) {
    if (linking !== undefined && isUniqueViolation(error, ctx.db.t.flowState)) {
      throw new OAuthStateError('bad_oauth_state', 'Identity link request was already used', {
        cause: error,
      })
    }
    throw error
  }
  return { url, bindingSecret }
}

/** The signed-in user who asks to link an identity (`/user/identities/authorize`). */
export interface LinkingUser {
  readonly userId: string
  /** The session of the request's access token; a link needs one. */
  readonly sessionId: string | undefined
}

/**
 * Prepares an identity link for a signed-in user: instead of the provider's URL (which any
 * browser could complete), answers this server's `/authorize` with the same parameters and a
 * link ticket: the browser that follows it gets the binding cookie there, and the link needs the
 * user's session until it is done.
 *
 * @returns The URL of `/authorize?…&link_ticket=…` under `API_EXTERNAL_URL`.
 * @throws {@link BadRequestError} As {@link startExternalSignIn} checks the provider and PKCE;
 *   {@link ForbiddenError} `session_not_found` for an access token without a session.
 */
export async function startIdentityLinking(
  ctx: AppContext,
  params: ExternalAuthorizeParams,
  user: LinkingUser,
): Promise<string> {
  const provider = await ctx.providers.resolve(params.provider)
  parsePkceChallenge(params.codeChallenge, params.codeChallengeMethod)
  if (user.sessionId === undefined) {
    throw new ForbiddenError('session_not_found', 'Linking an identity needs a session')
  }
  const ticket = await signLinkTicket(ctx, {
    id: ctx.random.uuid(),
    userId: user.userId,
    sessionId: user.sessionId,
    provider: provider.name,
  })
  const base = ctx.settings.apiExternalUrl
  const url = new URL('authorize', base.endsWith('/') ? base : `${base}/`)
  const query: Record<string, string> = {
    ...Object.fromEntries(providerParams(params.query)),
    provider: provider.name,
    redirect_to: params.redirectTo,
    ...(params.scopes === '' ? {} : { scopes: params.scopes }),
    ...(params.codeChallenge === ''
      ? {}
      : {
          code_challenge: params.codeChallenge,
          code_challenge_method: params.codeChallengeMethod,
        }),
    link_ticket: ticket,
  }
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value)
  return url.href
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
 * Claims the flow state of a callback for the browser whose binding secret is `bindingSecret`:
 * a flow is completed once, and only by the browser that started it.
 *
 * @throws {@link OAuthStateError} `bad_oauth_state` "OAuth state was not started in this
 *   browser" (no cookie, or another browser's), "OAuth state has already been used", "OAuth
 *   state not found or expired".
 */
export async function claimCallbackFlow(
  ctx: AppContext,
  state: OAuthState,
  bindingSecret: string | undefined,
): Promise<OAuthFlowState> {
  const foreign = () =>
    new OAuthStateError('bad_oauth_state', 'OAuth state was not started in this browser')
  if (bindingSecret === undefined) throw foreign()
  const claimed = await claimOAuthFlowState(
    ctx.db,
    state.flowStateId,
    bindingHash(bindingSecret),
    ctx.clock.now(),
  )
  if (claimed !== undefined) return claimed
  const found = await findOAuthFlowState(ctx.db, state.flowStateId)
  if (found === undefined) {
    throw new OAuthStateError('bad_oauth_state', 'OAuth state not found or expired')
  }
  if (found.browserBindingHash === null) {
    throw new OAuthStateError('bad_oauth_state', 'OAuth state has already been used')
  }
  throw foreign()
}

/**
 * Finishes an external sign-in whose state is verified and whose flow state this browser
 * claimed: passes on the provider's `error`, exchanges the code (with the flow's PKCE verifier),
 * reads the user, finds or creates the user and identity (or links it, while the session that
 * asked for the link exists), and starts a session (or issues the PKCE auth code).
 *
 * @param callback The callback's query or `form_post` body.
 * @param stateToken The raw state (OIDC nonces are derived from it).
 * @param log Where a failed identity-linked notification is reported.
 * @throws {@link BadRequestError} `bad_oauth_callback` for a provider error or a missing code;
 *   {@link ForbiddenError} `session_not_found` when the linking session ended; the provider's
 *   and the linking rules' errors; 422 `provider_email_needs_verification` (with the
 *   confirmation sent and the user kept).
 */
export async function finishExternalSignIn(
  ctx: AppContext,
  state: OAuthState,
  flow: OAuthFlowState,
  stateToken: string,
  callback: Readonly<Record<string, string>>,
  client: RequestContext,
  log: NotificationLog,
): Promise<ExternalSignInOutcome> {
  const error = callback.error ?? ''
  if (error !== '') {
    throw new ProviderCallbackError(error, callback.error_description ?? '')
  }
  const provider = await ctx.providers.resolve(state.provider)
  if ((callback.code ?? '') === '' && (callback.oauth_verifier ?? '') === '') {
    throw new BadRequestError(
      'bad_oauth_callback',
      'OAuth callback with missing authorization code',
    )
  }
  const tokens = await provider.exchange(
    callback,
    flow.providerCodeVerifier === null ? undefined : { codeVerifier: flow.providerCodeVerifier },
  )
  const data = await provider.getUserData(tokens, callback, stateToken)
  const result = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const { linkingTargetId, linkingSessionId } = flow
    if (
      linkingTargetId !== null &&
      (linkingSessionId === null ||
        !(await sessionAlive(tx, linkingSessionId, linkingTargetId, now)))
    ) {
      throw new ForbiddenError('session_not_found', 'The session that asked for the link has ended')
    }
    const identity = await signInWithIdentity(
      ctx,
      tx,
      {
        provider: provider.name,
        data,
        linkingTargetId: linkingTargetId ?? undefined,
        referrer: state.referrer,
      },
      client,
      now,
    )
    if (identity.needsVerification) return { identity, pending: undefined, authCode: undefined }
    if (flow.authCode !== null) {
      await issueOAuthAuthCode(
        tx,
        flow.id,
        {
          userId: identity.user.id,
          providerAccessToken: tokens.accessToken,
          providerRefreshToken: tokens.refreshToken,
        },
        now,
      )
      return { identity, pending: undefined, authCode: flow.authCode }
    }
    // A link's row stays (claimed) until it is cleaned up, so that its ticket cannot start
    // another flow with the same id while the ticket is valid.
    if (linkingTargetId === null) await deleteFlowState(tx, flow.id)
    const pending = await ctx.tokens.startSession(tx, identity.user, 'oauth', client)
    return { identity, pending, authCode: undefined }
  })
  await finishIdentitySignIn(ctx, result.identity, provider.name, client, log)
  if (result.authCode !== undefined) return { kind: 'code', authCode: result.authCode }
  if (result.pending === undefined) throw new Error('unreachable: no session and no auth code')
  return {
    kind: 'session',
    session: await ctx.tokens.finish(result.pending),
    providerToken: tokens.accessToken,
    providerRefreshToken: tokens.refreshToken,
  }
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
