/**
 * The admin users API: list, read, create, update and delete users with an admin token.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/admin.go
 * @module
 */
import { parseGoDuration } from '@gatehouse/settings'
import type { AppContext, RequestContext } from '../context.js'
import { BadRequestError, UnprocessableEntityError } from '../errors.js'
import { type AuditActor } from '../models/audit-log.js'
import { deleteFactorsOfUser } from '../models/factor.js'
import {
  deleteIdentitiesOfUser,
  findIdentitiesByUsers,
  updateIdentityData,
} from '../models/identity.js'
import type { JsonObject } from '../models/json.js'
import { deleteSessions } from '../models/session.js'
import {
  deleteUser,
  findUserOwningPhone,
  getUserById,
  listUsers,
  mergeMetadata,
  softDeleteUser,
  updateUser,
  type ListUsersOptions,
  type User,
  type UserChanges,
} from '../models/user.js'
import type { Queryable } from '../storage/db.js'
import {
  enforcePasswordLength,
  enforceStrongPassword,
  randomPassword,
  refuseLeakedPassword,
} from './shared/passwords.js'
import {
  assertEmailFree,
  createUser,
  userWithIdentities,
  type UserWithIdentities,
} from './users.js'
import { isUuid, NIL_UUID, validateEmail, validatePhone } from './shared/validation.js'

/**
 * What the admin services need: the settings, the database, time, randomness and the password
 * hasher (the admin API passes its request's context; `gatehouse-auth admin` builds only this).
 */
export type AdminContext = Pick<
  AppContext,
  'settings' | 'db' | 'clock' | 'random' | 'passwords' | 'pwnedPasswords' | 'audit'
>

/**
 * Parses `ban_duration`: a Go duration (units ns, us, ms, s, m, h) or `none`.
 *
 * @returns Milliseconds, or `null` for `none` (unban).
 * @throws {@link BadRequestError} `validation_failed` "invalid format for ban duration: …".
 */
export function parseBanDuration(value: string): number | null {
  if (value === 'none') return null
  try {
    return parseGoDuration(value)
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error)
    throw new BadRequestError('validation_failed', `invalid format for ban duration: ${detail}`, {
      cause: error,
    })
  }
}

/**
 * The fields of an admin create or update; absent or `null` text fields are `''`, absent flags
 * and objects `undefined`.
 */
export interface AdminUserParams {
  readonly aud: string
  readonly role: string
  readonly email: string
  readonly phone: string
  /** `undefined` when the body has none (an update leaves the password alone). */
  readonly password: string | undefined
  /** A bcrypt hash to store as is (create only). */
  readonly passwordHash: string
  /** The new user's id (create only). */
  readonly id: string
  /** A Go duration or `none`. */
  readonly banDuration: string
  readonly userMetadata: JsonObject | undefined
  readonly appMetadata: JsonObject | undefined
  readonly emailConfirm: boolean | undefined
  readonly phoneConfirm: boolean | undefined
}

async function assertPhoneFree(tx: Queryable, phone: string): Promise<void> {
  if (await findUserOwningPhone(tx, phone)) {
    throw new UnprocessableEntityError(
      'phone_exists',
      'Phone number already registered by another user',
    )
  }
}

/** A page of the users of an audience with their identities, and the total matching. */
export async function listUsersPage(
  ctx: AppContext,
  options: ListUsersOptions,
): Promise<{ users: UserWithIdentities[]; total: number }> {
  const { users, total } = await listUsers(ctx.db, options)
  const identities = await findIdentitiesByUsers(
    ctx.db,
    users.map((u) => u.id),
  )
  return {
    users: users.map((user) => ({ user, identities: identities.get(user.id) ?? [] })),
    total,
  }
}

/**
 * A user and its identities.
 *
 * @throws {@link UserNotFoundError} When there is none.
 */
export async function getUser(ctx: AppContext, id: string): Promise<UserWithIdentities> {
  return userWithIdentities(ctx.db, await getUserById(ctx.db, id))
}

/**
 * Creates a user (upstream `adminUserCreate`): email and/or phone, a password, a password hash or
 * neither (then a random one), metadata, confirmation flags, a ban. No strength check on the
 * password (upstream), but never one bcrypt would truncate.
 *
 * @param signal Aborts the queued password hash (the request's deadline).
 * @throws {@link BadRequestError} `validation_failed` in upstream's order;
 *   {@link UnprocessableEntityError} `email_exists`, `phone_exists`.
 */
