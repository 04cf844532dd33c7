/**
 * `GET /authorize` and `GET|POST /callback`: sign-in with an external provider, and the
 * redirects that end it (a session or an error in the fragment, an auth code in the query).
 * `/authorize` gives the browser its binding cookie; `/callback` completes a flow only for the
 * browser that has it.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/external.go
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../../context.js'
import type { AuthError } from '../../errors.js'
import type { OAuthFlowState } from '../../models/flow-state.js'
import { ProviderFailure } from '../../provider/oauth-provider.js'
import {
  ProviderCallbackError,
  claimCallbackFlow,
  finishExternalSignIn,
  readCallbackState,
  startExternalSignIn,
  type ExternalAuthorizeParams,
  type ExternalSignInOutcome,
} from '../../services/external.js'
import { bindingCookie, readBindingSecret } from '../../services/shared/oauth-browser-binding.js'
import { OAuthStateError, type OAuthState } from '../../services/shared/oauth-state.js'
import { toAuthError } from '../http/errors/error-handler.js'
import { wireErrorOf } from '../http/errors/wire.js'
import { sendFormPage } from '../http/form-page.js'
import { headerValue, requestContext } from '../http/request-context.js'
import type { RouteGroup } from './group.js'
import { requestRedirectTo } from '../http/redirect-to.js'

/**
 * The field a `form_post` callback is posted again with from this server's own page (see
 * {@link resubmitPage}), so that it is resubmitted once at most.
 */
const RESUBMITTED = 'gatehouse_resubmitted'

/** A request's query as strings (the query parser keeps each parameter's first value). */
export function queryOf(request: FastifyRequest): Record<string, string> {
  return (request.query ?? {}) as Record<string, string>
}

/** `url` with `params` set in its query or as its fragment (keys sorted, as Go's `Encode`). */
export function withParams(
  url: string,
  params: Readonly<Record<string, string>>,
  where: 'query' | 'fragment',
): string {
  const target = new URL(url)
  const sorted = Object.keys(params).sort()
  if (where === 'query') {
    for (const key of sorted) target.searchParams.set(key, params[key] ?? '')
  } else {
    target.hash = new URLSearchParams(
      sorted.map((k): [string, string] => [k, params[k] ?? '']),
    ).toString()
  }
  return target.href
}

/**
 * Answers `/authorize`: a 302 to the provider, or with `skip_http_redirect=true` (auth-js) 200
 * `{"url": …}`.
 */
export function sendAuthorizeUrl(request: FastifyRequest, reply: FastifyReply, url: string) {
  if (queryOf(request).skip_http_redirect === 'true') return reply.code(200).send({ url })
  return reply.code(302).header('location', url).send()
}

/**
 * Answers a state error as upstream does: a 303 to `SITE_URL` with `error=invalid_request`,
 * `error_code` and `error_description` in the query (never to the state's own referrer).
 */
function sendStateError(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  error: OAuthStateError,
) {
  request.log.debug({ error_code: error.code }, error.message)
  const location = withParams(
    ctx.settings.siteUrl,
    { error: 'invalid_request', error_code: error.code, error_description: error.message },
    'query',
  )
  return reply.code(303).header('location', location).send()
}

/**
 * Answers a `form_post` callback that came without the binding cookie: a cross-site POST (Apple
 * posts the authorization response from its own site) does not carry a `SameSite=Lax` cookie, so
 * a page of this server posts the same fields once more to `/callback`, a same-site POST that
 * does. The binding is still checked then: a browser without the cookie is refused.
 */
function resubmitPage(
  ctx: AppContext,
  reply: FastifyReply,
  fields: Readonly<Record<string, string>>,
) {
  return sendFormPage(reply, {
    title: 'Signing in…',
    action: 'callback',
    fields: { ...fields, [RESUBMITTED]: '1' },
    button: 'Continue',
    autoSubmitNonce: Buffer.from(ctx.random.bytes(16)).toString('base64'),
  })
}

/** What an `/authorize` request (or `/user/identities/authorize`) asks for. */
export function authorizeParams(ctx: AppContext, request: FastifyRequest): ExternalAuthorizeParams {
  const query = queryOf(request)
  return {
    provider: query.provider ?? '',
    scopes: query.scopes ?? '',
    redirectTo: requestRedirectTo(request, ctx.settings),
    codeChallenge: query.code_challenge ?? '',
    codeChallengeMethod: query.code_challenge_method ?? '',
    query,
  }
}

/** Upstream's OAuth `error` for an API error's status (`redirectErrors`): `invalid_request`, `access_denied`, `unauthorized_client`, `server_error`, or the provider's own. */
export function oauthErrorName(error: AuthError, status: number): string {
  if (error instanceof ProviderCallbackError) return error.error
  if (
    error.code === 'signup_disabled' ||
    error.code === 'user_banned' ||
    error.code === 'provider_email_needs_verification'
  ) {
    return 'access_denied'
  }
  if (status === 403) return 'access_denied'
  if (status === 401) return 'unauthorized_client'
  if (status >= 500) return 'server_error'
  return 'invalid_request'
}

