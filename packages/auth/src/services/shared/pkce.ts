/**
 * PKCE for the email flows (RFC 7636 as upstream applies it): a flow that starts with
 * `code_challenge` + `code_challenge_method` stores a `flow_state` row, its mail links carry
 * `pkce_` token hashes, `/verify` answers `?code=<auth_code>`, and `POST /token?grant_type=pkce`
 * exchanges the code and the verifier for a session.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/pkce.go
 * @see https://github.com/supabase/auth/blob/master/internal/models/flow_state.go
 * @see https://www.rfc-editor.org/rfc/rfc7636
 * @module
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { AppContext, RequestContext } from '../../context.js'
import { BadRequestError, NotFoundError, UnprocessableEntityError } from '../../errors.js'
import type { AuthenticationMethod } from '../../models/amr-claim.js'
import {
  deleteFlowState,
  findFlowStateByAuthCode,
  insertFlowState,
  type CodeChallengeMethod,
  type FlowState,
} from '../../models/flow-state.js'
import { getUserById, isBanned } from '../../models/user.js'
import type { Queryable } from '../../storage/db.js'
import type { IssuedSession } from '../../sessions/token-service.js'

/** A validated PKCE challenge of a request. */
export interface PkceChallenge {
  readonly codeChallenge: string
  readonly codeChallengeMethod: CodeChallengeMethod
}

const CHALLENGE_PATTERN = /^[a-zA-Z._~0-9-]+$/

/**
 * Validates a request's `code_challenge` and `code_challenge_method` (upstream
 * `validatePKCEParams`): both or neither; 43 to 128 characters of `[a-zA-Z0-9._~-]`; method
 * `s256` or `plain` in any case.
 *
 * @returns The challenge, or `undefined` when the request is not PKCE (both empty).
 * @throws {@link BadRequestError} 400 `validation_failed` with upstream's texts.
 */
export function parsePkceChallenge(
  codeChallenge: string,
  codeChallengeMethod: string,
): PkceChallenge | undefined {
  if ((codeChallenge === '') !== (codeChallengeMethod === '')) {
    throw new BadRequestError(
      'validation_failed',
      'PKCE flow requires code_challenge_method and code_challenge',
    )
  }
  if (codeChallenge === '') return undefined
  if (codeChallenge.length < 43 || codeChallenge.length > 128) {
    throw new BadRequestError(
      'validation_failed',
      'code challenge has to be between 43 and 128 characters',
    )
  }
  if (!CHALLENGE_PATTERN.test(codeChallenge)) {
    throw new BadRequestError(
      'validation_failed',
      'code challenge can only contain alphanumeric characters, hyphens, periods, underscores and tildes',
    )
  }
  const method = codeChallengeMethod.toLowerCase()
  if (method !== 's256' && method !== 'plain') {
    throw new BadRequestError(
      'validation_failed',
      `unsupported code_challenge method ${JSON.stringify(codeChallengeMethod)}`,
    )
  }
  return { codeChallenge, codeChallengeMethod: method }
}

/**
 * Starts the PKCE flow of an email flow inside `tx`: a `flow_state` row for the user with a fresh
 * auth code (`provider_type` `email`).
 *
 * @param method What the session will record in `amr` (`email/signup`, `magiclink`, …).
 * @param now Epoch milliseconds.
 */
export async function startFlowState(
  ctx: Pick<AppContext, 'random'>,
  tx: Queryable,
  userId: string,
  challenge: PkceChallenge,
  method: AuthenticationMethod,
  now: number,
): Promise<void> {
  await insertFlowState(
    tx,
    {
      id: ctx.random.uuid(),
      userId,
      authCode: ctx.random.uuid(),
      codeChallenge: challenge.codeChallenge,
      codeChallengeMethod: challenge.codeChallengeMethod,
      providerType: 'email',
      authenticationMethod: method,
    },
    now,
  )
}

/**
 * Whether a flow state is past `EXTERNAL_FLOW_STATE_EXPIRY_DURATION` (upstream `IsExpired`):
 * counted from `auth_code_issued_at` for magic links, else from `created_at`.
 */
export function isFlowStateExpired(
  ctx: Pick<AppContext, 'settings'>,
  flow: FlowState,
  now: number,
): boolean {
  const from =
    flow.authCodeIssuedAt !== null && flow.authenticationMethod === 'magiclink'
      ? flow.authCodeIssuedAt
      : flow.createdAt
  return now > from.getTime() + ctx.settings.external.flowStateExpiryMs
}

/** Whether `verifier` answers the flow's challenge (`s256`: base64url-nopad(sha256(verifier))). */
function verifierMatches(flow: FlowState, verifier: string): boolean {
  const expected =
    flow.codeChallengeMethod === 's256'
      ? createHash('sha256').update(verifier).digest('base64url')
      : verifier
  const a = Buffer.from(expected)
  const b = Buffer.from(flow.codeChallenge)
  return a.length === b.length && timingSafeEqual(a, b)
}

const METHODS: ReadonlySet<string> = new Set<AuthenticationMethod>([
  'email/signup',
  'magiclink',
  'recovery',
  'email_change',
  'invite',
  'oauth',
  'otp',
  'sso/saml',
])

/**
 * `POST /token?grant_type=pkce`: exchanges an auth code and its verifier for a session, once (the
 * flow state is locked and deleted in the transaction that starts the session). The session of
 * an OAuth flow carries the provider's tokens (`provider_token`, `provider_refresh_token`).
 *
 * @throws {@link BadRequestError} 400 `validation_failed` "invalid request: both auth code and
 *   code verifier should be non-empty", 400 `bad_code_verifier`, 400 `user_banned`;
 *   {@link NotFoundError} 404 `flow_state_not_found` (or `user_not_found` for a deleted user); {@link UnprocessableEntityError} 422
 *   `flow_state_expired`.
 */
export async function pkceGrant(
  ctx: AppContext,
  authCode: string,
  codeVerifier: string,
  client: RequestContext,
): Promise<IssuedSession> {
  if (authCode === '' || codeVerifier === '') {
    throw new BadRequestError(
      'validation_failed',
      'invalid request: both auth code and code verifier should be non-empty',
    )
  }
  const exchanged = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const flow = await findFlowStateByAuthCode(tx, authCode, true)
    if (!flow?.userId) {
      throw new NotFoundError(
        'flow_state_not_found',
        'invalid flow state, no valid flow state found',
      )
    }
    if (isFlowStateExpired(ctx, flow, now)) {
      throw new UnprocessableEntityError(
        'flow_state_expired',
        'invalid flow state, flow state has expired',
      )
    }
    const user = await getUserById(tx, flow.userId, true)
    if (!verifierMatches(flow, codeVerifier)) {
      throw new BadRequestError(
        'bad_code_verifier',
        'code challenge does not match previously saved code verifier',
      )
    }
    if (isBanned(user, now)) throw new BadRequestError('user_banned', 'User is banned')
    await deleteFlowState(tx, flow.id)
    const method = METHODS.has(flow.authenticationMethod)
      ? (flow.authenticationMethod as AuthenticationMethod)
      : 'otp'
    return { flow, pending: await ctx.tokens.startSession(tx, user, method, client) }
  })
  const session = await ctx.tokens.finish(exchanged.pending)
  const { providerAccessToken, providerRefreshToken } = exchanged.flow
  // An OAuth flow hands the provider's tokens over with the session (upstream).
  return providerAccessToken === ''
    ? session
    : { ...session, providerToken: providerAccessToken, providerRefreshToken }
}
