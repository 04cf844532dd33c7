/**
 * The `state` of an external sign-in, as upstream signed it before flow states held it: a JWT
 * signed with the server's key (HS256 with `JWT_SECRET` by default), valid 5 minutes, with
 * `{exp, site_url, id: nil UUID, provider, referrer, flow_state_id, linking_target_id?}`.
 *
 * @see https://github.com/supabase/auth/blob/v2.150.0/internal/api/external.go
 * @module
 */
import { errors } from 'jose'
import type { AppContext } from '../context.js'
import { BadRequestError } from '../errors.js'

/** Lifetime of a state, seconds (upstream's 5 minutes). */
export const STATE_LIFETIME = 300

const NIL_UUID = '00000000-0000-0000-0000-000000000000'

/** What a state carries. */
export interface OAuthState {
  /** The provider the sign-in started with. */
  readonly provider: string
  /** Where the user goes afterwards: the validated `redirect_to`, else `SITE_URL`. */
  readonly referrer: string
  /** The PKCE flow state, `''` for the implicit flow. */
  readonly flowStateId: string
  /** The signed-in user an identity is being linked to (`/user/identities/authorize`). */
  readonly linkingTargetId?: string | undefined
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
    ...(state.linkingTargetId === undefined ? {} : { linking_target_id: state.linkingTargetId }),
  })
}

/**
 * Thrown for a missing, forged or expired `state` (upstream answers these with a 303 to
 * `SITE_URL?error=invalid_request&…`, never to the state's own referrer).
 */
export class OAuthStateError extends BadRequestError {}

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
  let claims: Record<string, unknown>
  try {
    claims = await ctx.keys.verify(state, ctx.clock)
  } catch (error) {
    if (error instanceof errors.JWTExpired) {
      throw new OAuthStateError('bad_oauth_state', 'OAuth state parameter has expired', {
        cause: error,
      })
    }
    throw new OAuthStateError('bad_oauth_state', 'OAuth state parameter is invalid', {
      cause: error,
    })
  }
  const { provider, referrer, flow_state_id: flowStateId, linking_target_id: target } = claims
  if (
    typeof provider !== 'string' ||
    typeof referrer !== 'string' ||
    typeof flowStateId !== 'string' ||
    claims.id !== NIL_UUID ||
    (target !== undefined && typeof target !== 'string')
  ) {
    throw new OAuthStateError('bad_oauth_state', 'OAuth state parameter is invalid')
  }
  return { provider, referrer, flowStateId, linkingTargetId: target }
}
