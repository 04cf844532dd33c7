import type { FastifyReply } from 'fastify'
import type { AppContext } from '../../context.js'
import { AuthError } from '../../errors.js'
import {
  checkVerifyParams,
  verify,
  type VerifyOutcome,
  type VerifyParams,
} from '../../services/verify.js'
import { wireErrorOf } from '../http/errors/wire.js'
import { rateLimit } from '../http/hooks.js'
import { requestContext } from '../http/request-context.js'
import { requestRedirectTo } from '../http/redirect-to.js'
import { SESSION_OR_ACCEPTED_RESPONSE } from '../http/response-schemas.js'
import type { RouteGroup } from './group.js'
import { Body, ObjectField, OptionalParam, Query, StringField } from '../http/schema.js'
import { serializeSession } from '../http/serializers.js'

const VerifyBody = Body({
  type: StringField(),
  token: StringField(),
  token_hash: StringField(),
  email: StringField(),
  phone: StringField(),
  redirect_to: StringField(),
  gotrue_meta_security: ObjectField(),
})

const VerifyQuery = Query({
  type: OptionalParam(),
  token: OptionalParam(),
  redirect_to: OptionalParam(),
})

/** Upstream's OAuth `error` of a redirected failure, by HTTP status. */
function oauthErrorName(status: number): string {
  switch (status) {
    case 401:
      return 'unauthorized_client'
    case 403:
      return 'access_denied'
    default:
      return status >= 500 ? 'server_error' : 'invalid_request'
  }
}

/** `redirectTo` with `fragment` as its fragment and `query` added to its query. */
function withParams(
  redirectTo: string,
  fragment: Record<string, string>,
  query: Record<string, string> = {},
): string {
  const url = new URL(redirectTo)
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value)
  const hash = new URLSearchParams(Object.entries(fragment).sort(([a], [b]) => (a < b ? -1 : 1)))
  if (hash.size > 0) url.hash = hash.toString()
  return url.toString()
}

/** The redirect of a successful `GET /verify`. */
function successLocation(outcome: VerifyOutcome): string {
  switch (outcome.kind) {
    case 'code':
      return withParams(outcome.redirectTo, {}, { code: outcome.authCode })
    case 'message':
      return withParams(outcome.redirectTo, { message: outcome.message, sb: '' })
    case 'session': {
      const { session } = outcome
      return withParams(outcome.redirectTo, {
        access_token: session.accessToken,
        expires_at: String(session.expiresAt),
        expires_in: String(session.expiresIn),
        refresh_token: session.refreshToken,
        sb: '',
        token_type: 'bearer',
        type: outcome.type,
      })
    }
  }
}

/** Redirects a failed `GET /verify` to `redirectTo` with the error (also in the query for PKCE). */
function redirectError(
  reply: FastifyReply,
  error: AuthError,
  redirectTo: string,
  pkce: boolean,
): FastifyReply {
  const fields = {
    error: oauthErrorName(wireErrorOf(error).status),
    error_code: error.code,
    error_description: error.message,
  }
  return reply.redirect(withParams(redirectTo, { ...fields, sb: '' }, pkce ? fields : {}), 303)
}

/**
 * `GET /verify` (a mailed link: 303 to `redirect_to` with the session in the fragment, `?code=`
 * for PKCE, or the error in the fragment) and `POST /verify` (a typed code or a `token_hash`:
 * the session response).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/verify.go
 */
export const verifyRoutes: RouteGroup = (app, ctx: AppContext) => {
  app.get(
    '/verify',
    { schema: { querystring: VerifyQuery }, preHandler: rateLimit(ctx, 'verify') },
    async (request, reply) => {
      const params: VerifyParams = {
        type: request.query.type ?? '',
        token: request.query.token ?? '',
        tokenHash: '',
        email: '',
        phone: '',
        redirectTo: requestRedirectTo(request, ctx.settings),
      }
      // Malformed requests are answered as JSON: no redirect target is trusted yet.
      checkVerifyParams('GET', params)
      try {
        const client = requestContext(request, ctx.settings)
        const outcome = await verify(ctx, 'GET', params, client, request.log)
        return await reply.redirect(successLocation(outcome), 303)
      } catch (error) {
        if (!(error instanceof AuthError)) throw error
        return redirectError(reply, error, params.redirectTo, params.token.startsWith('pkce_'))
      }
    },
  )

  app.post(
    '/verify',
    {
      schema: {
        body: VerifyBody,
        querystring: VerifyQuery,
        response: { 200: SESSION_OR_ACCEPTED_RESPONSE },
      },
      preHandler: rateLimit(ctx, 'verify'),
    },
    async (request) => {
      const { body } = request
      const outcome = await verify(
        ctx,
        'POST',
        {
          type: body.type,
          token: body.token,
          tokenHash: body.token_hash,
          email: body.email,
          phone: body.phone,
          redirectTo: requestRedirectTo(request, ctx.settings),
        },
        requestContext(request, ctx.settings),
        request.log,
      )
      if (outcome.kind === 'session') {
        return { ...serializeSession(outcome.session), type: outcome.type }
      }
      return { msg: outcome.kind === 'message' ? outcome.message : '', code: '200' }
    },
  )
}
