/**
 * The durable mail queue: work that requests hand off so that their answers do not depend on
 * it (a recovery or magic-link request to run for an address, a mail to send), stored in
 * `mail_queue` in the request's transaction and run by a worker in every instance.
 *
 * Delivery is at least once. A job is committed with the request (a crash after the commit
 * loses nothing); each run claims it for a lease (another instance takes it if this one dies);
 * a failed run is retried with exponential back-off; a job is dropped, and logged, only once it
 * expires (`MAILER_OTP_EXP` after it was queued, when its link would be dead anyway). A crash
 * after the SMTP server accepted a mail and before the job was deleted sends it twice.
 *
 * @module
 */
import { AsyncResource } from 'node:async_hooks'
import type { Logger } from 'pino'
import type { Clock } from '../../clock.js'
import {
  claimDueJobs,
  deleteQueuedJob,
  insertQueuedJob,
  rescheduleQueuedJob,
  type QueuedJob,
} from '../../models/mail-queue.js'
import type { Random } from '../../random.js'
import type { Db, Queryable } from '../../storage/db.js'

/** What runs a kind of job. */
export type JobHandler =
  | {
      /** Runs in a transaction that also deletes the job: its writes and its removal are one. */
      readonly inTransaction: true
      run(tx: Queryable, payload: unknown, now: number): Promise<void>
    }
  | {
      /** Runs outside any transaction (a send), then the job is deleted. */
      readonly inTransaction: false
      run(payload: unknown, now: number): Promise<void>
    }

/**
 * Thrown by a handler whose job cannot run yet, for a reason that is not a failure (a send cap
 * is used up): the job is due again after `retryAfterMs`, logged at debug.
 */
export class DeferJob extends Error {
  /** Milliseconds until the job is tried again. */
  readonly retryAfterMs: number

  constructor(retryAfterMs: number, reason: string) {
    super(reason)
    this.name = 'DeferJob'
    this.retryAfterMs = retryAfterMs
  }
}

/** How the services hand work to the queue (the `mailQueue` of the app context). */
export interface MailOutbox {
  /**
   * Adds a job inside `tx`: it exists exactly when `tx` commits. Call {@link MailOutbox.wake}
   * after the commit (the worker's own jobs need not: it goes on until nothing is due).
   *
   * @param payload JSON (never logged: it may hold a one-time code).
   * @param now Epoch milliseconds of the transaction.
   */
  enqueue(tx: Queryable, job: string, payload: unknown, now: number): Promise<void>
  /**
   * Adds a job on its own, in `db` (a request's: its deadline applies), and wakes the worker:
   * what a request does before it answers.
   */
  submit(db: Queryable, job: string, payload: unknown): Promise<void>
  /** Tells the worker that jobs are due (it runs them soon, off the caller's path). */
  wake(): void
}

/** Options of {@link MailQueue}. */
export interface MailQueueOptions {
  readonly db: Db
  readonly clock: Clock
  readonly random: Random
  /** The handler of a kind of job (`undefined`: an unknown kind, dropped and logged). */
  readonly handlerFor: (job: string) => JobHandler | undefined
  /** How long a job may wait before it is dropped, in milliseconds (`MAILER_OTP_EXP`). */
  readonly lifetimeMs: number
  /**
   * Milliseconds between two looks for due jobs (retries, and jobs of other instances or of a
   * previous run): `MAILER_QUEUE_POLL_INTERVAL`.
   */
  readonly pollIntervalMs: number
  /** Where failures and dropped jobs are logged (never a payload). */
  readonly logger?: Logger | undefined
  /** Jobs claimed, and run concurrently, at once. @default 8 */
  readonly batchSize?: number
  /** How long a claimed job is held before another worker may take it, ms. @default 120000 */
  readonly leaseMs?: number
  /** First retry delay, doubled per attempt, in milliseconds. @default 5000 */
  readonly retryBaseMs?: number
  /** Longest retry delay, in milliseconds. @default 600000 */
  readonly retryMaxMs?: number
  /** Longest {@link MailQueue.close} waits for the last due jobs, in milliseconds. @default 10000 */
  readonly drainTimeoutMs?: number
}

/**
 * The worker of the mail queue ({@link MailOutbox} for the services). {@link MailQueue.start}
 * looks for due jobs every `pollIntervalMs`; {@link MailQueue.wake} runs them at once, off the
 * caller's path. Errors never escape: a database that cannot be reached is logged and tried at
 * the next wake or poll.
 */
export class MailQueue implements MailOutbox {
  readonly #options: MailQueueOptions
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined
  #again = false
  #woken = false
  #closed = false
  /**
   * Runs a function in the asynchronous context the queue was made in (the server's start), not
   * in that of the request that woke it: the worker's statements are not the request's, and its
   * trace span (`TRACING_ENABLED`) must not adopt them. (The request's deadline never reaches
   * them: it only guards the request's own `ctx.db`.)
   */
  readonly #detached: (fn: () => void) => void

