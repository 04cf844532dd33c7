/**
 * The OAuth 2.1 / OpenID Connect provider on the wire (upstream `oauthserver/*`, routes in
 * `api.go`): `GET /oauth/authorize` and `POST /oauth/token` for clients; `GET
 * /oauth/authorizations/<id>` and `POST /oauth/authorizations/<id>/consent` for the app's consent
 * page (the signed-in user), and Gatehouse's `GET /oauth/authorizations/<id>/login_required` for
 * a page that finds nobody signed in on a `prompt=none` request; `GET /oauth/userinfo`; `GET`/`DELETE /user/oauth/grants`. All answer
 * `404 feature_disabled` while `OAUTH_SERVER_ENABLED` is off. The token endpoint answers errors
 * as RFC 6749 §5.2 (`{error, error_description}`), the authorization endpoint by redirecting
 * once the client's redirect URI is trusted (§4.1.2.1).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/oauthserver/handlers.go
 * @module
 */
import type { FastifyRequest, preHandlerHookHandler } from 'fastify'
import type { RouteContext } from '../../context.js'
import { BadRequestError, OAuthJsonError } from '../../errors.js'
import { isRedirectUrlValid } from '../../services/shared/redirect.js'
import {
  authenticateClient,
  authorizationDetails,
  clientCredentials,
  consentTo,
  endWithLoginRequired,
  exchangeCode,
  listGrants,
  refreshForClient,
  revokeGrant,
  startAuthorization,
  userInfo,
  type TokenParams,
} from '../../services/oauth-server.js'
import { authOf, rateLimit, requireAuthentication } from '../http/hooks.js'
import { requestContext } from '../http/request-context.js'
import { Param, Params } from '../http/schema.js'
import type { RouteGroup } from './group.js'
import { requireOAuthServer } from './oauth-clients.js'

/** A request field as a string: `''` when absent, repeated or not a string. */
function field(source: unknown, name: string): string {
  if (typeof source !== 'object' || source === null) return ''
  const value = (source as Record<string, unknown>)[name]
  return typeof value === 'string' ? value : ''
}

const authorizationIdOf = (request: FastifyRequest) =>
  (request.params as { authorization_id: string }).authorization_id

/**
 * The path of a route naming an authorization request: its id is base64url (43 characters as
 * issued); anything else is refused before the database is asked.
 */
const AUTHORIZATION = {
  schema: {
    params: Params({
      authorization_id: Param({
        pattern: '^[A-Za-z0-9_-]{1,128}$',
        errorMessage: 'authorization not found',
      }),
    }),
  },
}

/** Headers of every answer that carries or leads to credentials. */
const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' }

/** `GET /oauth/authorize`, `GET /oauth/authorizations/<id>/login_required`, `POST /oauth/token`. */
export const oauthServerRoutes: RouteGroup = (app, ctx) => {
  app.addHook('preValidation', requireOAuthServer(ctx))

  app.get('/oauth/authorize', async (request, reply) => {
    const q = request.query
    const location = await startAuthorization(request.ctx, {
      clientId: field(q, 'client_id'),
      redirectUri: field(q, 'redirect_uri'),
      responseType: field(q, 'response_type'),
      scope: field(q, 'scope'),
      state: field(q, 'state'),
      resource: field(q, 'resource'),
      codeChallenge: field(q, 'code_challenge'),
      codeChallengeMethod: field(q, 'code_challenge_method'),
      nonce: field(q, 'nonce'),
      prompt: field(q, 'prompt'),
    })
    return reply.headers(NO_STORE).redirect(location, 302)
  })

  app.get(
    '/oauth/authorizations/:authorization_id/login_required',
    AUTHORIZATION,
    async (request, reply) => {
      const location = await endWithLoginRequired(request.ctx, authorizationIdOf(request))
      return reply.headers(NO_STORE).redirect(location, 302)
    },
  )

  app.post('/oauth/token', { preHandler: rateLimit(ctx, 'token') }, async (request, reply) => {
    const b = request.body
    const params: TokenParams = {
      grantType: field(b, 'grant_type'),
      code: field(b, 'code'),
      redirectUri: field(b, 'redirect_uri'),
      codeVerifier: field(b, 'code_verifier'),
      refreshToken: field(b, 'refresh_token'),
      resource: field(b, 'resource'),
      clientId: field(b, 'client_id'),
      clientSecret: field(b, 'client_secret'),
    }
    if (params.grantType === '') {
      throw new OAuthJsonError('invalid_request', 'grant_type is required')
    }
    const client = await authenticateClient(
      request.ctx,
      clientCredentials(request.headers.authorization, params),
    )
    if (params.grantType !== 'authorization_code' && params.grantType !== 'refresh_token') {
      throw new OAuthJsonError(
        'unsupported_grant_type',
        `Unsupported grant type: ${params.grantType}`,
      )
    }
    if (!client.grantTypes.includes(params.grantType)) {
      throw new OAuthJsonError(
        'unauthorized_client',
        `Client is not allowed to use grant type: ${params.grantType}`,
      )
    }
    const context = requestContext(request, ctx.settings)
    const answer =
      params.grantType === 'authorization_code'
        ? await exchangeCode(request.ctx, client, params, context)
        : await refreshForClient(request.ctx, client, params, context)
    return reply.headers(NO_STORE).send(answer)
  })
}

/**
 * The consent API is for the app's own pages: a browser request from another origin (its
 * `Origin` not allowed as a `redirect_to`) is `400 validation_failed` "unauthorized request
 * origin", as upstream (`validateRequestOrigin`).
 */
function requireAppOrigin(ctx: RouteContext): preHandlerHookHandler {
  return (request, _reply, done) => {
    const origin = request.headers.origin
    done(
      origin === undefined || origin === '' || isRedirectUrlValid(ctx.settings, origin)
        ? undefined
        : new BadRequestError('validation_failed', 'unauthorized request origin'),
    )
  }
}

/** The consent page's API and UserInfo, for the bearer token's user. */
export const oauthUserRoutes: RouteGroup = (app, ctx) => {
  app.addHook('preValidation', requireOAuthServer(ctx))
  app.addHook('preValidation', requireAuthentication)

  const appOrigin = { ...AUTHORIZATION, preHandler: requireAppOrigin(ctx) }

  app.get('/oauth/authorizations/:authorization_id', appOrigin, async (request, reply) =>
    reply
      .headers(NO_STORE)
      .send(
        await authorizationDetails(
          request.ctx,
          authorizationIdOf(request),
          authOf(request).user,
          authOf(request).session?.createdAt,
        ),
      ),
  )

  app.post('/oauth/authorizations/:authorization_id/consent', appOrigin, async (request, reply) => {
    const body = request.body
    if (typeof body !== 'object' || body === null) {
      throw new BadRequestError('bad_json', 'invalid JSON body')
    }
    const redirect = await consentTo(
      request.ctx,
      authorizationIdOf(request),
      authOf(request).user,
      field(body, 'action'),
      authOf(request).session?.createdAt,
    )
    return reply.headers(NO_STORE).send(redirect)
  })

  app.get('/oauth/userinfo', async (request, reply) => {
    const auth = authOf(request)
    return reply.headers(NO_STORE).send(userInfo(auth.user, auth.session))
  })

  app.get('/user/oauth/grants', async (request) => listGrants(request.ctx, authOf(request).user.id))

  app.delete('/user/oauth/grants', async (request, reply) => {
    await revokeGrant(
      request.ctx,
      authOf(request).user,
      field(request.query, 'client_id'),
      requestContext(request, ctx.settings),
    )
    return reply.code(204).send()
  })
}
