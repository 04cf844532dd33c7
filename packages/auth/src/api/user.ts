import type { FastifyInstance } from 'fastify'
import { addAuditLogEntry } from '../models/audit-log.js'
import { findIdentitiesByUser } from '../models/identity.js'
import { deleteSessions } from '../models/session.js'
import { getUserById, updateUser, userToJson, type UserChanges } from '../models/user.js'
import { auditActor } from '../tokens/service.js'
import { jsonBody, obj, str } from './body.js'
import type { AppContext } from './context.js'
import { authOf, requestAudience, requireAuthentication, tokenAudience } from './middleware.js'
import { enforcePasswordPolicy } from './password-policy.js'
import { requestContext } from './request-context.js'
import { BadRequestError, ForbiddenError, UnprocessableEntityError } from '../errors.js'

/**
 * Merges `data` into metadata: keys with `null` are removed, others set (upstream
 * `UpdateUserMetaData`).
 */
export function mergeMetadata(
  current: Readonly<Record<string, unknown>>,
  data: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...current }
  for (const [key, value] of Object.entries(data)) {
    if (value === null) Reflect.deleteProperty(merged, key)
    // defineProperty: a "__proto__" key is stored as data, never as the object's prototype.
    else
      Object.defineProperty(merged, key, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      })
  }
  return merged
}

/**
 * `GET /user` and `PUT /user` (`data` and `password`; email and phone changes come with the email
 * issue and are refused for now).
 *
 * @see ../reference §1.3 "GET /user", "PUT /user"
 */
export function userRoutes(app: FastifyInstance, ctx: AppContext): void {
  const { settings } = ctx
  const auth = requireAuthentication(ctx)

  app.get('/user', { preHandler: auth }, async (request, reply) => {
    const { claims, user, identities } = authOf(request)
    const fromToken = tokenAudience(claims)
    if (fromToken === undefined || requestAudience(request, settings, claims) !== fromToken) {
      throw new BadRequestError(
        'validation_failed',
        "Token audience doesn't match request audience",
      )
    }
    return reply.send(userToJson(user, identities))
  })

  app.put('/user', { preHandler: auth }, async (request, reply) => {
    const { user, session } = authOf(request)
    const body = jsonBody(request)
    const rc = requestContext(request, settings)
    if (obj(body, 'app_metadata') !== undefined) {
      throw new ForbiddenError('not_admin', 'Updating app_metadata requires admin privileges')
    }
    const data = obj(body, 'data')
    const email = str(body, 'email')
    const phone = str(body, 'phone').replace(/[\s+]/g, '')
    if (
      (email !== '' && email.toLowerCase() !== user.email) ||
      (phone !== '' && phone !== user.phone)
    ) {
      throw new UnprocessableEntityError(
        'validation_failed',
        'Changing the email address or phone number is not supported by this server yet',
      )
    }
    const passwordGiven = body.password !== undefined && body.password !== null
    const password = str(body, 'password')
    let encryptedPassword: string | undefined
    if (passwordGiven) {
      if (user.isAnonymous && user.email === '' && user.phone === '') {
        throw new UnprocessableEntityError(
          'validation_failed',
          'Updating password of an anonymous user without an email or phone is not allowed',
        )
      }
      enforcePasswordPolicy(settings, password)
      if (settings.security.updatePasswordRequireReauthentication) {
        const sessionAge = session ? ctx.clock.now() - session.createdAt.getTime() : Infinity
        if (sessionAge > 24 * 3_600_000) {
          throw new BadRequestError(
            'reauthentication_needed',
            'Password update requires reauthentication',
          )
        }
      }
      if (
        user.encryptedPassword !== '' &&
        (await ctx.passwords.verify(password, user.encryptedPassword, request.deadline))
      ) {
        throw new UnprocessableEntityError(
          'same_password',
          'New password should be different from the old password.',
        )
      }
      encryptedPassword = await ctx.passwords.hash(password, request.deadline)
    }
    const updated = await ctx.db.transaction(async (tx) => {
      const now = ctx.clock.now()
      const current = await getUserById(tx, user.id, true)
      const changes: UserChanges = {}
      if (data !== undefined) changes.userMetadata = mergeMetadata(current.userMetadata, data)
      if (encryptedPassword !== undefined) changes.encryptedPassword = encryptedPassword
      const result = await updateUser(tx, user.id, changes, now)
      if (encryptedPassword !== undefined) {
        await deleteSessions(tx, user.id, 'except', session?.id)
        await addAuditLogEntry(
          tx,
          { actor: auditActor(result), action: 'user_updated_password', ip: rc.ip },
          now,
        )
      }
      if (data !== undefined) {
        await addAuditLogEntry(
          tx,
          { actor: auditActor(result), action: 'user_modified', ip: rc.ip },
          now,
        )
      }
      return userToJson(result, await findIdentitiesByUser(tx, user.id))
    })
    return reply.send(updated)
  })
}
