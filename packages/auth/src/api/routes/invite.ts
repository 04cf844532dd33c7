import { adminAuditActor } from '../../models/audit-log.js'
import { inviteUser } from '../../services/invite.js'
import { adminClaimsOf, requireAdmin } from '../http/hooks.js'
import { requestContext } from '../http/request-context.js'
import { requestRedirectTo } from '../http/redirect-to.js'
import type { RouteGroup } from './group.js'
import { Body, ObjectField, OptionalParam, Query, StringField } from '../http/schema.js'
import { serializeUser } from '../http/serializers.js'

/** Roles allowed to invite (the spec: `service_role` or `svc_admin`). */
export const INVITE_ROLES: readonly string[] = ['service_role', 'svc_admin']

const InviteBody = Body({ email: StringField(), data: ObjectField() })

const InviteQuery = Query({ redirect_to: OptionalParam() })

/**
 * `POST /invite`: creates a password-less user with `invited_at` and sends an invite (see
 * `inviteUser`), for tokens of the roles in {@link INVITE_ROLES}.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/invite.go
 */
export const inviteRoutes: RouteGroup = (app, ctx) => {
  app.addHook('preValidation', requireAdmin(ctx, INVITE_ROLES))

  app.post(
    '/invite',
    { schema: { body: InviteBody, querystring: InviteQuery } },
    async (request) => {
      const { user, identities } = await inviteUser(
        request.ctx,
        {
          email: request.body.email,
          data: request.body.data ?? {},
          redirectTo: requestRedirectTo(request, ctx.settings),
        },
        adminAuditActor(adminClaimsOf(request)),
        requestContext(request, ctx.settings),
      )
      return serializeUser(user, identities)
    },
  )
}
