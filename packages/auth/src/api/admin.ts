import { randomBytes, randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { parseGoDuration } from '../conf/duration.js'
import { addAuditLogEntry } from '../models/audit-log.js'
import {
  findIdentitiesByUser,
  findIdentitiesByUsers,
  insertIdentity,
  updateIdentityData,
} from '../models/identity.js'
import { deleteSessions } from '../models/session.js'
import {
  deleteUser,
  emailTaken,
  findUserById,
  getUserById,
  insertUser,
  listUsers,
  phoneTaken,
  updateUser,
  userToJson,
  type ListUsersOptions,
  type UserChanges,
} from '../models/user.js'
import type { Queryable } from '../storage/db.js'
import {
  bool,
  isUuid,
  jsonBody,
  obj,
  optionalBody,
  queryParam,
  str,
  validateEmail,
  validatePhone,
  type Body,
} from './body.js'
import type { AppContext } from './context.js'
import { adminActor, requireAdmin } from './middleware.js'
import { enforcePasswordLength, enforcePasswordPolicy } from './password-policy.js'
import { requestContext } from './request-context.js'
import { mergeMetadata } from './user.js'
import { BadRequestError, NotFoundError, UnprocessableEntityError } from '../errors.js'

const NIL_UUID = '00000000-0000-0000-0000-000000000000'

/**
 * Parses `ban_duration`: a Go duration (units ns, us, ms, s, m, h) or `none`.
 *
 * @returns Milliseconds, or `null` for `none` (unban).
 * @throws {@link AuthError} 400 `validation_failed` "invalid format for ban duration: …".
 */
export function parseBanDuration(value: string): number | null {
  if (value === 'none') return null
  try {
    return parseGoDuration(value)
  } catch (error) {
    throw new BadRequestError(
      'validation_failed',
      `invalid format for ban duration: ${error instanceof Error ? error.message : String(error)}`,
    )
  }
}

/** A random 64-character password for users created without one (upstream). */
function randomPassword(): string {
  return randomBytes(48).toString('base64url').slice(0, 64)
}

/**
 * The `Link` header of a page (upstream `addPaginationHeaders`): `rel="next"` when there is a
 * later page, and always `rel="last"`.
 */
export function paginationLink(path: string, page: number, perPage: number, total: number): string {
  const last = Math.ceil(total / perPage)
  const link = (p: number): string => `<${path}?page=${String(p)}&per_page=${String(perPage)}>`
  const links: string[] = []
  if (page < last) links.push(`${link(page + 1)}; rel="next"`)
  links.push(`${link(last)}; rel="last"`)
  return links.join(', ')
}

function positiveInt(value: string, fallback: number, name: string): number {
  if (value === '') return fallback
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new BadRequestError('validation_failed', `Bad Pagination Parameters: ${name}`)
  return Number(value)
}

const SORT_COLUMNS = new Set(['created_at', 'email', 'phone', 'updated_at', 'last_sign_in_at'])

function parseSort(value: string): ListUsersOptions['sort'] {
  if (value === '') return { column: 'created_at', desc: true }
  const [column = '', direction = 'desc'] = value.trim().split(/\s+/)
  if (!SORT_COLUMNS.has(column) || !['asc', 'desc'].includes(direction.toLowerCase())) {
    throw new BadRequestError('validation_failed', `Bad Sort Parameters: ${value}`)
  }
  return {
    column: column as ListUsersOptions['sort']['column'],
    desc: direction.toLowerCase() === 'desc',
  }
}

async function userJson(tx: Queryable, id: string): Promise<Record<string, unknown>> {
  const user = await getUserById(tx, id)
  return userToJson(user, await findIdentitiesByUser(tx, id))
}

async function assertEmailFree(tx: Queryable, email: string): Promise<void> {
  if (await emailTaken(tx, email)) {
    throw new UnprocessableEntityError(
      'email_exists',
      'A user with this email address has already been registered',
    )
  }
}

async function assertPhoneFree(tx: Queryable, phone: string): Promise<void> {
  if (await phoneTaken(tx, phone)) {
    throw new UnprocessableEntityError(
      'phone_exists',
      'Phone number already registered by another user',
    )
  }
}

function userIdParam(request: FastifyRequest): string {
  const id = (request.params as { user_id?: string }).user_id ?? ''
  if (!isUuid(id)) throw new NotFoundError('validation_failed', 'user_id must be an UUID')
  return id
}

async function loadTarget(tx: Queryable, id: string) {
  const user = await findUserById(tx, id, true)
  if (!user) throw new NotFoundError('user_not_found', 'User not found')
  return user
}

/**
 * Admin users API: `GET`/`POST /admin/users`, `GET`/`PUT`/`DELETE /admin/users/<user_id>`, for
 * tokens whose role is in `JWT_ADMIN_ROLES`.
 *
 * @see ../reference §1.3 "Admin users"
 */
export function adminRoutes(app: FastifyInstance, ctx: AppContext): void {
  const { settings } = ctx
  const admin = requireAdmin(ctx)

  app.get('/admin/users', { preHandler: admin }, async (request, reply) => {
    const page = positiveInt(queryParam(request, 'page'), 1, 'page')
    const perPage = positiveInt(queryParam(request, 'per_page'), 50, 'per_page')
    const aud = requestContext(request, settings).aud
    const { users, total } = await listUsers(ctx.db, {
      aud,
      page,
      perPage,
      filter: queryParam(request, 'filter'),
      sort: parseSort(queryParam(request, 'sort')),
    })
    const identities = await findIdentitiesByUsers(
      ctx.db,
      users.map((u) => u.id),
    )
    reply.header('x-total-count', String(total))
    reply.header('link', paginationLink('/admin/users', page, perPage, total))
    return reply.send({ users: users.map((u) => userToJson(u, identities.get(u.id) ?? [])), aud })
  })

  app.post('/admin/users', { preHandler: admin }, async (request, reply) => {
    const body = jsonBody(request)
    const rc = requestContext(request, settings)
    const aud = str(body, 'aud') || rc.aud
    let email = str(body, 'email')
    let phone = str(body, 'phone')
    if (email === '' && phone === '') {
      throw new BadRequestError(
        'validation_failed',
        'Cannot create a user without either an email or phone',
      )
    }
    if (email !== '') email = validateEmail(email)
    if (phone !== '') phone = validatePhone(phone)
    const password = str(body, 'password')
    const passwordHash = str(body, 'password_hash')
    if (password !== '' && passwordHash !== '') {
      throw new BadRequestError(
        'validation_failed',
        'Only a password or a password hash should be provided',
      )
    }
    // No strength check on create (upstream), but never a password bcrypt would truncate.
    enforcePasswordLength(password)
    if (passwordHash !== '' && !/^\$2[aby]\$\d\d\$.{53}$/.test(passwordHash)) {
      throw new BadRequestError('validation_failed', 'Invalid password hash format')
    }
    let id = str(body, 'id')
    if (id !== '') {
      if (!isUuid(id))
        throw new BadRequestError('validation_failed', 'ID must conform to the uuid v4 format')
      if (id === NIL_UUID) throw new BadRequestError('validation_failed', 'ID cannot be a nil uuid')
      id = id.toLowerCase()
    } else {
      id = randomUUID()
    }
    const banDuration = str(body, 'ban_duration')
    const ban = banDuration === '' ? undefined : parseBanDuration(banDuration)
    const encryptedPassword =
      passwordHash !== ''
        ? passwordHash
        : await ctx.passwords.hash(password === '' ? randomPassword() : password, request.deadline)
    const json = await ctx.db.transaction(async (tx) => {
      const now = ctx.clock.now()
      if (email !== '') await assertEmailFree(tx, email)
      if (phone !== '') await assertPhoneFree(tx, phone)
      const providers = [...(email !== '' ? ['email'] : []), ...(phone !== '' ? ['phone'] : [])]
      const userMetadata = obj(body, 'user_metadata') ?? {}
      const appMetadata = {
        ...(obj(body, 'app_metadata') ?? {}),
        provider: providers[0],
        providers,
      }
      const emailConfirm = bool(body, 'email_confirm') === true
      const phoneConfirm = bool(body, 'phone_confirm') === true
      const user = await insertUser(tx, {
        id,
        aud,
        role: str(body, 'role') || settings.jwt.defaultGroupName,
        email,
        phone,
        encryptedPassword,
        appMetadata,
        userMetadata,
        emailConfirmedAt: email !== '' && emailConfirm ? new Date(now) : null,
        phoneConfirmedAt: phone !== '' && phoneConfirm ? new Date(now) : null,
        bannedUntil: ban === undefined || ban === null ? null : new Date(now + ban),
        createdAt: new Date(now),
      })
      const identities = [
        ...(email !== ''
          ? [
              {
                provider: 'email',
                identityData: {
                  sub: id,
                  email,
                  email_verified: emailConfirm,
                  phone_verified: false,
                },
              },
            ]
          : []),
        ...(phone !== ''
          ? [
              {
                provider: 'phone',
                identityData: {
                  sub: id,
                  phone,
                  email_verified: false,
                  phone_verified: phoneConfirm,
                },
              },
            ]
          : []),
      ]
      for (const identity of identities) {
        await insertIdentity(tx, { providerId: id, userId: id, ...identity }, now)
      }
      await addAuditLogEntry(
        tx,
        {
          actor: adminActor(request),
          action: 'user_signedup',
          traits: { user_id: id, user_email: email, user_phone: phone },
          ip: rc.ip,
        },
        now,
      )
      return userToJson(user, await findIdentitiesByUser(tx, id))
    })
    return reply.send(json)
  })

  app.get('/admin/users/:user_id', { preHandler: admin }, async (request, reply) => {
    const id = userIdParam(request)
    const user = await findUserById(ctx.db, id)
    if (!user) throw new NotFoundError('user_not_found', 'User not found')
    return reply.send(userToJson(user, await findIdentitiesByUser(ctx.db, id)))
  })

  const updateHandler = async (request: FastifyRequest, reply: FastifyReply) => {
    const id = userIdParam(request)
    const body = jsonBody(request)
    const rc = requestContext(request, settings)
    const changes = await adminChanges(ctx, body, request.deadline)
    const json = await ctx.db.transaction(async (tx) => {
      const now = ctx.clock.now()
      const user = await loadTarget(tx, id)
      const update: UserChanges = { ...changes.fields }
      if (changes.email !== undefined && changes.email !== user.email) {
        await assertEmailFree(tx, changes.email)
        update.email = changes.email
        await updateIdentityData(tx, id, 'email', { email: changes.email }, now)
      }
      if (changes.phone !== undefined && changes.phone !== user.phone) {
        await assertPhoneFree(tx, changes.phone)
        update.phone = changes.phone
        await updateIdentityData(tx, id, 'phone', { phone: changes.phone }, now)
      }
      if (changes.userMetadata)
        update.userMetadata = mergeMetadata(user.userMetadata, changes.userMetadata)
      if (changes.appMetadata)
        update.appMetadata = mergeMetadata(user.appMetadata, changes.appMetadata)
      if (changes.emailConfirm === true && user.emailConfirmedAt === null) {
        update.emailConfirmedAt = new Date(now)
        await updateIdentityData(tx, id, 'email', { email_verified: true }, now)
      }
      if (changes.phoneConfirm === true && user.phoneConfirmedAt === null) {
        update.phoneConfirmedAt = new Date(now)
        await updateIdentityData(tx, id, 'phone', { phone_verified: true }, now)
      }
      if (changes.ban !== undefined)
        update.bannedUntil = changes.ban === null ? null : new Date(now + changes.ban)
      await updateUser(tx, id, update, now)
      if (update.encryptedPassword !== undefined) await deleteSessions(tx, id, 'all')
      await addAuditLogEntry(
        tx,
        {
          actor: adminActor(request),
          action: 'user_modified',
          traits: { user_id: id, user_email: user.email, user_phone: user.phone },
          ip: rc.ip,
        },
        now,
      )
      return userJson(tx, id)
    })
    return reply.send(json)
  }
  // The spec lists POST and PUT for updates; upstream has PUT only. Both are served.
  app.put('/admin/users/:user_id', { preHandler: admin }, updateHandler)
  app.post('/admin/users/:user_id', { preHandler: admin }, updateHandler)

  app.delete('/admin/users/:user_id', { preHandler: admin }, async (request, reply) => {
    const id = userIdParam(request)
    const body = optionalBody(request)
    const soft = bool(body, 'should_soft_delete') === true
    const rc = requestContext(request, settings)
    await ctx.db.transaction(async (tx) => {
      const now = ctx.clock.now()
      const user = await loadTarget(tx, id)
      await addAuditLogEntry(
        tx,
        {
          actor: adminActor(request),
          action: 'user_deleted',
          traits: { user_id: id, user_email: user.email, user_phone: user.phone },
          ip: rc.ip,
        },
        now,
      )
      if (soft) {
        await deleteSessions(tx, id, 'all')
        await tx.query(
          `UPDATE ${tx.t.users} SET email = NULL, phone = NULL, encrypted_password = '',
             raw_user_meta_data = '{}'::jsonb, raw_app_meta_data = '{}'::jsonb, deleted_at = $2,
             updated_at = $2 WHERE id = $1`,
          [id, new Date(now)],
        )
        await tx.query(`DELETE FROM ${tx.t.identities} WHERE user_id = $1`, [id])
      } else {
        await deleteUser(tx, id)
      }
    })
    return reply.send({})
  })
}

interface AdminChanges {
  fields: UserChanges
  email?: string
  phone?: string
  userMetadata?: Record<string, unknown>
  appMetadata?: Record<string, unknown>
  emailConfirm?: boolean
  phoneConfirm?: boolean
  /** Milliseconds, `null` to unban, `undefined` to leave alone. */
  ban?: number | null
}

/** Validates a `PUT /admin/users/<id>` body before the transaction (hashing included). */
async function adminChanges(
  ctx: AppContext,
  body: Body,
  signal: AbortSignal,
): Promise<AdminChanges> {
  const changes: AdminChanges = { fields: {} }
  const role = str(body, 'role')
  if (role !== '') changes.fields.role = role
  const aud = str(body, 'aud')
  if (aud !== '') changes.fields.aud = aud
  const email = str(body, 'email')
  if (email !== '') changes.email = validateEmail(email)
  const phone = str(body, 'phone')
  if (phone !== '') changes.phone = validatePhone(phone)
  if (body.password !== undefined && body.password !== null) {
    const password = str(body, 'password')
    enforcePasswordPolicy(ctx.settings, password)
    changes.fields.encryptedPassword = await ctx.passwords.hash(password, signal)
  }
  changes.userMetadata = obj(body, 'user_metadata')
  changes.appMetadata = obj(body, 'app_metadata')
  changes.emailConfirm = bool(body, 'email_confirm')
  changes.phoneConfirm = bool(body, 'phone_confirm')
  const banDuration = str(body, 'ban_duration')
  if (banDuration !== '') changes.ban = parseBanDuration(banDuration)
  return changes
}
