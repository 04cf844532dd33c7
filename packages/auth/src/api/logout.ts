import type { FastifyInstance } from 'fastify'
import { addAuditLogEntry } from '../models/audit-log.js'
import { deleteSessions } from '../models/session.js'
import { auditActor } from '../tokens/service.js'
import { queryParam } from './body.js'
import type { AppContext } from './context.js'
import { authOf, requireAuthentication } from './middleware.js'
import { requestContext } from './request-context.js'
import { BadRequestError } from '../errors.js'

/**
 * `POST /logout?scope=global|local|others` (default `global`): deletes the user's sessions, all,
 * the current one, or all but the current one; their refresh tokens go with them. Access JWTs stay
 * valid until they expire. Any body (or none) is accepted. 204.
 *
 * @see ../reference §1.3 "POST /logout"
 */
export function logoutRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post('/logout', { preHandler: requireAuthentication(ctx) }, async (request, reply) => {
    const { user, session } = authOf(request)
    const raw = queryParam(request, 'scope')
    const scope = raw === '' ? 'global' : raw
    if (scope !== 'global' && scope !== 'local' && scope !== 'others') {
      throw new BadRequestError(
        'validation_failed',
        `Unsupported logout scope ${JSON.stringify(raw)}`,
      )
    }
    const rc = requestContext(request, ctx.settings)
    await ctx.db.transaction(async (tx) => {
      const now = ctx.clock.now()
      await addAuditLogEntry(tx, { actor: auditActor(user), action: 'logout', ip: rc.ip }, now)
      if (scope === 'global') await deleteSessions(tx, user.id, 'all')
      else if (session)
        await deleteSessions(tx, user.id, scope === 'local' ? 'only' : 'except', session.id)
      else if (scope === 'others') await deleteSessions(tx, user.id, 'all')
    })
    return reply.code(204).send()
  })
}
