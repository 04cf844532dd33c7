/**
 * Ending sessions (`POST /logout`).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/logout.go
 * @module
 */
import type { AppContext } from '../context.js'
import { auditActor } from '../models/audit-log.js'
import { deleteSessions, type Session } from '../models/session.js'
import type { User } from '../models/user.js'

/** Which sessions a logout ends: all, the current one, or all but the current one. */
export type LogoutScope = 'global' | 'local' | 'others'

/**
 * Logs a user out: deletes its sessions of `scope` (their refresh tokens go with them) and
 * records a `logout` audit entry. Access tokens stay valid until they expire.
 *
 * @param session The session of the token, when it names one (`local` and `others` need it;
 *   without one, `others` ends every session and `local` none).
 */
export async function logout(
  ctx: AppContext,
  auth: { readonly user: User; readonly session: Session | undefined },
  scope: LogoutScope,
  ip: string,
): Promise<void> {
  const { user, session } = auth
  await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    await ctx.audit.record(
      tx,
      { id: ctx.random.uuid(), actor: auditActor(user), action: 'logout', ip },
      now,
    )
    if (scope === 'global') await deleteSessions(tx, user.id, 'all')
    else if (session) {
      await deleteSessions(tx, user.id, scope === 'local' ? 'only' : 'except', session.id)
    } else if (scope === 'others') await deleteSessions(tx, user.id, 'all')
  })
}
