/**
 * `GET /user/identities/authorize` and `DELETE /user/identities/<identity_id>`: a signed-in user
 * links another provider's identity, or unlinks one (never the last), when
 * `SECURITY_MANUAL_LINKING_ENABLED` is on.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/identity.go
 * @module
 */
import { NotFoundError } from '../errors.js'
import { startExternalSignIn } from '../services/external.js'
import { unlinkIdentity } from '../services/identities.js'
import { sendNotification } from '../services/notifications.js'
import { queryOf, sendAuthorizeUrl } from './external.js'
import { authOf, requireAuthentication } from './hooks.js'
import { requestContext } from './request-context.js'
import type { RouteGroup } from './routes.js'
import { Param, Params } from './schema.js'
import { requestRedirectTo } from './redirect-to.js'

const IdentityParams = Params({
  identity_id: Param({
    pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
    errorMessage: 'identity_id must be an UUID',
  }),
})

/** Identity linking and unlinking for the bearer token's user. */
export const identityRoutes: RouteGroup = (app, ctx) => {
  app.addHook('preValidation', requireAuthentication(ctx))

  app.get('/user/identities/authorize', async (request, reply) => {
    if (!ctx.settings.security.manualLinkingEnabled) {
      throw new NotFoundError('manual_linking_disabled', 'Manual linking is disabled')
    }
    const query = queryOf(request)
    const url = await startExternalSignIn(ctx, {
      provider: query.provider ?? '',
      scopes: query.scopes ?? '',
      redirectTo: requestRedirectTo(request, ctx.settings),
      codeChallenge: query.code_challenge ?? '',
      codeChallengeMethod: query.code_challenge_method ?? '',
      query,
      linkingTargetId: authOf(request).user.id,
    })
    return sendAuthorizeUrl(request, reply, url)
  })

  app.delete(
    '/user/identities/:identity_id',
    { schema: { params: IdentityParams } },
    async (request) => {
      const { user, identity } = await unlinkIdentity(
        ctx,
        authOf(request).user.id,
        request.params.identity_id,
        requestContext(request, ctx.settings),
      )
      await sendNotification(
        ctx,
        'identity_unlinked_notification',
        user,
        { provider: identity.provider },
        request.log,
      )
      return {}
    },
  )
}
