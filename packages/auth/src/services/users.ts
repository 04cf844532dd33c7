/**
 * Users: the one way a user is created (sign-up, invite and the admin API all go through
 * {@link createUser}), and a user's changes to itself (`PUT /user`).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/signup.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/user.go
 * @module
 */
import type { AppContext, RequestContext } from '../context.js'
import { BadRequestError, ForbiddenError, UnprocessableEntityError } from '../errors.js'
import { auditActor } from '../models/audit-log.js'
import {
  findIdentitiesByUser,
  insertIdentity,
  ownIdentityData,
  type Identity,
} from '../models/identity.js'
import type { JsonObject } from '../models/json.js'
import { deleteSessions, type Session } from '../models/session.js'
import {
  findUserOwningEmail,
  getUserById,
  insertUser,
  mergeMetadata,
  updateUser,
  type User,
  type UserChanges,
} from '../models/user.js'
import { UNKNOWN_CALLER, type HookCaller } from '../hooks/hooks.js'
import type { Queryable } from '../storage/db.js'
import { applyEmailChange, sendEmailChange } from './email-change.js'
import {
  notifyPasswordChanged,
  notifyPhoneChanged,
  type NotificationLog,
} from './shared/notifications.js'
import { enforceStrongPassword } from './shared/passwords.js'
import { requireAal2IfVerifiedFactors } from './mfa.js'
import { applyPhoneChange, assertPhoneFree, sendPhoneOtp, validateChannel } from './shared/phone.js'
import { parsePkceChallenge } from './shared/pkce.js'
import { consumeReauthenticationNonce } from './reauthentication.js'
import { validateEmail, validatePhone } from './shared/validation.js'

/**
 * Refuses an email that a user (of any audience) already holds.
 *
 * @throws {@link UnprocessableEntityError} 422 `email_exists` "A user with this email address has
 *   already been registered".
 */
export async function assertEmailFree(tx: Queryable, email: string): Promise<void> {
  if (await findUserOwningEmail(tx, email)) {
    throw new UnprocessableEntityError(
      'email_exists',
      'A user with this email address has already been registered',
    )
  }
}

/** A user with its identities, as the API returns it. */
export interface UserWithIdentities {
  readonly user: User
  readonly identities: readonly Identity[]
}

/** What {@link createUser} creates. Email and phone must already be validated. */
export interface NewUserSpec {
  /** @default a random UUID */
  readonly id?: string
  readonly aud: string
  /** @default `JWT_DEFAULT_GROUP_NAME` */
  readonly role?: string
  /** Lower-cased email; absent or `''` for none. Gets an `email` identity. */
  readonly email?: string
  /** Phone digits without `+`; absent or `''` for none. Gets a `phone` identity. */
  readonly phone?: string
  /** bcrypt hash; absent for a user without a password. */
  readonly encryptedPassword?: string
  /**
   * Sign-up `data` (sign-up, invite): it goes into every identity's `identity_data` next to the
   * identity's claims (`sub`, `email`/`phone`, `email_verified`, `phone_verified`), and the first
   * identity's data becomes `user_metadata` (upstream's sign-up); without identities (anonymous
   * users) `user_metadata` is `data` itself.
   */
  readonly data?: JsonObject
  /**
   * An external provider's identity (OAuth sign-up): its claims become the identity's
   * `identity_data` and the user's `user_metadata`; it is the first of `app_metadata.providers`.
   */
  readonly external?: {
    readonly provider: string
    /** The user's id at the provider. */
    readonly providerId: string
    readonly identityData: JsonObject
  }
  /** Admin `user_metadata`: stored as given; identities then hold only their claims. */
  readonly userMetadata?: JsonObject
  /** Admin `app_metadata`; `provider` and `providers` are set from the identities. */
  readonly appMetadata?: JsonObject
  /** Confirm the email now. */
  readonly emailConfirmed?: boolean
  /** Confirm the phone now. */
  readonly phoneConfirmed?: boolean
  /** Record `invited_at`. */
  readonly invited?: boolean
  readonly anonymous?: boolean
  readonly bannedUntil?: Date | null
  /** Skip `HOOK_BEFORE_USER_CREATED` (the admin API, which upstream does not hook). */
  readonly skipHooks?: boolean
  /** An SSO user (`is_sso_user`): its email may repeat another user's. */
  readonly ssoUser?: boolean
}

