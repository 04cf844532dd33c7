/**
 * External identities: finding or creating the user of a provider's identity (upstream's
 * account-linking rules), linking one to a signed-in user, unlinking, and the identity
 * notification mails.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/external.go
 * @see https://github.com/supabase/auth/blob/master/internal/models/linking.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/identity.go
 * @module
 */
import type { AppContext, RequestContext } from '../../context.js'
import {
  ForbiddenError,
  InternalServerError,
  NotFoundError,
  UnprocessableEntityError,
} from '../../errors.js'
import { auditActor } from '../../models/audit-log.js'
import {
  deleteIdentity,
  deleteOtherIdentities,
  findIdentitiesByUser,
  findIdentityByProviderId,
  insertIdentity,
  ownIdentityData,
  refreshIdentity,
  type Identity,
} from '../../models/identity.js'
import type { JsonObject } from '../../models/json.js'
import {
  findUserOwningEmail,
  getUserById,
  isBanned,
  updateUser,
  type User,
} from '../../models/user.js'
import type { ProviderEmail, ProviderUserData } from '../../provider/oauth-provider.js'
import type { Queryable } from '../../storage/db.js'
import { sendConfirmation } from './confirmation.js'
import { sendNotification, type NotificationLog } from './notifications.js'
import { afterUserCreated, createUser } from '../users.js'
import { UNKNOWN_CALLER } from '../../hooks/hooks.js'

/**
 * The address an identity signs in with (upstream's choice): the primary verified one, else any
 * verified one, else the primary, else the first; lower-cased.
 */
export function chooseEmail(emails: readonly ProviderEmail[]): ProviderEmail | undefined {
  const chosen =
    emails.find((e) => e.primary && e.verified) ??
    emails.find((e) => e.verified) ??
    emails.find((e) => e.primary) ??
    emails[0]
  return chosen === undefined ? undefined : { ...chosen, email: chosen.email.toLowerCase() }
}

/** `app_metadata` with `provider` added to `providers` (and as `provider` when there is none). */
function withProvider(appMetadata: JsonObject, provider: string): JsonObject {
  const providers = Array.isArray(appMetadata.providers)
    ? appMetadata.providers.filter((p): p is string => typeof p === 'string')
    : []
  return {
    ...appMetadata,
    provider: typeof appMetadata.provider === 'string' ? appMetadata.provider : provider,
    providers: providers.includes(provider) ? providers : [...providers, provider],
  }
}

/** `app_metadata` after an identity of `provider` is gone, given the identities left. */
function withoutProvider(appMetadata: JsonObject, left: readonly Identity[]): JsonObject {
  const providers = [...new Set(left.map((i) => i.provider))]
  const current = appMetadata.provider
  return {
    ...appMetadata,
    provider: typeof current === 'string' && providers.includes(current) ? current : providers[0],
    providers,
  }
}

/** Whether no one has proven the user's email or phone yet (neither is confirmed). */
function neverConfirmed(user: User): boolean {
  return user.emailConfirmedAt === null && user.phoneConfirmedAt === null
}

/**
 * Upstream's `RemoveUnconfirmedIdentities`: the user was never confirmed, so what others gave it
 * is not to be trusted once `keep` (the identity being proven now) takes it over. The password
 * is cleared (not for an `email` or `phone` identity, as upstream: its owner proves the address
 * the password came with), every other identity is deleted, `user_metadata` becomes `keep`'s
 * `identity_data`, and `app_metadata.provider(s)` name `keep`'s provider only. Run in the
 * transaction that links or confirms.
 *
 * @param now Epoch milliseconds.
 * @returns The user after the change.
 * @see https://github.com/supabase/auth/blob/master/internal/models/user.go
 */
