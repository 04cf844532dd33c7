/**
 * `GET /user/identities/authorize` and `DELETE /user/identities/<identity_id>`: a signed-in user
 * links another provider's identity, or unlinks one (never the last), when
 * `SECURITY_MANUAL_LINKING_ENABLED` is on. The link's URL is this server's `/authorize` with a
 * link ticket (not the provider's URL, as upstream answers), so that the browser that follows it
 * is bound to the flow; see `services/external.ts`.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/identity.go
 * @module
 */
import { NotFoundError } from '../../errors.js'
import { startIdentityLinking } from '../../services/external.js'
import { unlinkIdentity } from '../../services/shared/identities.js'
import { sendNotification } from '../../services/shared/notifications.js'
import { authorizeParams, sendAuthorizeUrl } from './external.js'
import { authOf, requireAuthentication } from '../http/hooks.js'
import { requestContext } from '../http/request-context.js'
import type { RouteGroup } from './group.js'
import { Param, Params } from '../http/schema.js'

const IdentityParams = Params({
  identity_id: Param({
    pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
    errorMessage: 'identity_id must be an UUID',
  }),
})

/** Identity linking and unlinking for the bearer token's user. */
export const identityRoutes: RouteGroup = (app, ctx) => {
  app.addHook('preValidation', requireAuthentication)

  app.get('/user/identities/authorize', async (request, reply) => {
    if (!ctx.settings.security.manualLinkingEnabled) {
      throw new NotFoundError('manual_linking_disabled', 'Manual linking is disabled')
    }
    const auth = authOf(request)
    const url = await startIdentityLinking(request.ctx, authorizeParams(request.ctx, request), {
      userId: auth.user.id,
      sessionId: auth.session?.id,
    })
    return sendAuthorizeUrl(request, reply, url)
  })

  app.delete(
    '/user/identities/:identity_id',
    { schema: { params: IdentityParams } },
    async (request) => {
      const client = requestContext(request, ctx.settings)
      const { user, identity } = await unlinkIdentity(
        request.ctx,
        authOf(request).user.id,
        request.params.identity_id,
        client,
      )
      await sendNotification(
        request.ctx,
        'identity_unlinked_notification',
        user,
        { provider: identity.provider, acceptLanguage: client.acceptLanguage },
        request.log,
      )
      return {}
    },
  )
}
