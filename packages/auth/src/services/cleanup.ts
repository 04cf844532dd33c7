/**
 * The periodic clean-up of rows nobody can use any more (upstream deletes them in its
 * `models/cleanup.go`; without it they pile up for ever): PKCE flow states once no link or
 * callback can reach them, MFA challenges once they have expired, and sessions a day after
 * `SESSIONS_TIMEBOX` or `SESSIONS_INACTIVITY_TIMEOUT` ended them, and OAuth authorization requests
 * (and their codes) a day after they expired (upstream keeps these for ever). A background job of each
 * instance, every `DB_CLEANUP_INTERVAL`, in bounded batches.
 *
 * @module
 */
import type { Logger } from 'pino'
import type { Clock } from '../clock.js'
import type { Settings } from '../conf/settings.js'
import {
  deleteChallengesCreatedBefore,
  deleteFlowStatesCreatedBefore,
  deleteOAuthAuthorizationsExpiredBefore,
  deleteSessionsCreatedBefore,
  deleteSessionsInactiveSince,
  deleteWebauthnChallengesExpiredBefore,
} from '../models/expired-rows.js'
import type { Queryable } from '../storage/db.js'

/** What one clean-up deleted. */
export interface CleanupResult {
  readonly flowStates: number
  readonly mfaChallenges: number
  /** Passkey and WebAuthn challenges past their `expires_at`. */
  readonly webauthnChallenges: number
  /** Sessions ended by `SESSIONS_TIMEBOX` or `SESSIONS_INACTIVITY_TIMEOUT` more than a day ago. */
  readonly sessions: number
  /** OAuth authorization requests (`oauth_authorizations`) expired more than a day ago. */
  readonly oauthAuthorizations: number
}

/** How long an ended session is kept before the clean-up deletes it (upstream's 24 hours). */
const ENDED_SESSION_GRACE_MS = 24 * 3_600_000

/**
 * How long an expired OAuth authorization request is kept: a code presented again within it
 * still ends the session it was exchanged for (RFC 6749 §4.1.2); later it is merely unknown.
 */
const EXPIRED_AUTHORIZATION_GRACE_MS = 24 * 3_600_000

/** Options of {@link CleanupJob}. */
export interface CleanupJobOptions {
  readonly db: Queryable
  readonly clock: Clock
  /**
   * `MAILER_OTP_EXP`, `EXTERNAL_FLOW_STATE_EXPIRY_DURATION`, `MFA_CHALLENGE_EXPIRY_DURATION`,
   * `SESSIONS_TIMEBOX`, `SESSIONS_INACTIVITY_TIMEOUT`.
   */
  readonly settings: Pick<Settings, 'mailer' | 'external' | 'mfa' | 'sessions'>
  /** Milliseconds between two runs (`DB_CLEANUP_INTERVAL`); 0: never on its own. */
  readonly intervalMs: number
  readonly logger?: Logger | undefined
  /** Rows deleted by one statement. @default 500 */
  readonly batchSize?: number
  /** Statements per table and run; the rest waits for the next run. @default 20 */
  readonly maxBatchesPerRun?: number
}

/**
 * The clean-up job. A flow state is deleted once `MAILER_OTP_EXP` (the longest a mail link that
 * starts it stays valid) plus `EXTERNAL_FLOW_STATE_EXPIRY_DURATION` (the longest its code is then
 * valid) have passed since it was created, so a flow still in use is never touched; an MFA
 * challenge once `MFA_CHALLENGE_EXPIRY_DURATION` has passed (it can no longer be verified); a
 * session 24 hours after `SESSIONS_TIMEBOX` or `SESSIONS_INACTIVITY_TIMEOUT` ended it (upstream's
 * margin), when they are set; an OAuth authorization request 24 hours after its `expires_at`.
 * Each run deletes at most `batchSize × maxBatchesPerRun` rows per table, a batch per statement.
 */
export class CleanupJob {
  readonly #options: CleanupJobOptions
  #timer: NodeJS.Timeout | undefined
  #running: Promise<CleanupResult> | undefined

  constructor(options: CleanupJobOptions) {
    this.#options = options
  }

  /** Starts the periodic runs (none when the interval is 0). */
  start(): void {
    if (this.#timer || this.#options.intervalMs <= 0) return
    this.#timer = setInterval(() => {
      this.runOnce().catch((error: unknown) => {
        this.#options.logger?.warn({ component: 'cleanup', err: error }, 'clean-up failed')
      })
    }, this.#options.intervalMs)
    this.#timer.unref()
  }

  /**
   * Runs one clean-up now (a run in progress is shared), with the clock's time.
   *
   * @throws The database's error.
   */
  runOnce(): Promise<CleanupResult> {
    this.#running ??= this.#run().finally(() => {
      this.#running = undefined
    })
    return this.#running
  }

  /** Stops the periodic runs and waits for one in progress. */
  async close(): Promise<void> {
    clearInterval(this.#timer)
    this.#timer = undefined
    await this.#running?.catch(() => undefined)
  }

  async #run(): Promise<CleanupResult> {
    const { db, clock, settings, logger } = this.#options
    const now = clock.now()
    const flowStates = await this.#batches((limit) =>
      deleteFlowStatesCreatedBefore(
        db,
        now - settings.mailer.otpExpMs - settings.external.flowStateExpiryMs,
        limit,
      ),
    )
    const mfaChallenges = await this.#batches((limit) =>
      deleteChallengesCreatedBefore(db, now - settings.mfa.challengeExpiryMs, limit),
    )
    const webauthnChallenges = await this.#batches((limit) =>
      deleteWebauthnChallengesExpiredBefore(db, now, limit),
    )
    const { timeboxMs, inactivityTimeoutMs } = settings.sessions
    let sessions = 0
    if (timeboxMs > 0) {
      const before = now - ENDED_SESSION_GRACE_MS - timeboxMs
      sessions += await this.#batches((limit) => deleteSessionsCreatedBefore(db, before, limit))
    }
    if (inactivityTimeoutMs > 0) {
      const before = now - ENDED_SESSION_GRACE_MS - inactivityTimeoutMs
      sessions += await this.#batches((limit) => deleteSessionsInactiveSince(db, before, limit))
    }
    const oauthAuthorizations = await this.#batches((limit) =>
      deleteOAuthAuthorizationsExpiredBefore(db, now - EXPIRED_AUTHORIZATION_GRACE_MS, limit),
    )
    if (flowStates + mfaChallenges + webauthnChallenges + sessions + oauthAuthorizations > 0) {
      logger?.info(
        {
          component: 'cleanup',
          flow_states: flowStates,
          mfa_challenges: mfaChallenges,
          webauthn_challenges: webauthnChallenges,
          sessions,
          oauth_authorizations: oauthAuthorizations,
        },
        'deleted expired rows',
      )
    }
    return { flowStates, mfaChallenges, webauthnChallenges, sessions, oauthAuthorizations }
  }

  /** Runs `deleteBatch` until a batch is not full or the run's batches are spent. */
  async #batches(deleteBatch: (limit: number) => Promise<number>): Promise<number> {
    const { batchSize = 500, maxBatchesPerRun = 20 } = this.#options
    let total = 0
    for (let batch = 0; batch < maxBatchesPerRun; batch++) {
      const deleted = await deleteBatch(batchSize)
      total += deleted
      if (deleted < batchSize) break
    }
    return total
  }
}