/** The redirect of a finished sign-in. */
function successLocation(referrer: string, outcome: ExternalSignInOutcome): string {
  if (outcome.kind === 'code') return withParams(referrer, { code: outcome.authCode }, 'query')
  const { session } = outcome
  const fragment: Record<string, string> = {
    access_token: session.accessToken,
    expires_at: String(session.expiresAt),
    expires_in: String(session.expiresIn),
    provider_token: outcome.providerToken,
    refresh_token: session.refreshToken,
    sb: '',
    token_type: 'bearer',
  }
  if (outcome.providerRefreshToken !== '') {
    fragment.provider_refresh_token = outcome.providerRefreshToken
  }
  return withParams(referrer, fragment, 'fragment')
}

/**
 * Handles a callback (GET query or `form_post` body): a bad state is a 303 to `SITE_URL` with the
 * error in the query; any later failure a 302 to the state's referrer with `error`, `error_code`
 * and `error_description` in the fragment (and, for PKCE flows, the query); success a 302 with
 * the session in the fragment, or `?code=` for PKCE.
 */
async function callback(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  params: Record<string, string>,
): Promise<FastifyReply> {
  const stateToken = params.state ?? ''
  const bindingSecret = readBindingSecret(ctx.settings, request.headers.cookie)
  let state: OAuthState
  try {
    state = await readCallbackState(ctx, stateToken)
  } catch (error) {
    if (!(error instanceof OAuthStateError)) throw error
    return sendStateError(ctx, request, reply, error)
  }
  if (request.method === 'POST' && bindingSecret === undefined && params[RESUBMITTED] !== '1') {
    return resubmitPage(ctx, reply, params)
  }
  let flow: OAuthFlowState
  try {
    flow = await claimCallbackFlow(ctx, state, bindingSecret)
  } catch (error) {
    if (!(error instanceof OAuthStateError)) throw error
    return sendStateError(ctx, request, reply, error)
  }
  const location = await signInLocation(ctx, request, state, flow, stateToken, params)
  return reply.code(302).header('location', location).send()
}

/** Where a callback with a valid state ends: the session, the auth code, or the error. */
async function signInLocation(
  ctx: AppContext,
  request: FastifyRequest,
  state: OAuthState,
  flow: OAuthFlowState,
  stateToken: string,
  params: Record<string, string>,
): Promise<string> {
  try {
    const outcome = await finishExternalSignIn(
      ctx,
      state,
      flow,
      stateToken,
      params,
      requestContext(request, ctx.settings),
      request.log,
    )
    return successLocation(state.referrer, outcome)
  } catch (error) {
    const authError = toAuthError(error)
    const { status } = wireErrorOf(authError)
    if (status >= 500 || error instanceof ProviderFailure) {
      request.log.error(
        { err: authError.cause ?? authError, error_code: authError.code },
        authError.message,
      )
    } else {
      request.log.debug({ error_code: authError.code }, authError.message)
    }
    const fields = {
      error: oauthErrorName(authError, status),
      error_code: authError.code,
      error_description: authError.message,
      sb: '',
    }
    const location = withParams(state.referrer, fields, 'fragment')
    return flow.authCode === null ? location : withParams(location, fields, 'query')
  }
}

/**
 * `GET /authorize?provider=…&scopes=…&redirect_to=…&code_challenge=…&code_challenge_method=…`
 * and `GET|POST /callback` (POST for Apple's `form_post`).
 */
export const externalRoutes: RouteGroup = (app, ctx) => {
  app.get('/authorize', async (request, reply) => {
    const query = queryOf(request)
    let started
    try {
      started = await startExternalSignIn(request.ctx, authorizeParams(request.ctx, request), {
        bindingSecret: readBindingSecret(ctx.settings, request.headers.cookie),
        linkTicket: query.link_ticket ?? '',
        referer: headerValue(request, 'referer') ?? '',
      })
    } catch (error) {
      if (!(error instanceof OAuthStateError)) throw error
      return sendStateError(request.ctx, request, reply, error)
    }
    reply.header('set-cookie', bindingCookie(ctx.settings, started.bindingSecret))
    return sendAuthorizeUrl(request, reply, started.url)
  })

  app.get('/callback', (request, reply) => callback(request.ctx, request, reply, queryOf(request)))

  app.post('/callback', (request, reply) => {
    const body = request.body
    const form: Record<string, string> = { ...queryOf(request) }
    if (typeof body === 'object' && body !== null) {
      for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
        if (typeof value === 'string') form[key] = value
      }
    }
    return callback(request.ctx, request, reply, form)
  })
}
