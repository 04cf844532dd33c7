import { UnprocessableEntityError } from '../errors.js'
import { recoverPassword } from '../services/recovery.js'
import { resend } from '../services/resend.js'
import { rateLimit, verifyCaptcha } from './hooks.js'
import { requestContext } from './request-context.js'
import type { RouteGroup } from './routes.js'
import { Body, ObjectField, OptionalParam, Query, StringField, str } from './schema.js'

const RecoverBody = Body({
  email: StringField(),
  code_challenge: StringField(),
  code_challenge_method: StringField(),
  gotrue_meta_security: ObjectField(),
})

const ResendBody = Body({
  type: StringField(),
  email: StringField(),
  phone: StringField(),
  code_challenge: StringField(),
  code_challenge_method: StringField(),
  gotrue_meta_security: ObjectField(),
})

const RedirectQuery = Query({ redirect_to: OptionalParam() })

/**
 * `POST /recover` (a recovery link and code to a known address) and `POST /resend` (a pending
 * confirmation or email change again): 200 `{}` whether or not the address is known.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/recover.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/resend.go
 */
export const recoverRoutes: RouteGroup = (app, ctx) => {
  const guards = [verifyCaptcha(ctx), rateLimit(ctx, 'otp')]
  app.post(
    '/recover',
    { schema: { body: RecoverBody, querystring: RedirectQuery }, preHandler: guards },
    async (request) => {
      if (!ctx.settings.external.emailEnabled) {
        throw new UnprocessableEntityError('email_provider_disabled', 'Email logins are disabled')
      }
      const { body } = request
      await recoverPassword(
        ctx,
        {
          email: str(body.email),
          codeChallenge: str(body.code_challenge),
          codeChallengeMethod: str(body.code_challenge_method),
          redirectTo: request.query.redirect_to ?? '',
        },
        requestContext(request, ctx.settings),
      )
      return {}
    },
  )

  app.post(
    '/resend',
    { schema: { body: ResendBody, querystring: RedirectQuery }, preHandler: guards },
    async (request) => {
      const { body } = request
      await resend(
        ctx,
        {
          type: str(body.type),
          email: str(body.email),
          phone: str(body.phone),
          codeChallenge: str(body.code_challenge),
          codeChallengeMethod: str(body.code_challenge_method),
          redirectTo: request.query.redirect_to ?? '',
        },
        requestContext(request, ctx.settings),
      )
      return {}
    },
  )
}
