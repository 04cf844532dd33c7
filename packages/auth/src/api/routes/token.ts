import type { FastifyRequest } from 'fastify'
import type { Static } from 'typebox'
import type { AppContext } from '../../context.js'
import { OAuthJsonError, UnsupportedGrantTypeError } from '../../errors.js'
import type { LimitedOperation } from '../../limiter/limiter.js'
import type { User } from '../../models/user.js'
import { idTokenGrant } from '../../services/id-token-grant.js'
import { authenticateUser } from '../../services/shared/authentication.js'
import { pkceGrant } from '../../services/shared/pkce.js'
import { passwordGrant, refreshTokenGrant } from '../../services/token-grants.js'
import { web3Grant } from '../../services/web3-grant.js'
import { bearerToken, rateLimit, verifyCaptcha } from '../http/hooks.js'
import { requestContext } from '../http/request-context.js'
import type { RouteGroup } from './group.js'
import { Body, BoolField, ObjectField, OptionalParam, Query, StringField } from '../http/schema.js'
import { SESSION_RESPONSE } from '../http/response-schemas.js'
import { serializeSession, type TokenResponse } from '../http/serializers.js'

const TokenBody = Body({
  grant_type: StringField(),
  email: StringField(),
  phone: StringField(),
  username: StringField(),
  password: StringField(),
  refresh_token: StringField(),
  auth_code: StringField(),
  code_verifier: StringField(),
  id_token: StringField(),
  access_token: StringField(),
  nonce: StringField(),
  provider: StringField(),
  client_id: StringField(),
  issuer: StringField(),
  link_identity: BoolField(),
  chain: StringField(),
  message: StringField(),
  signature: StringField(),
  gotrue_meta_security: ObjectField(),
})

const TokenQuery = Query({ grant_type: OptionalParam() })

/** The grant type: from the query (auth-js), else from the body (RFC 6749 form requests). */
function grantType(request: FastifyRequest): string {
  const { query, body } = request as FastifyRequest<{
    Querystring: { grant_type?: string }
    Body: { grant_type?: string | null } | undefined
  }>
  return query.grant_type || (body?.grant_type ?? '')
}

/** The rate-limited operation of a grant (none for an unsupported grant type). */
function limitedOperation(request: FastifyRequest): LimitedOperation | undefined {
  switch (grantType(request)) {
    case 'password':
      return 'token'
    case 'refresh_token':
      return 'token_refresh'
    case 'pkce':
    case 'id_token':
      return 'token'
    case 'web3':
      return 'web3'
    default:
      return undefined
  }
}

/** Runs the grant of the request. */
async function grant(
  ctx: AppContext,
  request: FastifyRequest<{ Body: Static<typeof TokenBody> }>,
): Promise<TokenResponse> {
  const { body } = request
  const client = requestContext(request, ctx.settings)
  switch (grantType(request)) {
    case 'password': {
      const { session, weakPassword } = await passwordGrant(
        ctx,
        {
          email: body.email,
          phone: body.phone,
          username: body.username,
          password: body.password,
        },
        client,
        request.deadline,
      )
      return serializeSession(session, weakPassword)
    }
    case 'refresh_token':
      return serializeSession(await refreshTokenGrant(ctx, body.refresh_token, client))
    case 'pkce':
      return serializeSession(await pkceGrant(ctx, body.auth_code, body.code_verifier, client))
    case 'id_token': {
      let linkingTarget: User | undefined
      if (body.link_identity === true) {
        if (request.headers.authorization === undefined) {
          throw new OAuthJsonError(
            'invalid request',
            'Linking requires a valid user access token in Authorization',
          )
        }
        linkingTarget = (await authenticateUser(ctx, bearerToken(request))).user
      }
      const params = {
        idToken: body.id_token,
        accessToken: body.access_token,
        nonce: body.nonce,
        provider: body.provider,
        clientId: body.client_id,
        issuer: body.issuer,
      }
      return serializeSession(await idTokenGrant(ctx, params, linkingTarget, client, request.log))
    }
    case 'web3': {
      const params = { chain: body.chain, message: body.message, signature: body.signature }
      return serializeSession(await web3Grant(ctx, params, client, request.log))
    }
    default:
      throw new UnsupportedGrantTypeError()
  }
}

/**
 * `POST /token` with `grant_type` `password`, `refresh_token`, `pkce` (`auth_code` +
 * `code_verifier`), `id_token` (`id_token`, `provider` or `issuer`, `access_token`, `nonce`,
 * `link_identity` with the user's bearer token; see `idTokenGrant`) or `web3` (`chain`,
 * `message`, `signature`; see `web3Grant`). The grant type comes from the
 * query (auth-js) or the form body (RFC 6749 §4.3, §6). Form-encoded requests are treated as a
 * generic OAuth 2.0 client's: `username` is accepted for the email or phone, client credentials
 * (HTTP Basic or `client_id`/`client_secret` fields) are ignored, and errors use the RFC 6749
 * §5.2 shape. Responses carry `Cache-Control: no-store` (RFC 6749 §5.1).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/token.go
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-5
 */
export const tokenRoutes: RouteGroup = (app, ctx) => {
  app.post(
    '/token',
    {
      schema: { body: TokenBody, querystring: TokenQuery, response: { 200: SESSION_RESPONSE } },
      config: { oauthErrors: true },
      preHandler: [
        rateLimit(ctx, limitedOperation),
        // Upstream checks the captcha of password and Web3 sign-ins only (`isIgnoreCaptchaRoute`).
        verifyCaptcha(ctx, (request) => ['password', 'web3'].includes(grantType(request))),
      ],
    },
    async (request, reply) => {
      const response = await grant(request.ctx, request)
      return reply.header('cache-control', 'no-store').send(response)
    },
  )
}
