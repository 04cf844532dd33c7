/**
 * The route groups of the API, registered in one place. A group is a Fastify plugin in its own
 * file (`api/routes/<group>.ts`): it adds its guards once with `addHook` and declares each route with
 * its schemas; handlers read the request, call a service with the request's context
 * (`request.ctx`, under the request's deadline) and serialize the answer.
 *
 * @example A new route group
 * ```ts
 * const ResendBody = Body({ type: StringField(), email: StringField() })
 *
 * export const resendRoutes: RouteGroup = (app, ctx) => {
 *   app.post(
 *     '/resend',
 *     { schema: { body: ResendBody }, preHandler: [verifyCaptcha(ctx), rateLimit(ctx, 'otp')] },
 *     async (request) => resend(request.ctx, { type: request.body.type, email: request.body.email }),
 *   )
 * }
 * // and add `resendRoutes` to ROUTE_GROUPS below
 * ```
 * @module
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyPluginCallback } from 'fastify'
import type { AppContext } from '../context.js'
import { adminRoutes } from './routes/admin.js'
import { customProviderRoutes } from './routes/custom-providers.js'
import { externalRoutes } from './routes/external.js'
import { adminFactorRoutes, factorRoutes } from './routes/factors.js'
import { healthRoutes } from './routes/health.js'
import { identityRoutes } from './routes/identities.js'
import { inviteRoutes } from './routes/invite.js'
import { logoutRoutes } from './routes/logout.js'
import { oauthAdminClientRoutes, oauthRegistrationRoutes } from './routes/oauth-clients.js'
import { oauthServerRoutes, oauthUserRoutes } from './routes/oauth-server.js'
import { registerOpenApi } from './http/openapi.js'
import { registerRequestAppContext } from './http/request-app-context.js'
import { otpRoutes } from './routes/otp.js'
import { adminPasskeyRoutes, passkeyRoutes, passkeySignInRoutes } from './routes/passkeys.js'
import type { RouteGroup } from './routes/group.js'
import { recoverRoutes } from './routes/recover.js'
import { resendRoutes } from './routes/resend.js'
import { settingsRoutes } from './routes/settings.js'
import { signupRoutes } from './routes/signup.js'
import { ssoAdminRoutes, ssoRoutes } from './routes/sso.js'
import { tokenRoutes } from './routes/token.js'
import { userRoutes } from './routes/user.js'
import { verifyRoutes } from './routes/verify.js'

/** What every route group is given: the settings and services. */
export interface RouteOptions {
  readonly ctx: AppContext
}

/** Every route group, in registration order. */
export const ROUTE_GROUPS: readonly RouteGroup[] = [
  healthRoutes,
  settingsRoutes,
  signupRoutes,
  tokenRoutes,
  verifyRoutes,
  otpRoutes,
  recoverRoutes,
  resendRoutes,
  userRoutes,
  logoutRoutes,
  inviteRoutes,
  adminRoutes,
  customProviderRoutes,
  factorRoutes,
  adminFactorRoutes,
  passkeySignInRoutes,
  passkeyRoutes,
  adminPasskeyRoutes,
  externalRoutes,
  identityRoutes,
  ssoRoutes,
  ssoAdminRoutes,
  oauthAdminClientRoutes,
  oauthRegistrationRoutes,
  oauthServerRoutes,
  oauthUserRoutes,
]

/**
 * Registers every route group as a Fastify plugin of its own, so that the hooks a group adds
 * (its guards) apply to its routes only; first the OpenAPI document, which records them (and,
 * with `API_OPENAPI_ENABLED`, serves itself at `/openapi.json`).
 */
export const authRoutes: FastifyPluginCallback<RouteOptions> = (app, { ctx }, done) => {
  registerRequestAppContext(app, ctx)
  registerOpenApi(app, { serve: ctx.settings.apiOpenapiEnabled })
  for (const group of ROUTE_GROUPS) {
    void app.register((scope, _options, registered) => {
      group(scope.withTypeProvider<TypeBoxTypeProvider>(), ctx)
      registered()
    })
  }
  done()
}
