import { BadRequestError } from '../../errors.js'
import { tokenAudience } from '../../services/shared/authentication.js'
import { reauthenticate } from '../../services/reauthentication.js'
import { endSession, listSessions } from '../../services/device-sessions.js'
import { updateOwnUser } from '../../services/users.js'
import { UUID_PATTERN } from '../../services/shared/validation.js'
import { auditActor } from '../../models/audit-log.js'
import { authOf, rateLimit, requireAuthentication } from '../http/hooks.js'
import { requestRedirectTo } from '../http/redirect-to.js'
import { requestAudience, requestContext } from '../http/request-context.js'
import type { RouteGroup } from './group.js'
import {
  Body,
  ObjectField,
  OptionalParam,
  Param,
  Params,
  PointerStringField,
  Query,
  StringField,
} from '../http/schema.js'
import { USER_RESPONSE } from '../http/response-schemas.js'
import { serializeDeviceSession, serializeUser } from '../http/serializers.js'

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

const SessionParams = Params({
  session_id: Param({ pattern: UUID_PATTERN, errorMessage: 'Session not found' }),
})

/**
 * `GET /user`, `PUT /user` (`data`, `password` with `nonce`, `email` with PKCE, `phone` with
 * `channel`), `GET /reauthenticate` (`{}`, or `{"message_id": …}` for a nonce sent by SMS) and the
 * device sessions `GET /user/sessions` and `DELETE /user/sessions/<id>` (beyond upstream), for a
 * valid bearer token.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/user.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/reauthenticate.go
 */
export const userRoutes: RouteGroup = (app, ctx) => {
  const { settings } = ctx
  app.addHook('preValidation', requireAuthentication)

  // Device sessions (beyond upstream): the caller's sessions, and ending one of them.
  app.get('/user/sessions', async (request) => {
    const { user, session } = authOf(request)
    const sessions = await listSessions(request.ctx, user.id, session?.id)
    return { sessions: sessions.map(serializeDeviceSession) }
  })

  app.delete(
    '/user/sessions/:session_id',
    { schema: { params: SessionParams } },
    async (request) => {
      const { user } = authOf(request)
      await endSession(
        request.ctx,
        user.id,
        request.params.session_id,
        auditActor(user),
        requestContext(request, settings),
      )
      return {}
    },
  )

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
        request.ctx,
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
      request.ctx,
      authOf(request).user.id,
      requestContext(request, settings),
    )
    return messageId === '' ? {} : { message_id: messageId }
  })
}
