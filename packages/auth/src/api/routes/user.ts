import { BadRequestError } from '../../errors.js'
import { tokenAudience } from '../../services/shared/authentication.js'
import { reauthenticate } from '../../services/reauthentication.js'
import { updateOwnUser } from '../../services/users.js'
import { authOf, rateLimit, requireAuthentication } from '../http/hooks.js'
import { requestRedirectTo } from '../http/redirect-to.js'
import { requestAudience, requestContext } from '../http/request-context.js'
import type { RouteGroup } from './group.js'
import {
  Body,
  ObjectField,
  OptionalParam,
  PointerStringField,
  Query,
  StringField,
} from '../http/schema.js'
import { USER_RESPONSE } from '../http/response-schemas.js'
import { serializeUser } from '../http/serializers.js'

const UserUpdateBody = Body({
  app_metadata: ObjectField(),
  data: ObjectField(),
  email: StringField(),
  phone: StringField(),
  channel: StringField(),
  password: PointerStringField(),
  nonce: StringField(),
  code_challenge: StringField(),
  code_challenge_method: StringField(),
})

const UserUpdateQuery = Query({ redirect_to: OptionalParam() })

/**
 * `GET /user`, `PUT /user` (`data`, `password` with `nonce`, `email` with PKCE, `phone` with
 * `channel`) and `GET /reauthenticate` (`{}`, or `{"message_id": …}` for a nonce sent by SMS),
 * for a valid bearer token.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/user.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/reauthenticate.go
 */
export const userRoutes: RouteGroup = (app, ctx) => {
  const { settings } = ctx
  app.addHook('preValidation', requireAuthentication(ctx))

  app.get('/user', { schema: { response: { 200: USER_RESPONSE } } }, (request) => {
    const { claims, user, identities, factors } = authOf(request)
    const fromToken = tokenAudience(claims)
    if (fromToken === undefined || requestAudience(request, settings, claims) !== fromToken) {
      throw new BadRequestError(
        'validation_failed',
        "Token audience doesn't match request audience",
      )
    }
    return serializeUser(user, identities, factors)
  })

  app.put(
    '/user',
    {
      schema: {
        body: UserUpdateBody,
        querystring: UserUpdateQuery,
        response: { 200: USER_RESPONSE },
      },
      preHandler: rateLimit(ctx, 'user'),
    },
    async (request) => {
      const { body } = request
      const { user, identities } = await updateOwnUser(
        ctx,
        authOf(request),
        {
          appMetadata: body.app_metadata !== undefined,
          data: body.data,
          email: body.email,
          phone: body.phone,
          channel: body.channel,
          password: body.password,
          nonce: body.nonce,
          codeChallenge: body.code_challenge,
          codeChallengeMethod: body.code_challenge_method,
          redirectTo: requestRedirectTo(request, settings),
        },
        requestContext(request, settings),
        request.deadline,
        request.log,
      )
      return serializeUser(user, identities)
    },
  )

  app.get('/reauthenticate', async (request) => {
    const messageId = await reauthenticate(
      ctx,
      authOf(request).user.id,
      requestContext(request, settings),
    )
    return messageId === '' ? {} : { message_id: messageId }
  })
}
