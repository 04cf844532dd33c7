/**
 * Device sessions (beyond upstream, issue 28 item 8): the sessions of a user with the device and
 * address each was last used from, listed and ended by the user (`GET`/`DELETE /user/sessions`)
 * or by an admin (`/admin/users/{id}/sessions`). Ending a session deletes it with its refresh
 * tokens, so its next refresh fails; its access tokens live until they expire, as after
 * `/logout`.
 *
 * @module
 */
import type { AppContext, RequestContext } from '../context.js'
import { NotFoundError } from '../errors.js'
import { type AuditActor } from '../models/audit-log.js'
import { deleteSessions, listDeviceSessions, type DeviceSession } from '../models/session.js'
import { getUserById } from '../models/user.js'

/** A listed session, and whether it is the caller's own. */
export interface ListedSession extends DeviceSession {
  readonly current: boolean
}

/**
 * The sessions of `userId`, most recently used first, `current` on `currentSessionId`'s.
 *
 * @throws {@link UserNotFoundError} When the user does not exist.
 */
export async function listSessions(
  ctx: Pick<AppContext, 'db'>,
  userId: string,
  currentSessionId: string | undefined,
): Promise<ListedSession[]> {
  await getUserById(ctx.db, userId)
  const sessions = await listDeviceSessions(ctx.db, userId)
  return sessions.map((s) => ({ ...s, current: s.id === currentSessionId }))
}

/**
 * Ends the session `sessionId` of `userId` and records a `logout` audit entry (traits:
 * `session_id`) by `actor`.
 *
 * @throws {@link NotFoundError} `session_not_found` "Session not found" when the user has no such
 *   session (another user's session is not found either).
 */
export async function endSession(
  ctx: Pick<AppContext, 'db' | 'clock' | 'random' | 'audit'>,
  userId: string,
  sessionId: string,
  actor: AuditActor,
  client: RequestContext,
): Promise<void> {
  await ctx.db.transaction(async (tx) => {
    const ended = await deleteSessions(tx, userId, 'only', sessionId)
    if (ended === 0) throw new NotFoundError('session_not_found', 'Session not found')
    await ctx.audit.record(
      tx,
      {
        id: ctx.random.uuid(),
        actor,
        action: 'logout',
        traits: { session_id: sessionId },
        ip: client.ip,
      },
      ctx.clock.now(),
    )
  })
}
