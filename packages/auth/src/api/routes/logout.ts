import { logout, type LogoutScope } from '../../sessions/logout.js'
import { authOf, requireAuthentication } from '../http/hooks.js'
import { clientIp } from '../http/request-context.js'
import type { RouteGroup } from './group.js'
import { OptionalParam, Query } from '../http/schema.js'

const LogoutQuery = Query({
  scope: OptionalParam({
    enum: ['', 'global', 'local', 'others'],
    errorMessage: 'Unsupported logout scope %q',
  }),
})

/**
 * `POST /logout?scope=global|local|others` (default `global`): ends the user's sessions, all, the
 * current one, or all but the current one. Any body (or none) is accepted. 204.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/logout.go
 */
export const logoutRoutes: RouteGroup = (app, ctx) => {
  app.addHook('preValidation', requireAuthentication)

  app.post('/logout', { schema: { querystring: LogoutQuery } }, async (request, reply) => {
    const scope = (request.query.scope || 'global') as LogoutScope
    await logout(request.ctx, authOf(request), scope, clientIp(request, ctx.settings))
    return reply.code(204).send()
  })
}
