/**
 * The `email` or `phone` identity of a user whose address or number changed (an email or phone
 * change, or an anonymous user converted by one), as upstream's change verifications keep them.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/verify.go
 * @module
 */
import type { AppContext } from '../../context.js'
import {
  findIdentitiesByUser,
  insertIdentity,
  ownIdentityData,
  updateIdentityData,
} from '../../models/identity.js'
import { mergeMetadata, type User, type UserChanges } from '../../models/user.js'
import type { Queryable } from '../../storage/db.js'

/**
 * Points the user's `provider` identity at the confirmed `value`, or, for a user without one
 * (an anonymous user, a phone user adding an email, an email user adding a phone), creates it
 * (`identity_data` `{sub, email|phone, email_verified, phone_verified}`, the new one verified)
 * and adds `provider` to `app_metadata.providers` (written through `update`).
 *
 * @param value The lower-cased email or the phone digits.
 * @param now Epoch milliseconds of the transaction.
 */
export async function setOwnIdentity(
  ctx: Pick<AppContext, 'random'>,
  tx: Queryable,
  user: User,
  provider: 'email' | 'phone',
  value: string,
  update: UserChanges,
  now: number,
): Promise<void> {
  const identities = await findIdentitiesByUser(tx, user.id)
  if (identities.some((identity) => identity.provider === provider)) {
    await updateIdentityData(
      tx,
      user.id,
      provider,
      provider === 'email' ? { email: value } : { phone: value, phone_verified: true },
      now,
    )
    return
  }
  await insertIdentity(
    tx,
    {
      id: ctx.random.uuid(),
      providerId: user.id,
      userId: user.id,
      provider,
      identityData: ownIdentityData(user.id, provider, value, true),
    },
    now,
  )
  const listed: unknown = (update.appMetadata ?? user.appMetadata).providers
  const providers = Array.isArray(listed)
    ? listed.filter((p): p is string => typeof p === 'string' && p !== provider)
    : []
  const current = update.appMetadata ?? user.appMetadata
  update.appMetadata = mergeMetadata(current, {
    provider: typeof current.provider === 'string' ? current.provider : provider,
    providers: [...providers, provider],
  })
}
