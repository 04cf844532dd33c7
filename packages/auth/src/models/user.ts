import type { Queryable } from '../storage/db.js'
import { UserNotFoundError } from '../errors.js'
import { asObject, rowFromJson, type JsonObject } from './json.js'

/** A row of `users`, in camelCase. */
export interface User {
  id: string
  aud: string
  role: string
  /** Lower-cased; `''` when none (NULL in the table). */
  email: string
  encryptedPassword: string
  emailConfirmedAt: Date | null
  invitedAt: Date | null
  confirmationToken: string
  confirmationSentAt: Date | null
  /** Token hash of a pending recovery or magic link; `''` when none. */
  recoveryToken: string
  recoverySentAt: Date | null
  /** The requested new email of a pending change; `''` when none. */
  emailChange: string
  /** Token hash sent to the new address of a pending email change; `''` when none. */
  emailChangeTokenNew: string
  /** Token hash sent to the current address (secure email change); `''` when none. */
  emailChangeTokenCurrent: string
  /** Secure email change: 0 nothing confirmed yet, 1 one of the two links followed. */
  emailChangeConfirmStatus: number
  emailChangeSentAt: Date | null
  lastSignInAt: Date | null
  appMetadata: JsonObject
  userMetadata: JsonObject
  createdAt: Date
  updatedAt: Date
  /** E.164 digits without `+`; `''` when none. */
  phone: string
  phoneConfirmedAt: Date | null
  /** The requested new phone of a pending change (digits, no `+`); `''` when none. */
  phoneChange: string
  /** Token hash of the code sent to the new phone of a pending change; `''` when none. */
  phoneChangeToken: string
  phoneChangeSentAt: Date | null
  confirmedAt: Date | null
  bannedUntil: Date | null
  /** Token hash of a pending reauthentication nonce; `''` when none. */
  reauthenticationToken: string
  reauthenticationSentAt: Date | null
  isSsoUser: boolean
  deletedAt: Date | null
  isAnonymous: boolean
}

const COLUMNS = `id, aud, role, email, encrypted_password, email_confirmed_at, invited_at,
  confirmation_token, confirmation_sent_at, recovery_token, recovery_sent_at, email_change,
  email_change_token_new, email_change_token_current, email_change_confirm_status,
  email_change_sent_at, last_sign_in_at, raw_app_meta_data, raw_user_meta_data, created_at,
  updated_at, phone, phone_confirmed_at, phone_change, phone_change_token, phone_change_sent_at,
  confirmed_at,
  banned_until, reauthentication_token, reauthentication_sent_at, is_sso_user, deleted_at,
  is_anonymous`

/** @internal A `users` row as the driver returns it. */
export interface UserRow {
  id: string
  aud: string | null
  role: string | null
  email: string | null
  encrypted_password: string | null
  email_confirmed_at: Date | null
  invited_at: Date | null
  confirmation_token: string | null
  confirmation_sent_at: Date | null
  recovery_token: string | null
  recovery_sent_at: Date | null
  email_change: string | null
  email_change_token_new: string | null
  email_change_token_current: string | null
  email_change_confirm_status: number | null
  email_change_sent_at: Date | null
  last_sign_in_at: Date | null
  raw_app_meta_data: unknown
  raw_user_meta_data: unknown
  created_at: Date | null
  updated_at: Date | null
  phone: string | null
  phone_confirmed_at: Date | null
  phone_change: string | null
  phone_change_token: string | null
  phone_change_sent_at: Date | null
  confirmed_at: Date | null
  banned_until: Date | null
  reauthentication_token: string | null
  reauthentication_sent_at: Date | null
  is_sso_user: boolean
  deleted_at: Date | null
  is_anonymous: boolean
}

/**
 * The whole `users` row of `alias` as one `json` value, for the hot queries that join the user to
 * other tables (an authenticated request's context, a refresh rotation): the driver then reads one
 * column instead of one per field, which cuts most of its work on those rows (bench/RESULTS.md, issue
 * 34). Read with {@link userFromJson}; `NULL` when an outer join found no user.
 *
 * @internal
 */
export function userJsonSql(alias: string): string {
  return `to_json(${alias})`
}

/** The `timestamptz` columns of {@link UserRow}, which {@link userJsonSql} gives as text. */
const TIMESTAMP_COLUMNS = [
  'email_confirmed_at',
  'invited_at',
  'confirmation_sent_at',
  'recovery_sent_at',
  'email_change_sent_at',
  'last_sign_in_at',
  'created_at',
  'updated_at',
  'phone_confirmed_at',
  'phone_change_sent_at',
  'confirmed_at',
  'banned_until',
  'reauthentication_sent_at',
  'deleted_at',
] as const satisfies readonly (keyof UserRow)[]

