/**
 * The kinds of job of the mail queue and what runs each (see `services/shared/mail-queue.ts`).
 *
 * @module
 */
import type { AppContext } from '../../context.js'
import { runMagicLinkJob, type MagicLinkJob } from '../magic-link.js'
import { sendQueuedMail, type MailJob } from './mail.js'
import type { JobHandler } from './mail-queue.js'
import { runRecoverJob, type RecoverJob } from '../recovery.js'

/**
 * The handlers of the app's jobs: `recover` (a `POST /recover` request), `magic_link` (an email
 * `/otp` or `/magiclink` request), both run in a transaction with their job's removal, and
 * `mail` (one message to send, then removed). Payloads are what the services queued.
 */
export function mailJobHandlers(ctx: AppContext): Readonly<Record<string, JobHandler>> {
  return {
    recover: {
      inTransaction: true,
      run: (tx, payload, now) => runRecoverJob(ctx, tx, payload as RecoverJob, now),
    },
    magic_link: {
      inTransaction: true,
      run: (tx, payload, now) => runMagicLinkJob(ctx, tx, payload as MagicLinkJob, now),
    },
    mail: {
      inTransaction: false,
      run: (payload, now) => sendQueuedMail(ctx, payload as MailJob, now),
    },
  }
}