  constructor(options: MailQueueOptions) {
    this.#options = options
    this.#detached = AsyncResource.bind((fn: () => void) => {
      fn()
    })
  }

  async enqueue(tx: Queryable, job: string, payload: unknown, now: number): Promise<void> {
    await insertQueuedJob(tx, {
      id: this.#options.random.uuid(),
      job,
      payload,
      now,
      expiresAt: now + this.#options.lifetimeMs,
    })
  }

  async submit(db: Queryable, job: string, payload: unknown): Promise<void> {
    await this.enqueue(db, job, payload, this.#options.clock.now())
    this.wake()
  }

  wake(): void {
    if (this.#closed || this.#woken) return
    this.#woken = true
    this.#detached(() => {
      setImmediate(() => {
        this.#woken = false
        void this.flush()
      })
    })
  }

  /** Starts polling (and runs what is due now: jobs left by a previous run). */
  start(): void {
    if (this.#closed || this.#timer) return
    this.#timer = setInterval(() => void this.flush(), this.#options.pollIntervalMs)
    this.#timer.unref()
    this.wake()
  }

  /**
   * Runs every due job, and those they queue, until none is due. Concurrent calls share one
   * run (which goes on once more when called during it). Never rejects.
   */
  flush(): Promise<void> {
    if (this.#running) {
      this.#again = true
      return this.#running
    }
    this.#running = (async () => {
      try {
        let again = true
        while (again) {
          this.#again = false
          await this.#drain()
          again = this.#calledAgain()
        }
      } catch (error) {
        this.#options.logger?.warn(
          { component: 'mail_queue', err: error },
          'mail queue: cannot claim jobs; trying again at the next poll',
        )
      } finally {
        this.#running = undefined
      }
    })()
    return this.#running
  }

  /**
   * Stops polling and waking, then runs the jobs due now, waiting at most `drainTimeoutMs`; what
   * is left stays queued for another instance or the next start.
   */
  async close(): Promise<void> {
    this.#closed = true
    clearInterval(this.#timer)
    this.#timer = undefined
    let timeout: NodeJS.Timeout | undefined
    const deadline = new Promise<void>((resolve) => {
      timeout = setTimeout(resolve, this.#options.drainTimeoutMs ?? 10_000)
    })
    try {
      await Promise.race([this.flush(), deadline])
    } finally {
      clearTimeout(timeout)
    }
  }

  /** Whether {@link MailQueue.flush} was called during the current run. */
  #calledAgain(): boolean {
    return this.#again
  }

  async #drain(): Promise<void> {
    const { db, clock, batchSize = 8, leaseMs = 120_000 } = this.#options
    for (;;) {
      const jobs = await claimDueJobs(db, clock.now(), batchSize, leaseMs)
      if (jobs.length === 0) return
      // One address's jobs run one after another, in the order they were queued, so that the
      // second sees what the first sent (SMTP_MAX_FREQUENCY); different addresses in parallel.
      await Promise.all(
        [...byAddress(jobs).values()].map(async (queue) => {
          for (const job of queue) await this.#run(job)
        }),
      )
    }
  }

  async #run(job: QueuedJob): Promise<void> {
    const { db, clock, logger } = this.#options
    const now = clock.now()
    const fields = { component: 'mail_queue', job_id: job.id, job: job.job, attempts: job.attempts }
    try {
      const handler = this.#options.handlerFor(job.job)
      if (now >= job.expiresAt || !handler) {
        await deleteQueuedJob(db, job.id)
        logger?.error(
          fields,
          handler
            ? 'mail queue: job expired before it could run; dropped'
            : 'mail queue: unknown kind of job; dropped',
        )
        return
      }
      if (handler.inTransaction) {
        await db.transaction(async (tx) => {
          await handler.run(tx, job.payload, now)
          await deleteQueuedJob(tx, job.id)
        })
      } else {
        await handler.run(job.payload, now)
        await deleteQueuedJob(db, job.id)
      }
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error)
      const { retryBaseMs = 5_000, retryMaxMs = 600_000 } = this.#options
      const delay =
        error instanceof DeferJob
          ? error.retryAfterMs
          : Math.min(retryMaxMs, retryBaseMs * 2 ** Math.min(30, job.attempts - 1))
      try {
        await rescheduleQueuedJob(db, job.id, now + delay, reason)
      } catch {
        // The lease makes it due again; the failure below is what matters.
      }
      if (error instanceof DeferJob) {
        logger?.debug({ ...fields, retry_in_ms: delay, reason }, 'mail queue: job deferred')
      } else {
        logger?.warn(
          { ...fields, retry_in_ms: delay, err: reason },
          'mail queue: job failed; it will be retried',
        )
      }
    }
  }
}

/**
 * The address a job mails (`email` of a queued request, `message.to` of a queued mail),
 * lower-cased; undefined for a payload without one.
 */
function addressOf(payload: unknown): string | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined
  const { email, message } = payload as { email?: unknown; message?: { to?: unknown } }
  const address = typeof email === 'string' ? email : message?.to
  return typeof address === 'string' ? address.toLowerCase() : undefined
}

/** Claimed jobs by the address they mail (a job without one alone), each in queueing order. */
function byAddress(jobs: readonly QueuedJob[]): Map<string, QueuedJob[]> {
  const groups = new Map<string, QueuedJob[]>()
  const ordered = [...jobs].sort((a, b) => a.createdAt - b.createdAt)
  for (const job of ordered) {
    const key = addressOf(job.payload) ?? `job:${job.id}`
    const group = groups.get(key)
    if (group === undefined) groups.set(key, [job])
    else group.push(job)
  }
  return groups
}