async function removeUnconfirmedIdentities(
  tx: Queryable,
  user: User,
  keep: Pick<Identity, 'id' | 'provider' | 'identityData'>,
  now: number,
): Promise<User> {
  await deleteOtherIdentities(tx, user.id, keep.id)
  return updateUser(
    tx,
    user.id,
    {
      ...(keep.provider === 'email' || keep.provider === 'phone' ? {} : { encryptedPassword: '' }),
      userMetadata: keep.identityData,
      appMetadata: { ...user.appMetadata, provider: keep.provider, providers: [keep.provider] },
    },
    now,
  )
}

/**
 * A sign-up of the email or phone of a user that was never confirmed (its owner lost the
 * confirmation, or someone else took the address first): when the user has no identity of that
 * kind yet (it came from a provider sign-in with an unverified address), the `email` or `phone`
 * identity is created and takes the user over ({@link removeUnconfirmedIdentities}), as
 * upstream's sign-up does, so that a provider identity of someone else is not inside the account
 * when the address's owner confirms it. The password is not set (who signs up is not proven).
 *
 * @param value The lower-cased email or the phone digits signed up with.
 * @param data The sign-up's `data` (kept in `identity_data` beside the standard claims).
 * @param now Epoch milliseconds of the transaction.
 * @returns The user, changed or not.
 */
export async function takeOverUnconfirmedBySignUp(
  ctx: Pick<AppContext, 'random'>,
  tx: Queryable,
  user: User,
  provider: 'email' | 'phone',
  value: string,
  data: JsonObject,
  now: number,
): Promise<User> {
  if (!neverConfirmed(user)) return user
  const identities = await findIdentitiesByUser(tx, user.id)
  if (identities.some((identity) => identity.provider === provider)) return user
  const identity = await insertIdentity(
    tx,
    {
      id: ctx.random.uuid(),
      providerId: user.id,
      userId: user.id,
      provider,
      identityData: ownIdentityData(user.id, provider, value, false, data),
    },
    now,
  )
  return removeUnconfirmedIdentities(tx, user, identity, now)
}

/** What the callback asks of {@link signInWithIdentity}. */
export interface IdentitySignIn {
  readonly provider: string
  readonly data: ProviderUserData
  /** The user an identity is being linked to (`/user/identities/authorize`). */
  readonly linkingTargetId?: string | undefined
  /** Where a confirmation mail's link leads (the state's referrer). */
  readonly referrer: string
  /**
   * The identity has no email by nature (a Web3 wallet, upstream's `emailOptional` with
   * `hasEmails` false): without one, a user is found by the identity alone or created without
   * an email, and nothing is confirmed or taken over.
   */
  readonly withoutEmail?: boolean
}

/** The user an external sign-in resolved to, and what happened to get there. */
export interface IdentityOutcome {
  readonly user: User
  /** The identity was linked to an existing user (notification mail). */
  readonly linked: boolean
  /**
   * The user's email is unverified: a confirmation was sent and the caller must answer 422
   * `provider_email_needs_verification` (after the transaction commits).
   */
  readonly needsVerification: boolean
  /** The user was created by this sign-in (`HOOK_AFTER_USER_CREATED` is told once committed). */
  readonly created?: boolean
}

/**
 * Finds or creates the user of a provider's identity inside `tx` (upstream's rules):
 * - linking to a signed-in user: the identity must not belong to someone else (422
 *   `identity_already_exists`);
 * - a known identity: its claims are refreshed, its user signs in (a verified email confirms an
 *   unconfirmed user);
 * - a verified email that an existing user holds: the identity is linked to that user, unless
 *   the provider does not say it verified the address ({@link ProviderEmail.assumed});
 * - otherwise a new user (422 `signup_disabled` under `DISABLE_SIGNUP`; 422 `email_exists` when
 *   the unverified or assumed email is another user's, which is never linked); an unverified
 *   email without `MAILER_AUTOCONFIRM` leaves the user unconfirmed and sends a confirmation.
 *
 * An existing user that was never confirmed (someone signed up with the address and never
 * confirmed it) is taken over by the identity that links to it or signs in to it, before it is
 * confirmed: its password is cleared and its other identities and `user_metadata` replaced
 * (upstream's `RemoveUnconfirmedIdentities`), so that whoever signed up first keeps no way in.
 * Linking to a signed-in user leaves that user as it is.
 *
 * An identity without email ({@link IdentitySignIn.withoutEmail}) signs in the user it belongs
 * to, or creates a user without email (its `identity_data` is its claims alone).
 *
 * @param now Epoch milliseconds of the transaction.
 * @throws {@link InternalServerError} "Error getting user email from external provider" without
 *   an email; {@link UnprocessableEntityError} as listed; {@link ForbiddenError} `user_banned`.
 */