/**
 * Reads the value of {@link userJsonSql} (the driver parses `json`; text is parsed here).
 *
 * @returns The user, or `undefined` when the value is null (no user).
 * @internal
 */
export function userFromJson(value: unknown): User | undefined {
  const row = rowFromJson(value, TIMESTAMP_COLUMNS)
  return row && fromRow(row as unknown as UserRow)
}

/** @internal Maps a `users` row. */
export function userFromRow(r: UserRow): User {
  return fromRow(r)
}

function fromRow(r: UserRow): User {
  return {
    id: r.id,
    aud: r.aud ?? '',
    role: r.role ?? '',
    email: r.email ?? '',
    encryptedPassword: r.encrypted_password ?? '',
    emailConfirmedAt: r.email_confirmed_at,
    invitedAt: r.invited_at,
    confirmationToken: r.confirmation_token ?? '',
    confirmationSentAt: r.confirmation_sent_at,
    recoveryToken: r.recovery_token ?? '',
    recoverySentAt: r.recovery_sent_at,
    emailChange: r.email_change ?? '',
    emailChangeTokenNew: r.email_change_token_new ?? '',
    emailChangeTokenCurrent: r.email_change_token_current ?? '',
    emailChangeConfirmStatus: r.email_change_confirm_status ?? 0,
    emailChangeSentAt: r.email_change_sent_at,
    lastSignInAt: r.last_sign_in_at,
    appMetadata: asObject(r.raw_app_meta_data),
    userMetadata: asObject(r.raw_user_meta_data),
    createdAt: r.created_at ?? new Date(0),
    updatedAt: r.updated_at ?? new Date(0),
    phone: r.phone ?? '',
    phoneConfirmedAt: r.phone_confirmed_at,
    phoneChange: r.phone_change ?? '',
    phoneChangeToken: r.phone_change_token ?? '',
    phoneChangeSentAt: r.phone_change_sent_at,
    confirmedAt: r.confirmed_at,
    bannedUntil: r.banned_until,
    reauthenticationToken: r.reauthentication_token ?? '',
    reauthenticationSentAt: r.reauthentication_sent_at,
    isSsoUser: r.is_sso_user,
    deletedAt: r.deleted_at,
    isAnonymous: r.is_anonymous,
  }
}

/** Whether the user is banned at `now` (epoch ms). */
export function isBanned(user: User, now: number): boolean {
  return user.bannedUntil !== null && user.bannedUntil.getTime() > now
}

/** Columns both {@link insertUser} and {@link updateUser} write. */
type WritableField =
  | 'email'
  | 'phone'
  | 'encryptedPassword'
  | 'appMetadata'
  | 'userMetadata'
  | 'emailConfirmedAt'
  | 'phoneConfirmedAt'
  | 'bannedUntil'
  | 'isAnonymous'

/**
 * Fields of a new user; see {@link insertUser}. Only `id`, `aud`, `role` and `createdAt` are
 * required: text fields default to `''`, metadata to `{}`, timestamps to `null`, `isAnonymous` to
 * false.
 */
export type NewUser = Pick<User, 'id' | 'aud' | 'role' | 'createdAt'> &
  Partial<Pick<User, WritableField | 'invitedAt' | 'isSsoUser'>>

/**
 * Inserts a user (`instance_id` is the nil UUID, as upstream).
 *
 * @returns The stored user.
 */
export async function insertUser(tx: Queryable, u: NewUser): Promise<User> {
  const { rows } = await tx.query<UserRow>(
    `INSERT INTO ${tx.t.users} (instance_id, id, aud, role, email, phone, encrypted_password,
       raw_app_meta_data, raw_user_meta_data, email_confirmed_at, phone_confirmed_at, invited_at,
       confirmation_token, confirmation_sent_at, banned_until, is_anonymous, is_super_admin,
       created_at, updated_at, is_sso_user)
     VALUES ('00000000-0000-0000-0000-000000000000', $1, $2, $3, NULLIF($4, ''), NULLIF($5, ''), $6,
       $7::jsonb, $8::jsonb, $9, $10, $11, $12, $13, $14, $15, false, $16, $16, $17)
     RETURNING ${COLUMNS}`,
    [
      u.id,
      u.aud,
      u.role,
      u.email ?? '',
      u.phone ?? '',
      u.encryptedPassword ?? '',
      JSON.stringify(u.appMetadata ?? {}),
      JSON.stringify(u.userMetadata ?? {}),
      u.emailConfirmedAt ?? null,
      u.phoneConfirmedAt ?? null,
      u.invitedAt ?? null,
      '',
      null,
      u.bannedUntil ?? null,
      u.isAnonymous ?? false,
      u.createdAt,
      u.isSsoUser ?? false,
    ],
  )
  return fromRow(rows[0] as UserRow)
}

