import type { FastifyRequest } from 'fastify'
import type { Static } from 'typebox'
import { sendMagicLink, sendOtp, type OtpParams } from '../../services/magic-link.js'
import { rateLimit, verifyCaptcha } from '../http/hooks.js'
import { requestContext } from '../http/request-context.js'
import { requestRedirectTo } from '../http/redirect-to.js'
import type { RouteGroup } from './group.js'
import { Body, BoolField, ObjectField, OptionalParam, Query, StringField } from '../http/schema.js'

const OtpBody = Body({
  email: StringField(),
  phone: StringField(),
  channel: StringField(),
  create_user: BoolField(),
  data: ObjectField(),
  code_challenge: StringField(),
  code_challenge_method: StringField(),
  gotrue_meta_security: ObjectField(),
})

const RedirectQuery = Query({ redirect_to: OptionalParam() })

/**
 * `POST /otp` (email: a magic link and code; phone: an SMS or WhatsApp code; `create_user`
 * defaults to true) and `POST /magiclink` (the older form of the email one): 200 `{}` whether or
 * not the address is known, or `{"message_id": …}` for a code sent to a confirmed phone.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/otp.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/magic_link.go
 */
export const otpRoutes: RouteGroup = (app, ctx) => {
  const options = {
    schema: { body: OtpBody, querystring: RedirectQuery },
    preHandler: [verifyCaptcha(ctx), rateLimit(ctx, 'otp')],
  }
  /** The request as `POST /otp` reads it (`/magiclink` reads the same, always creating users). */
  const paramsOf = (
    request: FastifyRequest<{
      Body: Static<typeof OtpBody>
      Querystring: Static<typeof RedirectQuery>
    }>,
  ): OtpParams => ({
    email: request.body.email,
    phone: request.body.phone,
    channel: request.body.channel,
    createUser: request.body.create_user ?? true,
    data: request.body.data ?? {},
    codeChallenge: request.body.code_challenge,
    codeChallengeMethod: request.body.code_challenge_method,
    redirectTo: requestRedirectTo(request, ctx.settings),
  })

  app.post('/otp', options, async (request) => {
    const { messageId } = await sendOtp(
      request.ctx,
      paramsOf(request),
      requestContext(request, ctx.settings),
    )
    return messageId === '' ? {} : { message_id: messageId }
  })

  app.post('/magiclink', options, async (request) => {
    const params = { ...paramsOf(request), createUser: true }
    await sendMagicLink(request.ctx, params, requestContext(request, ctx.settings))
    return {}
  })
}