export async function signInWithIdentity(
  ctx: AppContext,
  tx: Queryable,
  request: IdentitySignIn,
  client: RequestContext,
  now: number,
): Promise<IdentityOutcome> {
  const { settings } = ctx
  const { provider, data } = request
  const email = chooseEmail(data.emails)
  if (email === undefined && request.withoutEmail !== true) {
    throw new InternalServerError(
      'unexpected_failure',
      'Error getting user email from external provider',
    )
  }
  const identityData: JsonObject =
    email === undefined
      ? { ...data.claims }
      : {
          ...data.claims,
          email: email.email,
          email_verified: email.verified,
          phone_verified: false,
        }
  const existing = await findIdentityByProviderId(tx, data.id, provider)
  const audit = (user: User, action: 'identity_linked' | 'user_signedup') =>
    ctx.audit.record(
      tx,
      {
        id: ctx.random.uuid(),
        actor: auditActor(user),
        action,
        traits: { provider },
        ip: client.ip,
      },
      now,
    )
  const link = async (target: User): Promise<{ user: User; identity: Identity }> => {
    const identity = await insertIdentity(
      tx,
      { id: ctx.random.uuid(), providerId: data.id, userId: target.id, provider, identityData },
      now,
    )
    const user = await updateUser(
      tx,
      target.id,
      { appMetadata: withProvider(target.appMetadata, provider) },
      now,
    )
    await audit(user, 'identity_linked')
    return { user, identity }
  }

  let user: User
  let linked = false
  let created = false
  /** The identity that now proves an existing, never confirmed user (see above). */
  let provenBy: Pick<Identity, 'id' | 'provider' | 'identityData'> | undefined
  if (request.linkingTargetId !== undefined) {
    if (existing !== undefined && existing.userId !== request.linkingTargetId) {
      throw new UnprocessableEntityError(
        'identity_already_exists',
        'Identity is already linked to another user',
      )
    }
    const target = await getUserById(tx, request.linkingTargetId, true)
    if (existing === undefined) {
      ;({ user } = await link(target))
      linked = true
    } else {
      await refreshIdentity(tx, existing.id, identityData, now)
      user = target
    }
  } else if (existing !== undefined) {
    await refreshIdentity(tx, existing.id, identityData, now)
    user = await getUserById(tx, existing.userId, true)
    provenBy = { ...existing, identityData }
  } else {
    const holder = email === undefined ? undefined : await findUserOwningEmail(tx, email.email)
    if (holder !== undefined && email?.verified === true && email.assumed !== true) {
      const linkedTo = await link(await getUserById(tx, holder.id, true))
      user = linkedTo.user
      provenBy = linkedTo.identity
      linked = true
    } else if (holder !== undefined) {
      throw new UnprocessableEntityError(
        'email_exists',
        'A user with this email address has already been registered',
      )
    } else {
      if (settings.disableSignup) {
        throw new UnprocessableEntityError(
          'signup_disabled',
          'Signups not allowed for this instance',
        )
      }
      ;({ user } = await createUser(
        ctx,
        tx,
        {
          aud: client.aud,
          email: email?.email ?? '',
          emailConfirmed:
            email === undefined ? false : email.verified || settings.mailer.autoconfirm,
          external: { provider, providerId: data.id, identityData },
        },
        now,
      ))
      created = true
      await audit(user, 'user_signedup')
    }
  }
  if (isBanned(user, now)) throw new ForbiddenError('user_banned', 'User is banned')
  if (email === undefined) return { user, linked, needsVerification: false }
  if (provenBy !== undefined && user.email !== '' && neverConfirmed(user)) {
    user = await removeUnconfirmedIdentities(tx, user, provenBy, now)
  }
  if (user.emailConfirmedAt === null && user.email !== '') {
    if (email.verified && email.email === user.email) {
      user = await updateUser(tx, user.id, { emailConfirmedAt: new Date(now) }, now)
    } else if (!settings.mailer.autoconfirm) {
      const { acceptLanguage = '' } = client
      await sendConfirmation(ctx, tx, user, 'confirmation', request.referrer, now, acceptLanguage)
      return { user, linked, needsVerification: true, created }
    }
  }
  return { user, linked, needsVerification: false, created }
}

