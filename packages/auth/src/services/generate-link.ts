/**
 * `POST /admin/generate_link`: the link and code a flow mail would carry, recorded as the flow
 * records them, and returned instead of sent.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/mail.go
 * @module
 */
import type { AppContext, RequestContext } from '../context.js'
import { BadRequestError, NotFoundError, UnprocessableEntityError } from '../errors.js'
import type { JsonObject } from '../models/json.js'
import { findUserOwningEmail, getUserById, type User } from '../models/user.js'
import { prepareConfirmation } from './shared/confirmation.js'
import { prepareEmailChange } from './email-change.js'
import type { PreparedMail } from './shared/mail.js'
import { enforcePasswordPolicy } from './shared/passwords.js'
import { prepareRecovery } from './recovery.js'
import {
  afterUserCreated,
  assertEmailFree,
  createUser,
  userWithIdentities,
  type UserWithIdentities,
} from './users.js'
import { validateEmail } from './shared/validation.js'

/** The link types of `/admin/generate_link`. */
export const GENERATE_LINK_TYPES = [
  'signup',
  'invite',
  'magiclink',
  'recovery',
  'email_change_current',
  'email_change_new',
] as const

/** A `/admin/generate_link` request; absent text fields are `''`. */
export interface GenerateLinkParams {
  readonly type: string
  readonly email: string
  readonly newEmail: string
  /** A password for a `signup` link's new user (`''`: none). */
  readonly password: string
  /** `user_metadata` of a user created on the way. */
  readonly data: JsonObject
  /** Where the user lands: the request's validated `redirect_to`, else `SITE_URL`. */
  readonly redirectTo: string
}

/** The answer: the user and its identities, and the mail's link, code and hash. */
export interface GeneratedLink extends UserWithIdentities {
  readonly mail: PreparedMail
}

/**
 * Generates the link of a flow without sending it: `action_link`
 * (`<API_EXTERNAL_URL>/verify?token=…&type=…&redirect_to=…`), `email_otp`, `hashed_token`
 * (`hex(sha224(email + otp))`), `verification_type` and `redirect_to`. A `signup` or `invite`
 * creates the user when unknown; a `magiclink` for an unknown address becomes a `signup`. A user
 * created here goes through `HOOK_BEFORE_USER_CREATED` (in the transaction; its refusal is the
 * answer) and, once committed, `HOOK_AFTER_USER_CREATED`, as upstream.
 *
 * @param signal Aborts the queued password hash (the request's deadline).
 * @throws {@link BadRequestError} 400 `validation_failed` "Invalid email action link type
 *   requested: x" and the email texts; {@link NotFoundError} 404 `user_not_found` "User with this
 *   email not found"; {@link UnprocessableEntityError} 422 `email_exists`; the password policy's
 *   errors.
 */
export async function generateLink(
  ctx: AppContext,
  params: GenerateLinkParams,
  client: RequestContext,
  signal: AbortSignal,
): Promise<GeneratedLink> {
  const type = (GENERATE_LINK_TYPES as readonly string[]).includes(params.type)
    ? (params.type as (typeof GENERATE_LINK_TYPES)[number])
    : undefined
  if (!type) {
    throw new BadRequestError(
      'validation_failed',
      `Invalid email action link type requested: ${params.type}`,
    )
  }
  const email = validateEmail(params.email)
  const changing = type === 'email_change_current' || type === 'email_change_new'
  const newEmail = changing ? validateEmail(params.newEmail) : ''
  let encryptedPassword: string | undefined
  if (type === 'signup' && params.password !== '') {
    enforcePasswordPolicy(ctx.settings, params.password)
    encryptedPassword = await ctx.passwords.hash(params.password, signal)
  }
  const { redirectTo } = params
  // Set inside the transaction: the user it created, for the after-created hook.
  let created: User | undefined
  const generated = await ctx.db.transaction(async (tx) => {
    created = undefined
    const now = ctx.clock.now()
    const owner = await findUserOwningEmail(tx, email)
    const user = owner ? await getUserById(tx, owner.id, true) : undefined
    const create = async (invited: boolean): Promise<User> => {
      created = (
        await createUser(
          ctx,
          tx,
          {
            aud: client.aud,
            email,
            data: params.data,
            invited,
            ...(encryptedPassword === undefined ? {} : { encryptedPassword }),
          },
          now,
        )
      ).user
      return created
    }
    const unconfirmed = async (invited: boolean): Promise<User> => {
      if (!user) return create(invited)
      if (user.emailConfirmedAt !== null) {
        throw new UnprocessableEntityError(
          'email_exists',
          'A user with this email address has already been registered',
        )
      }
      return user
    }
    let mail: PreparedMail
    switch (type) {
      case 'signup':
      case 'invite': {
        const target = await unconfirmed(type === 'invite')
        const kind = type === 'invite' ? 'invite' : 'confirmation'
        mail = await prepareConfirmation(ctx, tx, target, kind, redirectTo, now)
        break
      }
      case 'magiclink':
        mail = user
          ? await prepareRecovery(ctx, tx, user, 'magic_link', redirectTo, now)
          : await prepareConfirmation(ctx, tx, await create(false), 'confirmation', redirectTo, now)
        break
      case 'recovery':
        mail = await prepareRecovery(ctx, tx, requireUser(user), 'recovery', redirectTo, now)
        break
      case 'email_change_current':
      case 'email_change_new': {
        const known = requireUser(user)
        await assertEmailFree(tx, newEmail)
        const recipients = type === 'email_change_new' ? 'new' : 'current'
        const [only] = await prepareEmailChange(
          ctx,
          tx,
          known,
          newEmail,
          recipients,
          redirectTo,
          now,
        )
        mail = only as PreparedMail
      }
    }
    return { ...(await userWithIdentities(tx, mail.user)), mail }
  })
  if (created) await afterUserCreated(ctx, created, client)
  return generated
}

function requireUser(user: User | undefined): User {
  if (!user) throw new NotFoundError('user_not_found', 'User with this email not found')
  return user
}
