import { resend } from '../../services/resend.js'
import { rateLimit, verifyCaptcha } from '../http/hooks.js'
import { requestContext } from '../http/request-context.js'
import { requestRedirectTo } from '../http/redirect-to.js'
import type { RouteGroup } from './group.js'
import { Body, ObjectField, OptionalParam, Query, StringField } from '../http/schema.js'

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
 * `POST /resend`: a pending confirmation, email change or phone change again; 200 `{}` whether
 * or not there was one, or `{"message_id": …}` for a code sent by SMS.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/resend.go
 */
export const resendRoutes: RouteGroup = (app, ctx) => {
  app.post(
    '/resend',
    {
      schema: { body: ResendBody, querystring: RedirectQuery },
      preHandler: [verifyCaptcha(ctx), rateLimit(ctx, 'otp')],
    },
    async (request) => {
      const { body } = request
      const messageId = await resend(
        request.ctx,
        {
          type: body.type,
          email: body.email,
          phone: body.phone,
          codeChallenge: body.code_challenge,
          codeChallengeMethod: body.code_challenge_method,
          redirectTo: requestRedirectTo(request, ctx.settings),
        },
        requestContext(request, ctx.settings),
      )
      return messageId === '' ? {} : { message_id: messageId }
    },
  )
}