function byCreation(a: Identity, b: Identity): number {
  return a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
}

/**
 * Creates a user and its identities inside `tx` (no audit entry: the caller records what the
 * creation was, a sign-up or an invite). Uniqueness is the caller's to check (upstream answers a
 * taken email differently on each path).
 *
 * With `HOOK_BEFORE_USER_CREATED` on (and `skipHooks` off), the hook gets `{ metadata, user }`
 * once the rows are written, inside `tx`: its error object refuses the creation, which then
 * rolls back with `tx`.
 *
 * @param now Epoch milliseconds of the transaction.
 * @returns The user and its identities (oldest first, as {@link findIdentitiesByUser}).
 * @throws `AuthError` The before-user-created hook's refusal or failure.
 */
export async function createUser(
  ctx: Pick<AppContext, 'settings' | 'random'> & { readonly hooks?: AppContext['hooks'] },
  tx: Queryable,
  spec: NewUserSpec,
  now: number,
): Promise<UserWithIdentities> {
  const id = spec.id ?? ctx.random.uuid()
  const email = spec.email ?? ''
  const phone = spec.phone ?? ''
  const at = new Date(now)
  const claims: { provider: string; providerId: string; identityData: JsonObject }[] = []
  if (spec.external !== undefined) {
    claims.push({ ...spec.external })
  } else if (email !== '') {
    claims.push({
      provider: 'email',
      providerId: id,
      identityData: ownIdentityData(id, 'email', email, spec.emailConfirmed === true, spec.data),
    })
  }
  if (phone !== '' && spec.external === undefined) {
    claims.push({
      provider: 'phone',
      providerId: id,
      identityData: ownIdentityData(id, 'phone', phone, spec.phoneConfirmed === true, spec.data),
    })
  }
  const providers = claims.map((c) => c.provider)
  const user = await insertUser(tx, {
    id,
    aud: spec.aud,
    role: spec.role ?? ctx.settings.jwt.defaultGroupName,
    email,
    phone,
    encryptedPassword: spec.encryptedPassword ?? '',
    appMetadata:
      providers.length === 0
        ? { ...spec.appMetadata }
        : { ...spec.appMetadata, provider: providers[0], providers },
    userMetadata: spec.userMetadata ?? claims[0]?.identityData ?? spec.data ?? {},
    emailConfirmedAt: email !== '' && spec.emailConfirmed === true ? at : null,
    phoneConfirmedAt: phone !== '' && spec.phoneConfirmed === true ? at : null,
    invitedAt: spec.invited === true ? at : null,
    bannedUntil: spec.bannedUntil ?? null,
    isAnonymous: spec.anonymous === true,
    isSsoUser: spec.ssoUser === true,
    createdAt: at,
  })
  const identities: Identity[] = []
  for (const { provider, providerId, identityData } of claims) {
    identities.push(
      await insertIdentity(
        tx,
        { id: ctx.random.uuid(), providerId, userId: id, provider, identityData },
        now,
      ),
    )
  }
  const created = { user, identities: identities.sort(byCreation) }
  const hooks = spec.skipHooks === true ? undefined : ctx.hooks
  if (hooks?.enabled('beforeUserCreated')) {
    const payload = { user: await hooks.user(tx, user, created.identities) }
    await hooks.invoke('beforeUserCreated', payload, UNKNOWN_CALLER, tx)
  }
  return created
}

/**
 * `HOOK_AFTER_USER_CREATED`: tells the hook `{ metadata, user }` of a user whose creation is
 * committed (as upstream, outside any transaction).
 *
 * @throws `AuthError` The hook's failure (the user stays created, as upstream).
 */
export async function afterUserCreated(
  ctx: Pick<AppContext, 'hooks' | 'db'>,
  user: User,
  client: HookCaller,
): Promise<void> {
  if (!ctx.hooks.enabled('afterUserCreated')) return
  const payload = { user: await ctx.hooks.user(ctx.db, user) }
  await ctx.hooks.invoke('afterUserCreated', payload, client, ctx.db)
}

