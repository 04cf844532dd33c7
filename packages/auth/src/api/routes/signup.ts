import type { Static } from 'typebox'
import { signUp } from '../../services/signup.js'
import { rateLimit, verifyCaptcha } from '../http/hooks.js'
import { requestContext } from '../http/request-context.js'
import { requestRedirectTo } from '../http/redirect-to.js'
import { USER_OR_SESSION_RESPONSE } from '../http/response-schemas.js'
import { Body, ObjectField, OptionalParam, Query, StringField } from '../http/schema.js'
import { serializeSession, serializeUser } from '../http/serializers.js'
import type { RouteGroup } from './group.js'

const SignupBody = Body({
  email: StringField(),
  phone: StringField(),
  password: StringField(),
  data: ObjectField(),
  channel: StringField(),
  code_challenge: StringField(),
  code_challenge_method: StringField(),
  gotrue_meta_security: ObjectField(),
})

const SignupQuery = Query({ redirect_to: OptionalParam() })

/**
 * `POST /signup`: email or phone with password (or anonymous, when enabled); a session with
 * auto-confirm, else the user (see `signUp`).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/signup.go
 */
export const signupRoutes: RouteGroup = (app, ctx) => {
  app.post(
    '/signup',
    {
      schema: {
        body: SignupBody,
        querystring: SignupQuery,
        response: { 200: USER_OR_SESSION_RESPONSE },
      },
      // Anonymous sign-ins have their own hourly budget (upstream `limitAnonymousSignIns`),
      // counted only while they are enabled (else the request is refused anyway).
      preHandler: [
        verifyCaptcha(ctx),
        rateLimit(ctx, ({ body }) => {
          const { email, phone } = body as Static<typeof SignupBody>
          if (email !== '' || phone !== '') return 'signup'
          return ctx.settings.external.anonymousUsersEnabled ? 'anonymous_signin' : undefined
        }),
      ],
    },
    async (request) => {
      const { body } = request
      const outcome = await signUp(
        request.ctx,
        {
          email: body.email,
          phone: body.phone,
          password: body.password,
          data: body.data ?? {},
          channel: body.channel,
          codeChallenge: body.code_challenge,
          codeChallengeMethod: body.code_challenge_method,
          redirectTo: requestRedirectTo(request, ctx.settings),
        },
        requestContext(request, ctx.settings),
        request.deadline,
      )
      return outcome.kind === 'session'
        ? serializeSession(outcome.session)
        : serializeUser(outcome.user, outcome.identities)
    },
  )
}
