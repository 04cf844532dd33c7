import { BadRequestError } from '../errors.js'
import { listFactorsOfUser } from '../models/factor.js'
import { tokenAudience } from '../services/authentication.js'
import { updateOwnUser } from '../services/users.js'
import { authOf, requireAuthentication } from './hooks.js'
import { requestAudience, requestContext } from './request-context.js'
import type { RouteGroup } from './routes.js'
import { Body, ObjectField, StringField, obj, str } from './schema.js'
import { serializeUser } from './serializers.js'

const UserUpdateBody = Body({
  app_metadata: ObjectField(),
  data: ObjectField(),
  email: StringField(),
  phone: StringField(),
  password: StringField(),
})

/**
 * `GET /user` and `PUT /user` (`data` and `password`; email and phone changes come with the email
 * issue and are refused for now), for a valid bearer token.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/user.go
 */
export const userRoutes: RouteGroup = (app, ctx) => {
  const { settings } = ctx
  app.addHook('preValidation', requireAuthentication(ctx))

  app.get('/user', async (request) => {
    const { claims, user, identities } = authOf(request)
    const fromToken = tokenAudience(claims)
    if (fromToken === undefined || requestAudience(request, settings, claims) !== fromToken) {
      throw new BadRequestError(
        'validation_failed',
        "Token audience doesn't match request audience",
      )
    }
    return serializeUser(user, identities, await listFactorsOfUser(ctx.db, user.id))
  })

  app.put('/user', { schema: { body: UserUpdateBody } }, async (request) => {
    const { body } = request
    const { user, identities } = await updateOwnUser(
      ctx,
      authOf(request),
      {
        appMetadata: obj(body.app_metadata) !== undefined,
        data: obj(body.data),
        email: str(body.email),
        phone: str(body.phone),
        password: body.password ?? undefined,
      },
      requestContext(request, settings),
      request.deadline,
    )
    return serializeUser(user, identities)
  })
}