/** A user and its identities, read in `tx`. */
export async function userWithIdentities(tx: Queryable, user: User): Promise<UserWithIdentities> {
  return { user, identities: await findIdentitiesByUser(tx, user.id) }
}

/** What a user asks to change about itself (`PUT /user`); fields absent from the body are absent. */
export interface OwnChanges {
  /** Merged into `user_metadata` (`null` values remove keys). */
  readonly data?: JsonObject
  /** A new email (a change is confirmed by mail); `''` for none. */
  readonly email: string
  /** A new phone (a change is confirmed by a code sent to it); `''` for none. */
  readonly phone: string
  /** `sms` or `whatsapp`, for the code of a phone change; `''` for the default (`sms`). */
  readonly channel: string
  /** A new password. */
  readonly password?: string
  /** The reauthentication nonce (`GET /reauthenticate`), for a password change; `''` for none. */
  readonly nonce: string
  /** Whether the body had `app_metadata` (which only admins may change). */
  readonly appMetadata: boolean
  readonly codeChallenge: string
  readonly codeChallengeMethod: string
  /** Where the email-change links land: the request's validated `redirect_to`, else `SITE_URL`. */
  readonly redirectTo: string
}

/**
 * Applies a user's changes to itself: `data`, the password (a password change ends every other
 * session and, when enabled, sends `password_changed_notification`), the email (mails to the
 * new address, and with `MAILER_SECURE_EMAIL_CHANGE_ENABLED` to the current one; the change
 * happens at `/verify`; an anonymous user under `MAILER_AUTOCONFIRM` gets it at once) and the
 * phone (a code by SMS or WhatsApp to the new number, recorded in `phone_change`; the change
 * happens at `/verify` with type `phone_change`; under `SMS_AUTOCONFIRM` at once, with
 * `phone_changed_notification`). An anonymous user becomes permanent when its new email or
 * phone is confirmed. Under `SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION`, a password
 * change in a session older than 24 hours needs the `nonce` of `GET /reauthenticate`.
 *
 * @param signal Aborts queued password work (the request's deadline).
 * @param log Where a failed password- or phone-changed notification is reported (the request's
 *   logger).
 * @throws {@link ForbiddenError} `not_admin` for `app_metadata`; {@link UnprocessableEntityError}
 *   `validation_failed`, `same_password`, `email_exists`, `phone_exists`,
 *   `user_sso_managed` (an SSO user changing its email, phone or password, or sending a nonce),
 *   `reauthentication_not_valid`, `sms_send_failed`; {@link BadRequestError}
 *   `reauthentication_needed`, the email, phone, channel and PKCE texts; the password policy's
 *   errors; 429 `over_email_send_rate_limit`, `over_sms_send_rate_limit`; 500 when a mail fails
 *   (nothing changed).
 */