/** The first user of a `SELECT … WHERE <condition>` on `users`, or `undefined`. */
async function findUserWhere(
  tx: Queryable,
  condition: string,
  params: readonly unknown[],
): Promise<User | undefined> {
  const { rows } = await tx.query<UserRow>(
    `SELECT ${COLUMNS} FROM ${tx.t.users} WHERE ${condition}`,
    params,
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/**
 * The user with this id, or `undefined`.
 *
 * @param forUpdate Lock the row until the transaction ends.
 */
export function findUserById(
  tx: Queryable,
  id: string,
  forUpdate = false,
): Promise<User | undefined> {
  return findUserWhere(tx, `id = $1${forUpdate ? ' FOR UPDATE' : ''}`, [id])
}

/**
 * The user with this id.
 *
 * @param forUpdate Lock the row until the transaction ends.
 * @throws {@link UserNotFoundError} When there is none.
 */
export async function getUserById(tx: Queryable, id: string, forUpdate = false): Promise<User> {
  const user = await findUserById(tx, id, forUpdate)
  if (!user) throw new UserNotFoundError()
  return user
}

/** The non-SSO user with this (lower-cased) email in `aud`, or `undefined`. */
export function findUserByEmail(
  tx: Queryable,
  email: string,
  aud: string,
): Promise<User | undefined> {
  return findUserWhere(tx, 'email = $1 AND aud = $2 AND is_sso_user = false LIMIT 1', [
    email.toLowerCase(),
    aud,
  ])
}

/**
 * The non-SSO user holding this (lower-cased) email in any audience: the one a new user with
 * this email would collide with (the unique index spans audiences), or `undefined`.
 */
export function findUserOwningEmail(tx: Queryable, email: string): Promise<User | undefined> {
  return findUserWhere(tx, 'email = $1 AND is_sso_user = false LIMIT 1', [email.toLowerCase()])
}

/** The user of `aud` with a pending change to this (lower-cased) email, or `undefined`. */
export function findUserByEmailChange(
  tx: Queryable,
  email: string,
  aud: string,
): Promise<User | undefined> {
  return findUserWhere(tx, 'email_change = $1 AND aud = $2 LIMIT 1', [email.toLowerCase(), aud])
}

/** The user with this phone (digits, no `+`) in `aud`, or `undefined`. */
export function findUserByPhone(
  tx: Queryable,
  phone: string,
  aud: string,
): Promise<User | undefined> {
  return findUserWhere(tx, 'phone = $1 AND aud = $2 LIMIT 1', [phone, aud])
}

/** The user of `aud` with a pending change to this phone (digits, no `+`), or `undefined`. */
export function findUserByPhoneChange(
  tx: Queryable,
  phone: string,
  aud: string,
): Promise<User | undefined> {
  return findUserWhere(tx, 'phone_change = $1 AND aud = $2 LIMIT 1', [phone, aud])
}

/** The user holding this phone (digits, no `+`) in any audience (it is unique), or `undefined`. */
export function findUserOwningPhone(tx: Queryable, phone: string): Promise<User | undefined> {
  return findUserWhere(tx, 'phone = $1 LIMIT 1', [phone])
}

/** Columns {@link updateUser} can set, in camelCase. */
export type UserChanges = Partial<
  Pick<
    User,
    | WritableField
    | 'aud'
    | 'role'
    | 'lastSignInAt'
    | 'confirmationToken'
    | 'confirmationSentAt'
    | 'recoveryToken'
    | 'recoverySentAt'
    | 'emailChange'
    | 'emailChangeTokenNew'
    | 'emailChangeTokenCurrent'
    | 'emailChangeConfirmStatus'
    | 'emailChangeSentAt'
    | 'reauthenticationToken'
    | 'reauthenticationSentAt'
    | 'phoneChange'
    | 'phoneChangeToken'
    | 'phoneChangeSentAt'
  >
>

const CHANGE_COLUMNS: Readonly<Record<keyof UserChanges, [string, string]>> = {
  aud: ['aud', ''],
  role: ['role', ''],
  email: ['email', 'nullif'],
  phone: ['phone', 'nullif'],
  encryptedPassword: ['encrypted_password', ''],
  appMetadata: ['raw_app_meta_data', 'jsonb'],
  userMetadata: ['raw_user_meta_data', 'jsonb'],
  emailConfirmedAt: ['email_confirmed_at', ''],
  phoneConfirmedAt: ['phone_confirmed_at', ''],
  bannedUntil: ['banned_until', ''],
  lastSignInAt: ['last_sign_in_at', ''],
  confirmationToken: ['confirmation_token', ''],
  confirmationSentAt: ['confirmation_sent_at', ''],
  recoveryToken: ['recovery_token', ''],
  recoverySentAt: ['recovery_sent_at', ''],
  emailChange: ['email_change', ''],
  emailChangeTokenNew: ['email_change_token_new', ''],
  emailChangeTokenCurrent: ['email_change_token_current', ''],
  emailChangeConfirmStatus: ['email_change_confirm_status', ''],
  emailChangeSentAt: ['email_change_sent_at', ''],
  reauthenticationToken: ['reauthentication_token', ''],
  reauthenticationSentAt: ['reauthentication_sent_at', ''],
  isAnonymous: ['is_anonymous', ''],
  phoneChange: ['phone_change', ''],
  phoneChangeToken: ['phone_change_token', ''],
  phoneChangeSentAt: ['phone_change_sent_at', ''],
}

/**
 * Updates some columns of a user and sets `updated_at`.
 *
 * @param now Epoch milliseconds for `updated_at`.
 * @returns The updated user.
 * @throws {@link UserNotFoundError} When the user does not exist.
 */
export async function updateUser(
  tx: Queryable,
  id: string,
  changes: UserChanges,
  now: number,
): Promise<User> {
  const sets: string[] = []
  const params: unknown[] = [id, new Date(now)]
  for (const [key, value] of Object.entries(changes) as [string, unknown][]) {
    if (value === undefined) continue
    const [column, kind] = CHANGE_COLUMNS[key as keyof UserChanges]
    params.push(kind === 'jsonb' ? JSON.stringify(value) : value)
    const ref = `$${String(params.length)}`
    sets.push(
      `${column} = ${kind === 'jsonb' ? `${ref}::jsonb` : kind === 'nullif' ? `NULLIF(${ref}, '')` : ref}`,
    )
  }
  const { rows } = await tx.query<UserRow>(
    `UPDATE ${tx.t.users} SET ${[...sets, 'updated_at = $2'].join(', ')} WHERE id = $1
     RETURNING ${COLUMNS}`,
    params,
  )
  if (!rows[0]) throw new UserNotFoundError()
  return fromRow(rows[0])
}

/**
 * Soft-deletes a user (upstream `SoftDeleteUser`): email, phone, password and metadata are
 * cleared and `deleted_at` set; the row stays, so its id is never reused. Sessions and identities
 * are the caller's to delete.
 *
 * @param now Epoch milliseconds for `deleted_at` and `updated_at`.
 */
export async function softDeleteUser(tx: Queryable, id: string, now: number): Promise<void> {
  await tx.query(
    `UPDATE ${tx.t.users} SET email = NULL, phone = NULL, encrypted_password = '',
       raw_user_meta_data = '{}'::jsonb, raw_app_meta_data = '{}'::jsonb, deleted_at = $2,
       updated_at = $2 WHERE id = $1`,
    [id, new Date(now)],
  )
}

/**
 * Merges `data` into metadata (upstream `UpdateUserMetaData`): keys whose value is `null` are
 * removed, the others set. The input objects are left alone.
 */
export function mergeMetadata(
  current: Readonly<JsonObject>,
  data: Readonly<JsonObject>,
): JsonObject {
  const merged: JsonObject = { ...current }
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

/** Deletes a user; identities, sessions and refresh tokens go with it (cascade). */
export async function deleteUser(tx: Queryable, id: string): Promise<void> {
  await tx.query(`DELETE FROM ${tx.t.users} WHERE id = $1`, [id])
}

/** Options of {@link listUsers}. */
export interface ListUsersOptions {
  aud: string
  /** 1-based page. */
  page: number
  perPage: number
  /** Case-insensitive substring of email, phone or `full_name`; empty for all. */
  filter: string
  /** Sort column and direction. */
  sort: {
    column: 'created_at' | 'email' | 'phone' | 'updated_at' | 'last_sign_in_at'
    desc: boolean
  }
}

/**
 * A page of users of an audience, and the total count matching the filter.
 */
export async function listUsers(
  tx: Queryable,
  o: ListUsersOptions,
): Promise<{ users: User[]; total: number }> {
  const where = `aud = $1 AND ($2 = '' OR email ILIKE $3 OR phone ILIKE $3
    OR raw_user_meta_data ->> 'full_name' ILIKE $3)`
  const like = `%${o.filter.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
  const count = await tx.query<{ n: string | number }>(
    `SELECT count(*)::int AS n FROM ${tx.t.users} WHERE ${where}`,
    [o.aud, o.filter, like],
  )
  const { rows } = await tx.query<UserRow>(
    `SELECT ${COLUMNS} FROM ${tx.t.users} WHERE ${where}
     ORDER BY ${o.sort.column} ${o.sort.desc ? 'DESC' : 'ASC'} NULLS LAST, id
     LIMIT $4 OFFSET $5`,
    [o.aud, o.filter, like, o.perPage, (o.page - 1) * o.perPage],
  )
  return { users: rows.map(fromRow), total: Number(count.rows[0]?.n ?? 0) }
}
