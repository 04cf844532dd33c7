/**
 * `gatehouse-auth admin …`: upstream's admin commands (`cmd/admin_cmd.go`), run through the admin
 * API's own services (`services/admin-users.ts`): `createuser <email> <password> [<role>]`
 * (`--confirm`, `--admin`, `--aud`), `deleteuser <email-or-id>`, and `editrole <email-or-id>
 * [<role>]` (`--admin`; netlify/gotrue's command, which supabase/auth dropped). They open the
 * database, refuse a schema that is not current, and write an audit entry as the admin API does.
 *
 * @see https://github.com/supabase/auth/blob/master/cmd/admin_cmd.go
 * @module
 */
import type { CliIo } from './cli.js'
import { systemClock, type Clock } from './clock.js'
import type { Settings } from './conf/settings.js'
import { UserNotFoundError } from './errors.js'
import type { AuditActor } from './models/audit-log.js'
import { findUserByEmail, findUserById, type User } from './models/user.js'
import { cryptoRandom, type Random } from './random.js'
import { censor, maskDatabaseUrl, urlPasswords } from './redact.js'
import { passwordHasherFor } from './server.js'
import {
  createUserAsAdmin,
  deleteUserAsAdmin,
  updateUserAsAdmin,
  type AdminContext,
  type AdminUserParams,
} from './services/admin-users.js'
import { RangeApiPwnedPasswords } from './security/pwned-passwords.js'
import { AuditTrail } from './services/shared/audit-trail.js'
import { isUuid } from './services/shared/validation.js'
import type { Queryable } from './storage/db.js'
import { pendingMigrations } from './storage/migrate.js'
import { openDb } from './storage/open.js'

/** What `gatehouse-auth admin` is asked to do; parsed by `parseArgs` in `cli.ts`. */
export type AdminAction =
  | {
      readonly action: 'createuser'
      readonly email: string
      readonly password: string
      /** The role given after the password; wins over `admin`. */
      readonly role: string | undefined
      /** `--admin`: the role is `JWT_ADMIN_GROUP_NAME`. */
      readonly admin: boolean
      /** `--confirm` (or `MAILER_AUTOCONFIRM`): the email is confirmed, nothing is sent. */
      readonly confirm: boolean
      /** `--aud`, else `JWT_AUD`. */
      readonly aud: string | undefined
    }
  | {
      readonly action: 'deleteuser'
      /** The user's email (in the audience), or id. */
      readonly user: string
      readonly aud: string | undefined
    }
  | {
      readonly action: 'editrole'
      readonly user: string
      readonly role: string | undefined
      readonly admin: boolean
      readonly aud: string | undefined
    }

/** The exit status of an admin command that failed (unreachable, no such user, refused). */
export const ADMIN_FAILED_EXIT_STATUS = 1

/** The actor of the audit entries of `gatehouse-auth admin`. */
const CLI_ACTOR: AuditActor = { id: '', username: 'gatehouse-auth admin' }

/** No request, no client: the audit entries have no IP address. */
const NO_CLIENT = { ip: '', userAgent: '' }

/** The fields of an admin create or update that say nothing (`AdminUserParams`). */
const NOTHING: AdminUserParams = {
  aud: '',
  role: '',
  email: '',
  phone: '',
  password: undefined,
  passwordHash: '',
  id: '',
  banDuration: '',
  userMetadata: undefined,
  appMetadata: undefined,
  emailConfirm: undefined,
  phoneConfirm: undefined,
}

/** Replacements for the command's clock and randomness (tests). */
export interface AdminDeps {
  readonly clock?: Clock
  readonly random?: Random
}

/**
 * The user an argument names, as upstream looks it up: by email in the audience, else by id.
 *
 * @throws {@link UserNotFoundError}
 */
async function findTarget(db: Queryable, user: string, aud: string): Promise<User> {
  const byEmail = await findUserByEmail(db, user, aud)
  if (byEmail !== undefined) return byEmail
  const byId = isUuid(user) ? await findUserById(db, user.toLowerCase()) : undefined
  if (byId === undefined) throw new UserNotFoundError()
  return byId
}