export async function updateOwnUser(
  ctx: AppContext,
  auth: { readonly user: User; readonly session: Session | undefined },
  changes: OwnChanges,
  client: RequestContext,
  signal: AbortSignal,
  log?: NotificationLog,
): Promise<UserWithIdentities> {
  const { settings } = ctx
  const { user, session } = auth
  const language = client.acceptLanguage ?? ''
  if (changes.appMetadata) {
    throw new ForbiddenError('not_admin', 'Updating app_metadata requires admin privileges')
  }
  const email = changes.email === '' ? '' : validateEmail(changes.email)
  const newEmail = email !== '' && email !== user.email ? email : ''
  const phone = changes.phone === '' ? '' : validatePhone(changes.phone)
  const newPhone = phone !== '' && phone !== user.phone ? phone : ''
  const channel = newPhone === '' ? 'sms' : validateChannel(settings, changes.channel)
  if (
    user.isSsoUser &&
    (newEmail !== '' ||
      newPhone !== '' ||
      (changes.password !== undefined && changes.password !== '') ||
      changes.nonce !== '')
  ) {
    // The identity provider owns them (upstream `UserUpdate`).
    throw new UnprocessableEntityError(
      'user_sso_managed',
      'Updating email, phone, password of a SSO account only possible via SSO',
    )
  }
  await requireAal2IfVerifiedFactors(ctx.db, auth, {
    password: changes.password !== undefined,
    email: newEmail !== '',
    phone: newPhone !== '',
  })
  const pkce = parsePkceChallenge(changes.codeChallenge, changes.codeChallengeMethod)
  const { redirectTo } = changes
  let encryptedPassword: string | undefined
  if (changes.password !== undefined) {
    const password = changes.password
    if (user.isAnonymous && user.email === '' && user.phone === '') {
      throw new UnprocessableEntityError(
        'validation_failed',
        'Updating password of an anonymous user without an email or phone is not allowed',
      )
    }
    await enforceStrongPassword(ctx, password)
    if (settings.security.updatePasswordRequireReauthentication) {
      const sessionAge = session ? ctx.clock.now() - session.createdAt.getTime() : Infinity
      if (sessionAge > 24 * 3_600_000) {
        if (changes.nonce === '') {
          throw new BadRequestError(
            'reauthentication_needed',
            'Password update requires reauthentication',
          )
        }
        // Checked, consumed (and a wrong one counted) in a transaction of its own before the
        // password work, as upstream's `verifyReauthentication`.
        await consumeReauthenticationNonce(ctx, user.id, changes.nonce)
      }
    }
    if (
      user.encryptedPassword !== '' &&
      (await ctx.passwords.verify(password, user.encryptedPassword, signal))
    ) {
      throw new UnprocessableEntityError(
        'same_password',
        'New password should be different from the old password.',
      )
    }
    encryptedPassword = await ctx.passwords.hash(password, signal)
  }
  const { data } = changes
  /** The number before a phone change made at once (SMS auto-confirm), for the notification. */
  let oldPhone: string | undefined
  const result = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const current = await getUserById(tx, user.id, true)
    const update: UserChanges = {}
    if (data !== undefined) update.userMetadata = mergeMetadata(current.userMetadata, data)
    if (encryptedPassword !== undefined) update.encryptedPassword = encryptedPassword
    let updated = await updateUser(tx, user.id, update, now)
    const actor = auditActor(updated)
    if (encryptedPassword !== undefined) {
      await deleteSessions(tx, user.id, 'except', session?.id)
      await ctx.audit.record(
        tx,
        { id: ctx.random.uuid(), actor, action: 'user_updated_password', ip: client.ip },
        now,
      )
    }
    if (newEmail !== '') {
      await assertEmailFree(tx, newEmail)
      if (updated.isAnonymous && settings.mailer.autoconfirm) {
        // An anonymous user adding an email under auto-confirm signs up: no mail (upstream).
        const change: UserChanges = {}
        await applyEmailChange(ctx, tx, { ...updated, emailChange: newEmail }, change, now)
        updated = await updateUser(tx, user.id, change, now)
      } else {
        updated = await sendEmailChange(ctx, tx, updated, newEmail, redirectTo, now, language, pkce)
      }
    }
    if (newPhone !== '') {
      await assertPhoneFree(tx, newPhone)
      if (settings.sms.autoconfirm) {
        // Under SMS auto-confirm the number changes at once, without a code (upstream).
        const change: UserChanges = {}
        oldPhone = updated.phone
        await applyPhoneChange(ctx, tx, { ...updated, phoneChange: newPhone }, change, now)
        updated = await updateUser(tx, user.id, change, now)
      } else {
        const sent = await sendPhoneOtp(
          ctx,
          tx,
          updated,
          newPhone,
          'phone_change',
          channel,
          now,
          language,
        )
        updated = sent.user
      }
    }
    if (data !== undefined || newEmail !== '' || newPhone !== '') {
      await ctx.audit.record(
        tx,
        { id: ctx.random.uuid(), actor, action: 'user_modified', ip: client.ip },
        now,
      )
    }
    return userWithIdentities(tx, updated)
  })
  if (encryptedPassword !== undefined) {
    await ctx.passwordBackoff.forgetUser(ctx.db, result.user)
    await notifyPasswordChanged(ctx, result.user, log, client.acceptLanguage)
  }
  if (oldPhone !== undefined) {
    await notifyPhoneChanged(ctx, result.user, oldPhone, log, client.acceptLanguage)
  }
  return result
}
