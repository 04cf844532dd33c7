import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { addAuditLogEntry } from '../models/audit-log.js'
import { findIdentitiesByUser, insertIdentity } from '../models/identity.js'
import { findUserOwningEmail, insertUser, userToJson } from '../models/user.js'
import { jsonBody, obj, queryParam, str, validateEmail } from './body.js'
import { sendConfirmation } from './confirmation.js'
import type { AppContext } from './context.js'
import { adminActor, requireAdmin } from './middleware.js'
import { redirectTarget } from './redirect.js'
import { requestContext } from './request-context.js'
import { UnprocessableEntityError } from '../errors.js'

/** Roles allowed to invite (the spec: `service_role` or `svc_admin`). */
export const INVITE_ROLES: readonly string[] = ['service_role', 'svc_admin']

/**
 * `POST /invite`: creates a password-less user with `invited_at` and sends an invite (a
 * confirmed existing user, or one of another audience → 422 `email_exists`; an unconfirmed one
 * is invited again).
 *
 * @see ../reference §1.3 "POST /invite"
 */
export function inviteRoutes(app: FastifyInstance, ctx: AppContext): void {
  const { settings } = ctx
  app.post('/invite', { preHandler: requireAdmin(ctx, INVITE_ROLES) }, async (request, reply) => {
    const body = jsonBody(request)
    const email = validateEmail(str(body, 'email'))
    const data = obj(body, 'data') ?? {}
    const rc = requestContext(request, settings)
    const redirectTo = redirectTarget(settings, queryParam(request, 'redirect_to'))
    const json = await ctx.db.transaction(async (tx) => {
      const now = ctx.clock.now()
      // The email is unique across audiences: one taken in another audience is taken.
      let user = await findUserOwningEmail(tx, email)
      if (user && (user.emailConfirmedAt !== null || user.aud !== rc.aud)) {
        throw new UnprocessableEntityError(
          'email_exists',
          'A user with this email address has already been registered',
        )
      }
      if (!user) {
        const id = randomUUID()
        const identityData = {
          ...data,
          sub: id,
          email,
          email_verified: false,
          phone_verified: false,
        }
        user = await insertUser(tx, {
          id,
          aud: rc.aud,
          role: settings.jwt.defaultGroupName,
          email,
          appMetadata: { provider: 'email', providers: ['email'] },
          userMetadata: identityData,
          invitedAt: new Date(now),
          createdAt: new Date(now),
        })
        await insertIdentity(
          tx,
          { providerId: id, userId: id, provider: 'email', identityData },
          now,
        )
      }
      await addAuditLogEntry(
        tx,
        {
          actor: adminActor(request),
          action: 'user_invited',
          traits: { user_id: user.id, user_email: email },
          ip: rc.ip,
        },
        now,
      )
      const invited = await sendConfirmation(ctx, tx, user, 'invite', redirectTo)
      return userToJson(invited, await findIdentitiesByUser(tx, invited.id))
    })
    return reply.send(json)
  })
}
