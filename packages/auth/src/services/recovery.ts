/**
 * Password recovery and magic links: both record their token in `users.recovery_token` (so a
 * magic link shares recovery's `SMTP_MAX_FREQUENCY` clock, `recovery_sent_at`) and
 * `one_time_tokens`, and sign the user in at `/verify`. `POST /recover` lives here.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/recover.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/mail.go
 * @module
 */
import type { AppContext, RequestContext } from '../context.js'
import { BadRequestError } from '../errors.js'
import { addAuditLogEntry, auditActor } from '../models/audit-log.js'
import { findUserByEmail, getUserById, type User } from '../models/user.js'
import type { Queryable } from '../storage/db.js'
import {
  deliver,
  enforceMaxFrequency,
  flowMail,
  issueOtp,
  recordTokens,
  type PreparedMail,
} from './mail.js'
import { parsePkceChallenge, startFlowState, type PkceChallenge } from './pkce.js'
import { validateEmail } from './validation.js'

/**
 * Records a new recovery or magic-link token for a user inside `tx` and builds its mail, without
 * sending it. In a PKCE flow the hash gets the `pkce_` prefix and a flow state (`recovery` or
 * `magiclink`) is started.
 *
 * @param now Epoch milliseconds of the transaction.
 */
export async function prepareRecovery(
  ctx: AppContext,
  tx: Queryable,
  user: User,
  kind: 'recovery' | 'magic_link',
  redirectTo: string,
  now: number,
  pkce?: PkceChallenge,
): Promise<PreparedMail> {
  const issued = issueOtp(ctx, user.email, pkce !== undefined)
  const type = kind === 'recovery' ? 'recovery' : 'magiclink'
  if (pkce) await startFlowState(ctx, tx, user.id, pkce, type, now)
  const updated = await recordTokens(
    ctx,
    tx,
    user.id,
    { recoveryToken: issued.hash, recoverySentAt: new Date(now) },
    [{ tokenType: 'recovery_token', hash: issued.hash, relatesTo: user.email }],
    now,
  )
  return flowMail(ctx.settings, updated, kind, type, issued, user.email, redirectTo)
}

/**
 * Sends a recovery or magic-link mail inside `tx`, at most once per `SMTP_MAX_FREQUENCY` (both
 * kinds share `recovery_sent_at`), and records `user_recovery_requested` (as upstream, for both).
 * A failed send throws, rolling the token back.
 *
 * @param now Epoch milliseconds of the transaction.
 * @throws 429 `over_email_send_rate_limit`; 500 "Error sending recovery email" / "Error sending
 *   magic link email".
 */
export async function sendRecovery(
  ctx: AppContext,
  tx: Queryable,
  user: User,
  kind: 'recovery' | 'magic_link',
  redirectTo: string,
  client: RequestContext,
  now: number,
  pkce?: PkceChallenge,
): Promise<User> {
  enforceMaxFrequency(ctx.settings, user.recoverySentAt, now)
  const prepared = await prepareRecovery(ctx, tx, user, kind, redirectTo, now, pkce)
  await addAuditLogEntry(
    tx,
    {
      id: ctx.random.uuid(),
      actor: auditActor(user),
      action: 'user_recovery_requested',
      ip: client.ip,
    },
    now,
  )
  await deliver(
    ctx,
    prepared.message,
    kind === 'recovery' ? 'Error sending recovery email' : 'Error sending magic link email',
    now,
  )
  return prepared.user
}

/** A `POST /recover` request; absent fields are `''`. */
export interface RecoverParams {
  readonly email: string
  readonly codeChallenge: string
  readonly codeChallengeMethod: string
  /** Where the user lands: the request's validated `redirect_to`, else `SITE_URL`. */
  readonly redirectTo: string
}

/**
 * `POST /recover`: mails a recovery link and code to a known address. An unknown address is
 * answered the same way (nothing is sent), so that the answer reveals nothing.
 *
 * @throws {@link BadRequestError} 400 `validation_failed` "Password recovery requires an email"
 *   and the email and PKCE texts; 429 `over_email_send_rate_limit`; 500 when the mail fails.
 */
export async function recoverPassword(
  ctx: AppContext,
  params: RecoverParams,
  client: RequestContext,
): Promise<void> {
  if (params.email === '') {
    throw new BadRequestError('validation_failed', 'Password recovery requires an email')
  }
  const email = validateEmail(params.email)
  const pkce = parsePkceChallenge(params.codeChallenge, params.codeChallengeMethod)
  const { redirectTo } = params
  await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const found = await findUserByEmail(tx, email, client.aud)
    if (!found) return
    const locked = await getUserById(tx, found.id, true)
    await sendRecovery(ctx, tx, locked, 'recovery', redirectTo, client, now, pkce)
  })
}
