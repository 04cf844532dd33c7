/**
 * The audit log read by admins (`GET /admin/audit`, upstream `adminAuditLog`).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/audit.go
 * @module
 */
import type { AppContext } from '../context.js'
import { BadRequestError } from '../errors.js'
import {
  AUDIT_QUERY_SCOPES,
  listAuditLogEntries,
  type AuditLogQuery,
  type StoredAuditEntry,
} from '../models/audit-log.js'

/**
 * A page of the audit log, newest first, and the number of entries matching.
 *
 * @param query `''` for every entry, or `<scope>:<text>` with a scope of upstream's: `author`
 *   (the actor's email or phone, or name), `action` (`login`, `user_signedup`, …) or `type`
 *   (`account`, `team`, `user`, `token`, `factor`); the text is matched as a substring, in any
 *   case.
 * @param page 1-based.
 * @throws {@link BadRequestError} `validation_failed` "Invalid query scope: <query>".
 */
export async function auditLogPage(
  ctx: Pick<AppContext, 'db'>,
  query: string,
  page: number,
  perPage: number,
): Promise<{ entries: StoredAuditEntry[]; total: number }> {
  let search: AuditLogQuery['search']
  if (query !== '') {
    const colon = query.indexOf(':')
    const scope = colon === -1 ? query : query.slice(0, colon)
    if (colon === -1 || !Object.hasOwn(AUDIT_QUERY_SCOPES, scope)) {
      throw new BadRequestError('validation_failed', `Invalid query scope: ${query}`)
    }
    search = { scope: scope as keyof typeof AUDIT_QUERY_SCOPES, text: query.slice(colon + 1) }
  }
  return listAuditLogEntries(ctx.db, { ...(search === undefined ? {} : { search }), page, perPage })
}
