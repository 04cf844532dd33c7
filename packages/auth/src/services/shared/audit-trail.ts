/**
 * Where audit events go: every event is logged (`audit_event`, as upstream logs each one), and
 * written to `audit_log_entries` in the transaction of the change it records unless
 * `AUDIT_LOG_DISABLE_POSTGRES` is on (then the logs are the only record, and `GET /admin/audit`
 * lists nothing new).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/models/audit_log_entry.go
 * @module
 */
import { addAuditLogEntry, auditPayload, type AuditEntry } from '../../models/audit-log.js'
import type { Queryable } from '../../storage/db.js'

/** Where audit events are logged: a pino logger (its `info`). */
export interface AuditLogger {
  info(details: Record<string, unknown>, message: string): void
  /** Whether a level logs (pino's); when it says `info` does not, no event is built. */
  isLevelEnabled?(level: 'info'): boolean
}

/** Options of {@link AuditTrail}. */
export interface AuditTrailOptions {
  /** Whether events are written to `audit_log_entries` (not `AUDIT_LOG_DISABLE_POSTGRES`). */
  readonly postgres: boolean
  /** Where each event is logged. @default nowhere */
  readonly logger?: AuditLogger | undefined
}

/** Records audit events: see the module's notes. */
export class AuditTrail {
  /** Whether events are written to `audit_log_entries`; statements that write their own read it. */
  readonly postgres: boolean
  readonly #logger: AuditLogger | undefined

  constructor(options: AuditTrailOptions) {
    this.postgres = options.postgres
    this.#logger = options.logger
  }

  /**
   * Records an event inside `tx`, the transaction of the change it records: logs it, then writes
   * it unless `AUDIT_LOG_DISABLE_POSTGRES` is on.
   *
   * @param now Epoch milliseconds.
   */
  async record(tx: Queryable, entry: AuditEntry, now: number): Promise<void> {
    this.log(entry, now)
    if (this.postgres) await addAuditLogEntry(tx, entry, now)
  }

  /**
   * Logs an event (info, `audit_event`, its payload under `auth_audit_event` with
   * `audit_log_id`, `ip_address` and `created_at`, as upstream): for events a statement writes
   * itself (the refresh rotation), and by {@link AuditTrail.record}.
   *
   * @param now Epoch milliseconds.
   */
  log(entry: AuditEntry, now: number): void {
    const logger = this.#logger
    if (logger === undefined || logger.isLevelEnabled?.('info') === false) return
    logger.info(
      {
        auth_audit_event: {
          ...auditPayload(entry),
          audit_log_id: entry.id,
          ip_address: entry.ip.slice(0, 64),
          created_at: new Date(now).toISOString(),
        },
      },
      'audit_event',
    )
  }
}