/** `alice@example.com (id …)`, or the id alone for a user without an email. */
function describe(user: User): string {
  return user.email === '' ? user.id : `${user.email} (id ${user.id})`
}

/** Runs one action; its line of output, or throws the service's error. */
async function run(ctx: AdminContext, action: AdminAction): Promise<string> {
  const { settings } = ctx
  const aud = action.aud ?? settings.jwt.aud
  const signal = new AbortController().signal
  switch (action.action) {
    case 'createuser': {
      const confirm = action.confirm || settings.mailer.autoconfirm
      const { user } = await createUserAsAdmin(
        ctx,
        {
          ...NOTHING,
          aud,
          role: action.role ?? (action.admin ? settings.jwt.adminGroupName : ''),
          email: action.email,
          password: action.password,
          emailConfirm: confirm,
        },
        CLI_ACTOR,
        { ...NO_CLIENT, aud },
        signal,
      )
      return `created user ${describe(user)}, role ${user.role}, ${user.emailConfirmedAt === null ? 'not confirmed' : 'confirmed'}`
    }
    case 'deleteuser': {
      const user = await findTarget(ctx.db, action.user, aud)
      await deleteUserAsAdmin(ctx, user.id, false, CLI_ACTOR, '')
      return `deleted user ${describe(user)}`
    }
    case 'editrole': {
      const target = await findTarget(ctx.db, action.user, aud)
      const role = action.role ?? settings.jwt.adminGroupName
      const { user } = await updateUserAsAdmin(
        ctx,
        target.id,
        { ...NOTHING, role },
        CLI_ACTOR,
        '',
        signal,
      )
      return `user ${describe(user)} now has role ${user.role}`
    }
  }
}

/**
 * Runs `gatehouse-auth admin <action>` against the settings' database: one line on success,
 * `gatehouse-auth: <action>: <the service's message>` on standard error otherwise.
 *
 * @returns The exit status: 0, or {@link ADMIN_FAILED_EXIT_STATUS}.
 */
export async function adminCommand(
  settings: Settings,
  action: AdminAction,
  io: CliIo,
  deps: AdminDeps = {},
): Promise<number> {
  const { url, namespace } = settings.db
  const fail = (message: string): number => {
    io.err(`gatehouse-auth: admin ${action.action}: ${censor(message, urlPasswords(url))}`)
    return ADMIN_FAILED_EXIT_STATUS
  }
  const unreachable = (error: unknown): number =>
    fail(`cannot use the database (${maskDatabaseUrl(url)}): ${(error as Error).message}`)
  let db
  try {
    db = await openDb(url, namespace, 1)
  } catch (error) {
    return unreachable(error)
  }
  try {
    let pending: string[]
    try {
      pending = await pendingMigrations(db)
    } catch (error) {
      return unreachable(error)
    }
    if (pending.length > 0) {
      return fail(
        `the database schema is not current (${String(pending.length)} migration(s) pending); run gatehouse-auth migrate first`,
      )
    }
    const ctx: AdminContext = {
      settings,
      db,
      clock: deps.clock ?? systemClock,
      random: deps.random ?? cryptoRandom,
      passwords: passwordHasherFor(settings),
      // A password set here is checked as the admin API checks it.
      pwnedPasswords: settings.password.hibp.enabled
        ? new RangeApiPwnedPasswords(settings.password.hibp)
        : undefined,
      // The command has no log: its audit events go to the database (none with
      // AUDIT_LOG_DISABLE_POSTGRES).
      audit: new AuditTrail({ postgres: !settings.log.auditDisablePostgres }),
    }
    io.out(await run(ctx, action))
    return 0
  } catch (error) {
    // The service's refusal (an AuthError's public text), or the database's error.
    return fail(error instanceof Error ? error.message : String(error))
  } finally {
    await db.close()
  }
}