/**
 * Unlinks one of a user's identities (`DELETE /user/identities/<id>`): never the last one;
 * `app_metadata.providers` follows, and an audit entry is written.
 *
 * @returns The user after the change and the removed identity.
 * @throws {@link NotFoundError} `manual_linking_disabled` when `SECURITY_MANUAL_LINKING_ENABLED`
 *   is off; `identity_not_found` "Identity doesn't exist" for an identity that is not the user's;
 *   {@link UnprocessableEntityError} `single_identity_not_deletable`.
 */
export async function unlinkIdentity(
  ctx: AppContext,
  userId: string,
  identityId: string,
  client: RequestContext,
): Promise<{ user: User; identity: Identity }> {
  if (!ctx.settings.security.manualLinkingEnabled) {
    throw new NotFoundError('manual_linking_disabled', 'Manual linking is disabled')
  }
  return ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const current = await getUserById(tx, userId, true)
    const identities = await findIdentitiesByUser(tx, userId)
    const identity = identities.find((i) => i.id === identityId)
    if (identity === undefined) {
      throw new NotFoundError('identity_not_found', "Identity doesn't exist")
    }
    if (identities.length <= 1) {
      throw new UnprocessableEntityError(
        'single_identity_not_deletable',
        'User must have at least 1 identity after unlinking',
      )
    }
    await deleteIdentity(tx, identity.id, userId)
    const left = identities.filter((i) => i.id !== identity.id)
    const user = await updateUser(
      tx,
      userId,
      { appMetadata: withoutProvider(current.appMetadata, left) },
      now,
    )
    await ctx.audit.record(
      tx,
      {
        id: ctx.random.uuid(),
        actor: auditActor(user),
        action: 'identity_unlinked',
        traits: { provider: identity.provider, identity_id: identity.id },
        ip: client.ip,
      },
      now,
    )
    return { user, identity }
  })
}

/**
 * What follows a committed {@link signInWithIdentity}, for every external sign-in (`/callback`,
 * the `id_token` grant): an unverified email ends the sign-in with 422
 * `provider_email_needs_verification` (its confirmation was sent), and a new link tells the user
 * by mail (`identity_linked_notification`, when enabled).
 *
 * With `HOOK_AFTER_USER_CREATED`, tells the hook of a user this sign-in created first.
 *
 * @throws {@link UnprocessableEntityError} `provider_email_needs_verification`; the
 *   after-user-created hook's failure.
 */
export async function finishIdentitySignIn(
  ctx: AppContext,
  outcome: IdentityOutcome,
  provider: string,
  client: RequestContext,
  log: NotificationLog,
): Promise<void> {
  if (outcome.created === true) await afterUserCreated(ctx, outcome.user, UNKNOWN_CALLER)
  if (outcome.needsVerification) {
    throw new UnprocessableEntityError(
      'provider_email_needs_verification',
      `Unverified email with ${provider}. A confirmation email has been sent to your ${provider} email`,
    )
  }
  if (outcome.linked) {
    const values = { provider, acceptLanguage: client.acceptLanguage ?? '' }
    await sendNotification(ctx, 'identity_linked_notification', outcome.user, values, log)
  }
}