export async function createUserAsAdmin(
  ctx: AdminContext,
  params: AdminUserParams,
  actor: AuditActor,
  client: RequestContext,
  signal: AbortSignal,
): Promise<UserWithIdentities> {
  const aud = params.aud || client.aud
  let { email, phone } = params
  if (email === '' && phone === '') {
    throw new BadRequestError(
      'validation_failed',
      'Cannot create a user without either an email or phone',
    )
  }
  if (email !== '') email = validateEmail(email)
  if (phone !== '') phone = validatePhone(phone)
  const password = params.password ?? ''
  const { passwordHash } = params
  if (password !== '' && passwordHash !== '') {
    throw new BadRequestError(
      'validation_failed',
      'Only a password or a password hash should be provided',
    )
  }
  enforcePasswordLength(password)
  if (passwordHash !== '' && !/^\$2[aby]\$\d\d\$.{53}$/.test(passwordHash)) {
    throw new BadRequestError('validation_failed', 'Invalid password hash format')
  }
  await refuseLeakedPassword(ctx, password)
  let id = params.id
  if (id !== '') {
    if (!isUuid(id)) {
      throw new BadRequestError('validation_failed', 'ID must conform to the uuid v4 format')
    }
    if (id === NIL_UUID) throw new BadRequestError('validation_failed', 'ID cannot be a nil uuid')
    id = id.toLowerCase()
  } else {
    id = ctx.random.uuid()
  }
  const ban = params.banDuration === '' ? undefined : parseBanDuration(params.banDuration)
  const encryptedPassword =
    passwordHash !== ''
      ? passwordHash
      : await ctx.passwords.hash(password === '' ? randomPassword(ctx) : password, signal)
  return ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    if (email !== '') await assertEmailFree(tx, email)
    if (phone !== '') await assertPhoneFree(tx, phone)
    const created = await createUser(
      ctx,
      tx,
      {
        id,
        aud,
        role: params.role || ctx.settings.jwt.defaultGroupName,
        email,
        phone,
        encryptedPassword,
        userMetadata: params.userMetadata ?? {},
        appMetadata: params.appMetadata ?? {},
        emailConfirmed: params.emailConfirm === true,
        phoneConfirmed: params.phoneConfirm === true,
        bannedUntil: ban === undefined || ban === null ? null : new Date(now + ban),
        skipHooks: true,
      },
      now,
    )
    await ctx.audit.record(
      tx,
      {
        id: ctx.random.uuid(),
        actor,
        action: 'user_signedup',
        traits: { user_id: id, user_email: email, user_phone: phone },
        ip: client.ip,
      },
      now,
    )
    return created
  })
}

/** Validated changes of an update, computed before its transaction (hashing included). */
interface AdminChanges {
  readonly fields: UserChanges
  readonly email: string | undefined
  readonly phone: string | undefined
  /** Milliseconds, `null` to unban, `undefined` to leave alone. */
  readonly ban: number | null | undefined
}

async function adminChanges(
  ctx: AdminContext,
  params: AdminUserParams,
  signal: AbortSignal,
): Promise<AdminChanges> {
  const fields: UserChanges = {}
  if (params.role !== '') fields.role = params.role
  if (params.aud !== '') fields.aud = params.aud
  const email = params.email === '' ? undefined : validateEmail(params.email)
  const phone = params.phone === '' ? undefined : validatePhone(params.phone)
  if (params.password !== undefined) {
    await enforceStrongPassword(ctx, params.password)
    fields.encryptedPassword = await ctx.passwords.hash(params.password, signal)
  }
  const ban = params.banDuration === '' ? undefined : parseBanDuration(params.banDuration)
  return { fields, email, phone, ban }
}

/** The audit entry of an admin action on `user`. */
function adminAudit(
  ctx: AdminContext,
  actor: AuditActor,
  action: 'user_modified' | 'user_deleted',
  user: User,
  ip: string,
) {
  return {
    id: ctx.random.uuid(),
    actor,
    action,
    traits: { user_id: user.id, user_email: user.email, user_phone: user.phone },
    ip,
  }
}

/**
 * Updates a user (upstream `adminUserUpdate`): role, audience, email, phone (their identities
 * follow), password (with the strength check; every session ends), metadata (merged),
 * confirmations, ban (`none` unbans).
 *
 * @param signal Aborts the queued password hash (the request's deadline).
 * @throws {@link UserNotFoundError}; {@link BadRequestError} `validation_failed`; the password
 *   policy's errors; {@link UnprocessableEntityError} `email_exists`, `phone_exists`.
 */
export async function updateUserAsAdmin(
  ctx: AdminContext,
  id: string,
  params: AdminUserParams,
  actor: AuditActor,
  ip: string,
  signal: AbortSignal,
): Promise<UserWithIdentities> {
  const changes = await adminChanges(ctx, params, signal)
  return ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const user = await getUserById(tx, id, true)
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
    if (params.userMetadata) {
      update.userMetadata = mergeMetadata(user.userMetadata, params.userMetadata)
    }
    if (params.appMetadata) {
      update.appMetadata = mergeMetadata(user.appMetadata, params.appMetadata)
    }
    if (params.emailConfirm === true && user.emailConfirmedAt === null) {
      update.emailConfirmedAt = new Date(now)
      await updateIdentityData(tx, id, 'email', { email_verified: true }, now)
    }
    if (params.phoneConfirm === true && user.phoneConfirmedAt === null) {
      update.phoneConfirmedAt = new Date(now)
      await updateIdentityData(tx, id, 'phone', { phone_verified: true }, now)
    }
    if (changes.ban !== undefined) {
      update.bannedUntil = changes.ban === null ? null : new Date(now + changes.ban)
    }
    const updated = await updateUser(tx, id, update, now)
    if (update.encryptedPassword !== undefined) await deleteSessions(tx, id, 'all')
    await ctx.audit.record(tx, adminAudit(ctx, actor, 'user_modified', user, ip), now)
    return userWithIdentities(tx, updated)
  })
}

/**
 * Deletes a user (upstream `adminUserDelete`): for good (identities and sessions go with it), or
 * softly (see `softDeleteUser`: the row stays, its sessions and identities do not).
 *
 * @throws {@link UserNotFoundError}
 */
export async function deleteUserAsAdmin(
  ctx: AdminContext,
  id: string,
  soft: boolean,
  actor: AuditActor,
  ip: string,
): Promise<void> {
  await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const user = await getUserById(tx, id, true)
    await ctx.audit.record(tx, adminAudit(ctx, actor, 'user_deleted', user, ip), now)
    if (soft) {
      await deleteSessions(tx, id, 'all')
      await deleteFactorsOfUser(tx, id)
      await softDeleteUser(tx, id, now)
      await deleteIdentitiesOfUser(tx, id)
    } else {
      await deleteUser(tx, id)
    }
  })
}
