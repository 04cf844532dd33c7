/**
 * Invitations (`POST /invite`).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/invite.go
 * @module
 */
import type { AppContext, RequestContext } from '../context.js'
import { UnprocessableEntityError } from '../errors.js'
import { type AuditActor } from '../models/audit-log.js'
import type { JsonObject } from '../models/json.js'
import { findUserOwningEmail } from '../models/user.js'
import { sendConfirmation } from './shared/confirmation.js'
import {
  afterUserCreated,
  createUser,
  userWithIdentities,
  type UserWithIdentities,
} from './users.js'
import { validateEmail } from './shared/validation.js'

/** An invitation: whom, with what `user_metadata`, and where the link leads. */
export interface Invitation {
  /** The address (validated here). */
  readonly email: string
  readonly data: JsonObject
  /** Where the user lands: the request's validated `redirect_to`, else `SITE_URL`. */
  readonly redirectTo: string
}

/**
 * Invites a user: creates a password-less user with `invited_at` (or takes the unconfirmed one of
 * that email in the request's audience) and sends it an invite.
 *
 * @param actor The admin token's audit actor.
 * @throws {@link UnprocessableEntityError} `email_exists` when the email belongs to a confirmed
 *   user, or to one of another audience (emails are unique across audiences).
 */
export async function inviteUser(
  ctx: AppContext,
  invitation: Invitation,
  actor: AuditActor,
  client: RequestContext,
): Promise<UserWithIdentities> {
  const email = validateEmail(invitation.email)
  const { redirectTo } = invitation
  const invited = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const existing = await findUserOwningEmail(tx, email)
    if (existing && (existing.emailConfirmedAt !== null || existing.aud !== client.aud)) {
      throw new UnprocessableEntityError(
        'email_exists',
        'A user with this email address has already been registered',
      )
    }
    const user =
      existing ??
      (
        await createUser(
          ctx,
          tx,
          { aud: client.aud, email, data: invitation.data, invited: true },
          now,
        )
      ).user
    await ctx.audit.record(
      tx,
      {
        id: ctx.random.uuid(),
        actor,
        action: 'user_invited',
        traits: { user_id: user.id, user_email: email },
        ip: client.ip,
      },
      now,
    )
    const language = client.acceptLanguage ?? ''
    const sent = await sendConfirmation(ctx, tx, user, 'invite', redirectTo, now, language)
    return { ...(await userWithIdentities(tx, sent)), created: existing === undefined }
  })
  if (invited.created) await afterUserCreated(ctx, invited.user, client)
  return { user: invited.user, identities: invited.identities }
}
