/**
 * The signed values of an external sign-in:
 *
 * - the `state` sent to the provider, as upstream signed it before flow states held it: a JWT
 *   signed with the server's key (HS256 with `JWT_SECRET` by default), valid 5 minutes, with
 *   `{exp, site_url, id: nil UUID, provider, referrer, flow_state_id}`. Here every state names
 *   its own flow state (implicit flows too), which holds what must not travel (the browser
 *   binding, the provider's PKCE verifier, the user being linked), so no two authorizations share
 *   a state and each is completed once.
 * - the link ticket of `/user/identities/authorize`: who asked to link an identity, from which
 *   session, valid 5 minutes and usable once (its id becomes the flow state's id).
 *
 * @see https://github.com/supabase/auth/blob/v2.150.0/internal/api/external.go
 * @module
 */
import { errors } from 'jose'
import type { AppContext } from '../../context.js'
import { BadRequestError } from '../../errors.js'
import { isUuid } from './validation.js'

/** Lifetime of a state and of a link ticket, seconds (upstream's 5 minutes). */
export const STATE_LIFETIME = 300

const NIL_UUID = '00000000-0000-0000-0000-000000000000'

/** The `purpose` claim of a link ticket (a state or an access token has none). */
const LINK_TICKET_PURPOSE = 'identity_link'

/** What a state carries. */
export interface OAuthState {
  /** The provider the sign-in started with. */
  readonly provider: string
  /** Where the user goes afterwards: the validated `redirect_to`, else `SITE_URL`. */
  readonly referrer: string
  /** The sign-in's flow state (a UUID). */
  readonly flowStateId: string
}

/**
 * Signs a state.
 *
 * @returns The compact JWS to send as `state`.
 */
export function signState(ctx: Pick<AppContext, 'keys' | 'clock' | 'settings'>, state: OAuthState) {
  const now = Math.floor(ctx.clock.now() / 1000)
  return ctx.keys.sign({
    exp: now + STATE_LIFETIME,
    site_url: ctx.settings.siteUrl,
    id: NIL_UUID,
    provider: state.provider,
    referrer: state.referrer,
    flow_state_id: state.flowStateId,
  })
}

/**
 * Thrown for a missing, forged, expired or already used `state`, a state from another browser,
 * and a bad link ticket. Upstream answers state errors with a 303 to
 * `SITE_URL?error=invalid_request&…`, never to the state's own referrer; the link ticket's
 * errors are answered the same way.
 */
export class OAuthStateError extends BadRequestError {}

/** The claims of a JWT signed by this server, or an {@link OAuthStateError} with `what`'s texts. */
async function verifiedClaims(
  ctx: Pick<AppContext, 'keys' | 'clock'>,
  token: string,
  texts: { readonly invalid: string; readonly expired: string },
): Promise<Record<string, unknown>> {
  try {
    return await ctx.keys.verify(token, ctx.clock)
  } catch (error) {
    const expired = error instanceof errors.JWTExpired
    throw new OAuthStateError('bad_oauth_state', expired ? texts.expired : texts.invalid, {
      cause: error,
    })
  }
}

/**
 * Checks a state from `/callback`.
 *
 * @throws {@link OAuthStateError} `bad_oauth_callback` "OAuth state parameter missing";
 *   `bad_oauth_state` "OAuth state parameter is invalid" or "OAuth state parameter has expired".
 */
export async function verifyState(
  ctx: Pick<AppContext, 'keys' | 'clock'>,
  state: string,
): Promise<OAuthState> {
  if (state === '') throw new OAuthStateError('bad_oauth_callback', 'OAuth state parameter missing')
  const invalid = 'OAuth state parameter is invalid'
  const claims = await verifiedClaims(ctx, state, {
    invalid,
    expired: 'OAuth state parameter has expired',
  })
  const { provider, referrer, flow_state_id: flowStateId } = claims
  if (
    typeof provider !== 'string' ||
    typeof referrer !== 'string' ||
    typeof flowStateId !== 'string' ||
    !isUuid(flowStateId) ||
    claims.id !== NIL_UUID
  ) {
    throw new OAuthStateError('bad_oauth_state', invalid)
  }
  return { provider, referrer, flowStateId }
}

/** What a link ticket carries. */
export interface LinkTicket {
  /** The ticket's id (a UUID): the id of the flow state it starts, so it is used once. */
  readonly id: string
  /** The signed-in user the identity is linked to. */
  readonly userId: string
  /** The session that asked; it must still exist when the flow starts and when it links. */
  readonly sessionId: string
  /** The provider to link. */
  readonly provider: string
}

/**
 * Signs a link ticket (5 minutes). Its claims are not an access token's (no `sub`) and not a
 * state's (no `id`), so it is never taken for either.
 *
 * @returns The compact JWS for `/authorize?link_ticket=…`.
 */
export function signLinkTicket(ctx: Pick<AppContext, 'keys' | 'clock'>, ticket: LinkTicket) {
  const now = Math.floor(ctx.clock.now() / 1000)
  return ctx.keys.sign({
    exp: now + STATE_LIFETIME,
    purpose: LINK_TICKET_PURPOSE,
    jti: ticket.id,
    link_user_id: ticket.userId,
    link_session_id: ticket.sessionId,
    provider: ticket.provider,
  })
}

/**
 * Checks a link ticket.
 *
 * @throws {@link OAuthStateError} `bad_oauth_state` "Identity link request is invalid" or
 *   "Identity link request has expired".
 */
export async function verifyLinkTicket(
  ctx: Pick<AppContext, 'keys' | 'clock'>,
  token: string,
): Promise<LinkTicket> {
  const invalid = 'Identity link request is invalid'
  const claims = await verifiedClaims(ctx, token, {
    invalid,
    expired: 'Identity link request has expired',
  })
  const { jti, link_user_id: userId, link_session_id: sessionId, provider } = claims
  if (
    claims.purpose !== LINK_TICKET_PURPOSE ||
    typeof jti !== 'string' ||
    !isUuid(jti) ||
    typeof userId !== 'string' ||
    !isUuid(userId) ||
    typeof sessionId !== 'string' ||
    !isUuid(sessionId) ||
    typeof provider !== 'string'
  ) {
    throw new OAuthStateError('bad_oauth_state', invalid)
  }
  return { id: jti, userId, sessionId, provider }
}
