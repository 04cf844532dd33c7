import { BadRequestError } from '../../errors.js'
import { recoverPassword } from '../../services/recovery.js'
import { rateLimit, verifyCaptcha } from '../http/hooks.js'
import { requestContext } from '../http/request-context.js'
import { requestRedirectTo } from '../http/redirect-to.js'
import type { RouteGroup } from './group.js'
import { Body, ObjectField, OptionalParam, Query, StringField } from '../http/schema.js'

const RecoverBody = Body({
  email: StringField(),
  code_challenge: StringField(),
  code_challenge_method: StringField(),
  gotrue_meta_security: ObjectField(),
})

const RedirectQuery = Query({ redirect_to: OptionalParam() })

/**
 * `POST /recover`: a recovery link and code to a known address; 200 `{}` whether or not the
 * address is known.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/recover.go
 */
export const recoverRoutes: RouteGroup = (app, ctx) => {
  app.post(
    '/recover',
    {
      schema: { body: RecoverBody, querystring: RedirectQuery },
      preHandler: [verifyCaptcha(ctx), rateLimit(ctx, 'otp')],
    },
    async (request) => {
      if (!ctx.settings.external.emailEnabled) {
        throw new BadRequestError('email_provider_disabled', 'Email logins are disabled')
      }
      const { body } = request
      await recoverPassword(
        request.ctx,
        {
          email: body.email,
          codeChallenge: body.code_challenge,
          codeChallengeMethod: body.code_challenge_method,
          redirectTo: requestRedirectTo(request, ctx.settings),
        },
        requestContext(request, ctx.settings),
      )
      return {}
    },
  )
}
