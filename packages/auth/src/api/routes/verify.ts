import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Static } from 'typebox'
import { AuthError } from '../../errors.js'
import {
  checkVerifyParams,
  verify,
  type VerifyOutcome,
  type VerifyParams,
} from '../../services/verify.js'
import { wireErrorOf } from '../http/errors/wire.js'
import { sendFormPage } from '../http/form-page.js'
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
  /** The confirmation page's button (`MAILER_LINK_CONFIRMATION_PAGE`). */
  confirm: StringField(),
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
 * the session response). Under `MAILER_LINK_CONFIRMATION_PAGE`, `GET` and `HEAD` answer a
 * confirmation page and its button's `POST /verify?<the link's query>` (`confirm=link`) follows
 * the link; without it, `HEAD` is 405 (upstream routes `GET` only) and consumes nothing.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/verify.go
 */
export const verifyRoutes: RouteGroup = (app, ctx) => {
  /** Follows a mailed link: consumes it and redirects (the former `GET /verify`). */
  async function followLink(
    request: FastifyRequest<{ Querystring: Static<typeof VerifyQuery> }>,
    reply: FastifyReply,
  ): Promise<FastifyReply> {
    const params = linkParams(request)
    // Malformed requests are answered as JSON: no redirect target is trusted yet.
    checkVerifyParams('GET', params)
    try {
      const client = requestContext(request, ctx.settings)
      const outcome = await verify(request.ctx, 'GET', params, client, request.log)
      return await reply.redirect(successLocation(outcome), 303)
    } catch (error) {
      if (!(error instanceof AuthError)) throw error
      return redirectError(reply, error, params.redirectTo, params.token.startsWith('pkce_'))
    }
  }

  function linkParams(
    request: FastifyRequest<{ Querystring: Static<typeof VerifyQuery> }>,
  ): VerifyParams {
    return {
      type: request.query.type ?? '',
      token: request.query.token ?? '',
      tokenHash: '',
      email: '',
      phone: '',
      redirectTo: requestRedirectTo(request, ctx.settings),
    }
  }

  app.get(
    '/verify',
    { schema: { querystring: VerifyQuery }, preHandler: rateLimit(ctx, 'verify') },
    async (request, reply) => {
      // A HEAD (a link checker, a mail scanner) never consumes a link; upstream routes GET only.
      if (request.method === 'HEAD') {
        if (!ctx.settings.mailer.linkConfirmationPage) return reply.code(405).send()
        return confirmationPage(reply, request.query)
      }
      if (ctx.settings.mailer.linkConfirmationPage) {
        checkVerifyParams('GET', linkParams(request))
        return confirmationPage(reply, request.query)
      }
      return followLink(request, reply)
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
    async (request, reply) => {
      const { body } = request
      // The confirmation page's button: the link of the page's query, followed as GET did.
      if (ctx.settings.mailer.linkConfirmationPage && body.confirm === CONFIRM) {
        return followLink(request, reply)
      }
      const outcome = await verify(
        request.ctx,
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

/** The value of the confirmation page's `confirm` field. */
const CONFIRM = 'link'

/**
 * The page a mailed link answers under `MAILER_LINK_CONFIRMATION_PAGE`: one button, a form that
 * posts `confirm=link` to `/verify` with the link's own query, which follows the link as `GET`
 * did. Opening the page (a preview, a scanner, a `HEAD`) consumes nothing.
 */
function confirmationPage(reply: FastifyReply, query: Static<typeof VerifyQuery>): FastifyReply {
  const search = new URLSearchParams()
  for (const [key, value] of Object.entries(query)) {
    if (typeof value === 'string') search.set(key, value)
  }
  return sendFormPage(reply, {
    title: 'Confirm',
    text: 'Press the button to continue.',
    action: `verify?${search.toString()}`,
    fields: { confirm: CONFIRM },
    button: 'Continue',
  })
}
